//! Contained reads of the files that go to a model: a hostile repository links AGENTS.md, a
//! skill or a README to a secret (`/proc/self/environ`, `~/.ssh/id_rsa`), a FIFO or a huge
//! file; the secret never reaches the support section, nothing blocks, reads are bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use braincode_config::{
    AGENTS_MD_MAX_BYTES, ContainedError, FileKind, Home, ReadScope, SupportBundle, check_trust,
    discover_support,
};

/// A secret standing for an API key or a private key.
const MARKER: &str = "BRAINCODE-SECRET-MARKER-7f3a9c";

struct Fixture {
    _dir: tempfile::TempDir,
    project: PathBuf,
    home: Home,
    /// A directory outside the project and the Braincode home (the user's `~/.ssh`, say).
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let outside = dir.path().join("dot-ssh");
    let home = Home::at(dir.path().join("braincode-home"));
    fs::create_dir_all(project.join(".agents/skills")).unwrap();
    fs::create_dir_all(&outside).unwrap();
    fs::create_dir_all(home.skills_dir()).unwrap();
    fs::write(
        outside.join("id_rsa"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{MARKER}\n"),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        project,
        home,
        outside,
    }
}

/// Everything of a bundle that reaches a model or the user.
fn everything_sent(bundle: &SupportBundle) -> String {
    format!(
        "{}\n{:?}\n{:?}",
        bundle.support_section(),
        bundle.warnings,
        bundle
    )
}

fn warnings_about<'a>(bundle: &'a SupportBundle, needle: &str) -> Vec<&'a String> {
    bundle
        .warnings
        .iter()
        .filter(|w| w.contains(needle))
        .collect()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs `work` on a thread and fails the test if it has not finished after a generous wait
/// (a blocked FIFO open would never finish).
fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the read blocked (a FIFO was opened for reading)")
}

const ENVIRON_CHILD: &str = "BRAINCODE_CONTAINED_ENVIRON_CHILD";
const SECRET_VAR: &str = "BRAINCODE_TEST_SECRET_API_KEY";

/// The test re-runs itself in a child process whose environment holds a secret API key (set
/// at spawn: no test mutates its own environment), and the child checks the key is really in
/// its `/proc/self/environ` and never reaches the support section.
#[cfg(target_os = "linux")]
#[test]
fn agents_md_linked_to_proc_environ_never_reaches_the_model() {
    if std::env::var_os(ENVIRON_CHILD).is_none() {
        let name = crate::common::test_name(
            module_path!(),
            "agents_md_linked_to_proc_environ_never_reaches_the_model",
        );
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
            .env(ENVIRON_CHILD, "1")
            .env(SECRET_VAR, MARKER)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(stdout.contains("1 passed"), "child ran no test:\n{stdout}");
        return;
    }
    // The attack is real: this process's environ holds the key.
    let environ = fs::read("/proc/self/environ").unwrap();
    assert!(
        String::from_utf8_lossy(&environ).contains(&format!("{SECRET_VAR}={MARKER}")),
        "the secret is not in /proc/self/environ"
    );
    let fx = fixture();
    symlink("/proc/self/environ", fx.project.join("AGENTS.md")).unwrap();
    // A chain of links through the project changes nothing.
    fs::create_dir_all(fx.project.join("docs")).unwrap();
    symlink("/proc/self/environ", fx.project.join("docs/env")).unwrap();
    symlink("../../docs/env", fx.project.join(".agents/skills/env.md")).unwrap();
    fs::create_dir_all(fx.home.root()).unwrap();
    symlink("/proc/self/environ", fx.home.agents_md_path()).unwrap();

    let bundle = discover_support(&fx.home, &fx.project, &check_trust(&fx.home, &fx.project).0);
    let sent = everything_sent(&bundle);
    assert!(!sent.contains(MARKER), "the secret leaked:\n{sent}");
    assert!(
        !sent.contains(SECRET_VAR),
        "environ content leaked:\n{sent}"
    );
    assert!(bundle.project_agents_md.is_none());
    assert!(bundle.user_agents_md.is_none());
    assert!(bundle.skills.is_empty());
    let refused = warnings_about(&bundle, "/proc");
    assert_eq!(refused.len(), 3, "{:?}", bundle.warnings);
    assert!(
        refused
            .iter()
            .all(|w| w.contains("not read") && w.contains("system file")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|w| w.contains("AGENTS.md")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(|w| w.contains("skill \"env\"")),
        "{refused:?}"
    );
}

#[test]
fn agents_md_linked_to_a_private_key_is_refused() {
    let fx = fixture();
    symlink(fx.outside.join("id_rsa"), fx.project.join("AGENTS.md")).unwrap();
    // `..` through a link to a directory: same target, different route.
    symlink(&fx.outside, fx.project.join("keys")).unwrap();
    fs::create_dir_all(fx.home.root()).unwrap();
    symlink(fx.outside.join("id_rsa"), fx.home.agents_md_path()).unwrap();

    let bundle = discover_support(&fx.home, &fx.project, &check_trust(&fx.home, &fx.project).0);
    let sent = everything_sent(&bundle);
    assert!(!sent.contains(MARKER), "the key leaked:\n{sent}");
    assert!(bundle.project_agents_md.is_none());
    assert!(
        bundle.user_agents_md.is_none(),
        "user scope is the Braincode home"
    );
    let refused = warnings_about(&bundle, "outside");
    assert_eq!(refused.len(), 2, "{:?}", bundle.warnings);
    for warning in refused {
        assert!(warning.contains("AGENTS.md resolves to"), "{warning}");
        assert!(warning.contains("id_rsa"), "{warning}");
        assert!(warning.contains("not read"), "{warning}");
    }

    let scope = ReadScope::new(&fx.project).unwrap();
    let err = scope
        .read_to_string(Path::new("keys/id_rsa"), 1024)
        .unwrap_err();
    assert!(matches!(err, ContainedError::Outside { .. }), "{err}");
    let err = scope
        .read_to_string(Path::new("../dot-ssh/id_rsa"), 1024)
        .unwrap_err();
    assert!(matches!(err, ContainedError::Outside { .. }), "{err}");
}

#[test]
fn skills_linked_out_of_the_project_are_refused() {
    let fx = fixture();
    let skills = fx.project.join(".agents/skills");
    // A skill directory that is a link to a directory outside.
    let evil = fx.outside.join("evil-skill");
    fs::create_dir_all(&evil).unwrap();
    fs::write(evil.join("SKILL.md"), format!("evil {MARKER}")).unwrap();
    symlink(&evil, skills.join("evil")).unwrap();
    // A real skill directory whose SKILL.md links outside.
    fs::create_dir_all(skills.join("x")).unwrap();
    symlink(fx.outside.join("id_rsa"), skills.join("x/SKILL.md")).unwrap();
    // A single-file skill linking outside.
    symlink(fx.outside.join("id_rsa"), skills.join("y.md")).unwrap();
    // A user skill linking out of the Braincode home.
    symlink(fx.outside.join("id_rsa"), fx.home.skills_dir().join("u.md")).unwrap();
    fs::write(skills.join("good.md"), "Good skill.").unwrap();

    let bundle = discover_support(&fx.home, &fx.project, &check_trust(&fx.home, &fx.project).0);
    let sent = everything_sent(&bundle);
    assert!(!sent.contains(MARKER), "a skill leaked:\n{sent}");
    let ids: Vec<&str> = bundle.skills.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["good"]);
    for id in ["evil", "x", "y", "u"] {
        let about = warnings_about(&bundle, &format!("skill {id:?} skipped"));
        assert_eq!(about.len(), 1, "{id}: {:?}", bundle.warnings);
        assert!(about[0].contains("outside"), "{}", about[0]);
    }

    // The whole skills directory linked out of the project.
    let other = tempfile::tempdir().unwrap();
    let project = other.path().join("p");
    fs::create_dir_all(project.join(".agents")).unwrap();
    symlink(evil.parent().unwrap(), project.join(".agents/skills")).unwrap();
    fs::create_dir_all(fx.outside.join("evil-skill2")).unwrap();
    fs::write(fx.outside.join("evil-skill2/SKILL.md"), MARKER).unwrap();
    let bundle = discover_support(
        &Home::at(other.path().join("h")),
        &project,
        &check_trust(&Home::at(other.path().join("h")), &project).0,
    );
    assert!(bundle.skills.is_empty());
    assert!(!everything_sent(&bundle).contains(MARKER));
    let about = warnings_about(&bundle, "project skills skipped");
    assert_eq!(about.len(), 1, "{:?}", bundle.warnings);
}

#[test]
fn fifos_are_never_opened() {
    let fx = fixture();
    mkfifo(&fx.project.join("AGENTS.md"));
    fs::create_dir_all(fx.project.join(".agents/skills/pipe")).unwrap();
    mkfifo(&fx.project.join(".agents/skills/pipe/SKILL.md"));
    let (home, project) = (fx.home.clone(), fx.project.clone());
    let bundle =
        finishes(move || discover_support(&home, &project, &check_trust(&home, &project).0));
    assert!(bundle.project_agents_md.is_none());
    assert!(bundle.skills.is_empty());
    let fifo = warnings_about(&bundle, "FIFO");
    assert_eq!(fifo.len(), 2, "{:?}", bundle.warnings);
    assert!(fifo.iter().all(|w| w.contains("not a regular file")));

    let project = fx.project.clone();
    let err = finishes(move || {
        ReadScope::new(&project)
            .unwrap()
            .read_to_string(Path::new("AGENTS.md"), 1024)
            .unwrap_err()
    });
    assert!(
        matches!(
            err,
            ContainedError::NotRegular {
                kind: FileKind::Fifo,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn links_inside_the_project_are_read() {
    let fx = fixture();
    fs::create_dir_all(fx.project.join("docs/skills/deploy")).unwrap();
    fs::write(fx.project.join("docs/agents.md"), "Project rules.").unwrap();
    fs::write(fx.project.join("docs/skills/deploy/SKILL.md"), "Deploy.").unwrap();
    fs::write(fx.project.join("docs/review.md"), "Review.").unwrap();
    symlink("docs/agents.md", fx.project.join("AGENTS.md")).unwrap();
    let skills = fx.project.join(".agents/skills");
    symlink("../../docs/skills/deploy", skills.join("deploy")).unwrap();
    symlink(fx.project.join("docs/review.md"), skills.join("review.md")).unwrap();

    let bundle = discover_support(&fx.home, &fx.project, &check_trust(&fx.home, &fx.project).0);
    assert!(bundle.warnings.is_empty(), "{:?}", bundle.warnings);
    assert_eq!(bundle.project_agents_md.unwrap().body, "Project rules.");
    let skills: Vec<(&str, &str)> = bundle
        .skills
        .iter()
        .map(|s| (s.id.as_str(), s.body.as_str()))
        .collect();
    assert_eq!(skills, [("deploy", "Deploy."), ("review", "Review.")]);

    let scope = ReadScope::new(&fx.project).unwrap();
    let read = scope.read_to_string(Path::new("AGENTS.md"), 1024).unwrap();
    assert_eq!(read.text, "Project rules.");
    assert_eq!(
        read.path,
        fx.project.join("docs/agents.md").canonicalize().unwrap()
    );
    assert!(!read.clipped && !read.lossy);
    // An allowed root admits a file outside the project.
    let scope = scope.with_allowed([fx.outside.clone()]);
    assert!(scope.resolve(&fx.outside.join("id_rsa")).is_ok());
}

#[test]
fn a_huge_agents_md_is_read_bounded() {
    let fx = fixture();
    let size = 10 * 1024 * 1024;
    let mut body = "Rule: keep it small.\n".repeat(size / 21);
    body.push_str(MARKER);
    fs::write(fx.project.join("AGENTS.md"), &body).unwrap();

    let bundle = discover_support(&fx.home, &fx.project, &check_trust(&fx.home, &fx.project).0);
    let file = bundle.project_agents_md.as_ref().unwrap();
    assert!(file.clipped);
    assert!(
        file.body.len() <= AGENTS_MD_MAX_BYTES,
        "{}",
        file.body.len()
    );
    let section = bundle.support_section();
    assert!(!section.contains(MARKER), "the tail was read");
    assert!(
        section.contains("AGENTS.md clipped at 32000 characters"),
        "{}",
        &section[section.len() - 300..]
    );
    assert!(section.contains("with your tools"));

    let read = ReadScope::new(&fx.project)
        .unwrap()
        .read_to_string(Path::new("AGENTS.md"), 1000)
        .unwrap();
    assert!(read.clipped);
    assert_eq!(read.text.len(), 1000);
    assert_eq!(read.size, body.len() as u64);
}

#[test]
fn system_files_are_refused_even_under_an_allowed_root() {
    let dir = tempfile::tempdir().unwrap();
    let scope = ReadScope::new(dir.path())
        .unwrap()
        .with_allowed([PathBuf::from("/")]);
    for path in [
        "/proc/self/environ",
        "/proc/self/cmdline",
        "/dev/zero",
        "/dev/null",
        "/sys/kernel/mm",
    ] {
        let err = scope.resolve(Path::new(path)).unwrap_err();
        assert!(
            matches!(err, ContainedError::SpecialFilesystem { .. }),
            "{path}: {err}"
        );
        assert!(err.to_string().contains("not read"), "{err}");
    }
    // The lexical check: `..` walking up to /proc from inside the root.
    let up = "../".repeat(dir.path().components().count() + 2);
    let err = scope
        .read_to_string(Path::new(&format!("{up}proc/self/environ")), 1024)
        .unwrap_err();
    assert!(
        matches!(err, ContainedError::SpecialFilesystem { .. }),
        "{err}"
    );
    // Everything else under `/` is allowed here.
    let elsewhere = tempfile::tempdir().unwrap();
    fs::write(elsewhere.path().join("notes.txt"), "notes").unwrap();
    let read = scope
        .read_to_string(&elsewhere.path().join("notes.txt"), 1024)
        .unwrap();
    assert_eq!(read.text, "notes");
}

#[test]
fn directories_resolve_with_the_same_rules() {
    let fx = fixture();
    symlink(&fx.outside, fx.project.join("out")).unwrap();
    fs::create_dir_all(fx.project.join("in")).unwrap();
    symlink("in", fx.project.join("alias")).unwrap();
    let scope = ReadScope::new(&fx.project).unwrap();
    assert_eq!(
        scope.resolve_dir(Path::new("alias")).unwrap(),
        fx.project.join("in").canonicalize().unwrap()
    );
    let err = scope.resolve_dir(Path::new("out")).unwrap_err();
    assert!(matches!(err, ContainedError::Outside { .. }), "{err}");
    fs::write(fx.project.join("file"), "x").unwrap();
    let err = scope.resolve_dir(Path::new("file")).unwrap_err();
    assert!(matches!(err, ContainedError::NotDirectory { .. }), "{err}");
    let err = scope.resolve(Path::new("in")).unwrap_err();
    assert!(
        matches!(
            err,
            ContainedError::NotRegular {
                kind: FileKind::Directory,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        scope
            .resolve(Path::new("missing"))
            .unwrap_err()
            .is_not_found()
    );
}

#[test]
fn invalid_utf8_is_replaced_and_flagged() {
    let fx = fixture();
    fs::write(fx.project.join("AGENTS.md"), b"rules \xff here").unwrap();
    let scope = ReadScope::new(&fx.project).unwrap();
    let read = scope.read_to_string(Path::new("AGENTS.md"), 1024).unwrap();
    assert!(read.lossy);
    assert_eq!(read.text, "rules \u{fffd} here");
    // A multi-byte character cut by the bound is dropped, not flagged.
    fs::write(fx.project.join("accents.md"), "ééé").unwrap();
    let read = scope.read_to_string(Path::new("accents.md"), 5).unwrap();
    assert_eq!(
        (read.text.as_str(), read.clipped, read.lossy),
        ("éé", true, false)
    );
}
