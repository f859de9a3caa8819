//! `@path` / `@@id` expansion: inlining, images, limits and project containment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::PathBuf;

use braincode_config::{
    ExpandedPrompt, Home, JournalWriter, ReferenceContext, ReferenceOutcome, Settings,
    expand_references,
};
use braincode_protocol::SessionId;

use crate::common;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    home: Home,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let outside = dir.path().join("outside");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::write(root.join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
    fs::write(outside.join("secret.txt"), "TOP SECRET").unwrap();
    let home = Home::at(dir.path().join("home"));
    Fixture {
        root,
        outside,
        home,
        _dir: dir,
    }
}

fn expand(fx: &Fixture, settings: &Settings, prompt: &str) -> ExpandedPrompt {
    expand_references(
        prompt,
        &ReferenceContext {
            project_root: &fx.root,
            home: &fx.home,
            settings,
        },
    )
}

fn outcome(expanded: &ExpandedPrompt, i: usize) -> &ReferenceOutcome {
    &expanded.references[i].outcome
}

#[test]
fn prompt_without_references_is_unchanged() {
    let fx = fixture();
    let expanded = expand(&fx, &Settings::default(), "just text, mail me@x.com");
    assert_eq!(expanded.text, "just text, mail me@x.com");
    assert!(expanded.references.is_empty());
}

#[test]
fn text_file_is_inlined_in_a_labelled_fence() {
    let fx = fixture();
    let expanded = expand(&fx, &Settings::default(), "explain @src/lib.rs, please");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);
    let text = &expanded.text;
    assert!(
        text.starts_with("explain @src/lib.rs, please\n\nReferenced attachments:\n"),
        "{text}"
    );
    assert!(
        text.contains("```rs\npub fn answer() -> u32 { 42 }\n```"),
        "{text}"
    );
}

#[test]
fn missing_large_binary_and_directory_files_are_explained() {
    let fx = fixture();
    fs::write(fx.root.join("big.txt"), "a".repeat(65_537)).unwrap();
    fs::write(fx.root.join("exact.txt"), "a".repeat(65_536)).unwrap();
    fs::write(fx.root.join("bin.dat"), b"abc\0def").unwrap();
    let expanded = expand(
        &fx,
        &Settings::default(),
        "@nope.rs @big.txt @exact.txt @bin.dat @src",
    );
    let reasons: Vec<String> = expanded
        .references
        .iter()
        .map(|r| match &r.outcome {
            ReferenceOutcome::Failed(reason) => reason.clone(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(reasons[0], "file not found");
    assert_eq!(reasons[1], "file is 65537 bytes (limit 65536)");
    assert_eq!(reasons[2], "Inlined");
    assert!(reasons[3].contains("binary"), "{}", reasons[3]);
    assert!(reasons[4].contains("directory"), "{}", reasons[4]);
    assert!(
        expanded
            .text
            .contains("@nope.rs: could not be inlined: file not found")
    );
}

#[test]
fn images_are_attached_or_mentioned() {
    let fx = fixture();
    fs::write(fx.root.join("shot.PNG"), b"\x89PNG\r\n\x1a\nfake").unwrap();
    fs::write(fx.root.join("logo.svg"), "<svg/>").unwrap();
    let expanded = expand(&fx, &Settings::default(), "look @shot.PNG and @logo.svg");
    assert_eq!(expanded.images.len(), 1);
    assert_eq!(expanded.images[0].mime_type, "image/png");
    assert_eq!(expanded.images[0].data_base64, "iVBORw0KGgpmYWtl");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Attached);
    assert_eq!(outcome(&expanded, 1), &ReferenceOutcome::Attached);
    assert!(expanded.text.contains("attached to this message"));
    assert!(expanded.text.contains("filesystem reference"));
    assert!(!expanded.text.contains("<svg/>"));
}

fn assert_refused(expanded: &ExpandedPrompt) {
    match outcome(expanded, 0) {
        ReferenceOutcome::Failed(reason) => {
            assert!(reason.contains("outside the project root"), "{reason}");
            assert!(
                reason.contains("settings.references.allowedPaths"),
                "{reason}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!expanded.text.contains("TOP SECRET"));
}

#[test]
fn paths_outside_the_project_are_refused() {
    let fx = fixture();
    let settings = Settings::default();
    // `..`
    assert_refused(&expand(&fx, &settings, "@../outside/secret.txt"));
    // absolute
    let absolute = fx.outside.join("secret.txt");
    assert_refused(&expand(&fx, &settings, &format!("@{}", absolute.display())));
    // `..` that leaves and re-enters a sibling
    assert_refused(&expand(&fx, &settings, "@src/../../outside/secret.txt"));
    // a symlink inside the project pointing out of it
    std::os::unix::fs::symlink(&absolute, fx.root.join("link.txt")).unwrap();
    assert_refused(&expand(&fx, &settings, "@link.txt"));
    // a symlinked directory
    std::os::unix::fs::symlink(&fx.outside, fx.root.join("linkdir")).unwrap();
    assert_refused(&expand(&fx, &settings, "@linkdir/secret.txt"));
}

#[test]
fn home_relative_paths_are_contained_too() {
    let fx = fixture();
    // `~` is the user's home; the test home is outside the project unless HOME points into
    // it, which it never does here.
    let expanded = expand(&fx, &Settings::default(), "@~/.ssh/id_rsa");
    match outcome(&expanded, 0) {
        ReferenceOutcome::Failed(reason) => {
            assert!(
                reason == "file not found" || reason.contains("outside the project root"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn settings_can_allow_paths_outside_the_project() {
    let fx = fixture();
    let mut settings = Settings::default();
    settings.references.allowed_paths = vec![fx.outside.display().to_string()];
    let expanded = expand(&fx, &settings, "@../outside/secret.txt");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);
    assert!(expanded.text.contains("TOP SECRET"));

    let mut relative = Settings::default();
    relative.references.allowed_paths = vec!["../outside".into()];
    let expanded = expand(&fx, &relative, "@../outside/secret.txt");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);

    let mut open = Settings::default();
    open.references.allow_outside_project = true;
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.root.join("l")).unwrap();
    let expanded = expand(&fx, &open, "@l");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);
}

#[test]
fn session_references_inline_the_snapshot() {
    let fx = fixture();
    let id = SessionId::new("prior-session-1").unwrap();
    let mut writer = JournalWriter::open(&fx.home, &id).unwrap();
    writer
        .append(&common::run_start("design the cache", "/p"))
        .unwrap();
    writer.append(&common::run_end("cache designed")).unwrap();
    let expanded = expand(
        &fx,
        &Settings::default(),
        "continue @@prior-session and @@ghost",
    );
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);
    assert_eq!(
        outcome(&expanded, 1),
        &ReferenceOutcome::Failed("session not found".into())
    );
    let text = &expanded.text;
    assert!(
        text.contains("Referenced session context @@prior-session (session prior-session-1)"),
        "{text}"
    );
    assert!(text.contains("cache designed"), "{text}");
    assert!(
        text.contains("@@ghost: could not be inlined: session not found"),
        "{text}"
    );
}

#[test]
fn duplicates_are_expanded_once() {
    let fx = fixture();
    let expanded = expand(&fx, &Settings::default(), "@src/lib.rs then @src/lib.rs");
    assert_eq!(expanded.references.len(), 1);
    assert_eq!(expanded.text.matches("pub fn answer").count(), 1);
}

fn failed_reason(expanded: &ExpandedPrompt, i: usize) -> String {
    match outcome(expanded, i) {
        ReferenceOutcome::Failed(reason) => reason.clone(),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_symlink_chain_ending_outside_is_refused() {
    let fx = fixture();
    fs::create_dir_all(fx.root.join("docs")).unwrap();
    std::os::unix::fs::symlink(fx.outside.join("secret.txt"), fx.root.join("docs/c")).unwrap();
    std::os::unix::fs::symlink("docs/c", fx.root.join("b")).unwrap();
    std::os::unix::fs::symlink("b", fx.root.join("a.txt")).unwrap();
    assert_refused(&expand(&fx, &Settings::default(), "read @a.txt"));
}

#[test]
fn system_files_are_refused_whatever_the_settings() {
    let fx = fixture();
    // What /proc/self/environ would leak: this process's own variables.
    let environ = fs::read("/proc/self/environ").unwrap_or_default();
    let leaked: Vec<String> = String::from_utf8_lossy(&environ)
        .split('\0')
        .filter(|var| var.len() > 8)
        .map(str::to_string)
        .collect();
    let mut slash = Settings::default();
    slash.references.allowed_paths = vec!["/".into()];
    let mut open = Settings::default();
    open.references.allow_outside_project = true;
    for settings in [Settings::default(), slash, open] {
        let expanded = expand(&fx, &settings, "@/proc/self/environ @/dev/zero @/dev/stdin");
        for i in 0..3 {
            let reason = failed_reason(&expanded, i);
            assert!(
                reason.contains("never read, whatever the settings"),
                "{}: {reason}",
                expanded.references[i].token
            );
        }
        for var in &leaked {
            assert!(!expanded.text.contains(var.as_str()), "{var} leaked");
        }
    }
    // A link inside the project to a system file, with everything allowed.
    std::os::unix::fs::symlink("/proc/self/environ", fx.root.join("env.txt")).unwrap();
    let mut open = Settings::default();
    open.references.allow_outside_project = true;
    let expanded = expand(&fx, &open, "@env.txt");
    assert!(failed_reason(&expanded, 0).contains("/proc"));
    for var in &leaked {
        assert!(!expanded.text.contains(var.as_str()), "{var} leaked");
    }
}

#[test]
fn fifos_are_refused_without_blocking() {
    let fx = fixture();
    let status = std::process::Command::new("mkfifo")
        .arg(fx.root.join("pipe.txt"))
        .status()
        .unwrap();
    assert!(status.success());
    let (tx, rx) = std::sync::mpsc::channel();
    let (root, home) = (fx.root.clone(), fx.home.clone());
    std::thread::spawn(move || {
        let settings = Settings::default();
        let ctx = ReferenceContext {
            project_root: &root,
            home: &home,
            settings: &settings,
        };
        let _ = tx.send(expand_references("@pipe.txt", &ctx));
    });
    let expanded = rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("reading the FIFO blocked");
    let reason = failed_reason(&expanded, 0);
    assert!(reason.contains("FIFO"), "{reason}");
    assert!(reason.contains("not a regular file"), "{reason}");
}

#[test]
fn symlinks_inside_the_project_are_read() {
    let fx = fixture();
    std::os::unix::fs::symlink("src/lib.rs", fx.root.join("alias.rs")).unwrap();
    std::os::unix::fs::symlink("src", fx.root.join("code")).unwrap();
    let expanded = expand(&fx, &Settings::default(), "@alias.rs @code/lib.rs");
    assert_eq!(outcome(&expanded, 0), &ReferenceOutcome::Inlined);
    assert_eq!(outcome(&expanded, 1), &ReferenceOutcome::Inlined);
    assert_eq!(expanded.text.matches("pub fn answer").count(), 2);
}
