//! The host never acts for the repository: Braincode's own git, its file writes, undo, the
//! review's diff and the checks, each attacked through a real run. Targets sit outside `/tmp`
//! (the sandbox's private `/tmp` would hide a miss there); each test checks that the side
//! effect is absent, and that the same attack works against plain git or plain file
//! operations (so the test can fail).

use std::path::Path;

use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};

use super::{SSH_MARKER, Scene, attacking_server, configure, run_attack};
use crate::run_harness::{all_requests_text, braincode_env as braincode, hello_server, run_json};

fn git_in(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Markers present in `dir`.
fn markers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".ran"))
        .collect()
}

/// SHA-256 of a file, hex (with the system's `sha256sum`).
fn sha256_of(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// Every journal of `home`, as text.
fn journals(home: &TempHome) -> String {
    std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_planted_in_a_submodule_or_behind_an_equals_sign_never_run() {
    let scene = Scene::new();
    let root = scene.repo.path();
    let marks = scene.outside.path();
    // A submodule whose own `.git/config` names a clean filter for a stat-dirty file.
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    git_in(&sub, &["init", "-q"]);
    git_in(&sub, &["config", "user.email", "t@e"]);
    git_in(&sub, &["config", "user.name", "t"]);
    std::fs::write(sub.join(".gitattributes"), "* filter=evil\n").unwrap();
    std::fs::write(sub.join("a.txt"), "one\n").unwrap();
    git_in(&sub, &["add", "."]);
    git_in(&sub, &["commit", "-q", "-m", "sub"]);
    let head = git_in(&sub, &["rev-parse", "HEAD"]);
    scene.repo.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("160000,{},sub", head.trim()),
    ]);
    // A driver whose name holds `=`, which `-c name=value` cannot express.
    scene.repo.write(".gitattributes", "*.txt filter=a=b\n");
    scene.repo.write("notes.txt", "first\n");
    scene.repo.commit("submodule and notes");
    let touch = |name: &str| format!("touch {}/{name}.ran; cat", marks.display());
    git_in(
        &sub,
        &["config", "filter.evil.clean", &touch("submodule-filter")],
    );
    scene
        .repo
        .git(&["config", "filter.a=b.clean", &touch("equals-filter")]);
    scene.repo.git(&["config", "filter.a=b.required", "true"]);
    // Stat-dirty files make git run the clean filters.
    std::fs::write(sub.join("a.txt"), "two\n").unwrap();
    // (Same sizes: git must read the files to know they changed.)
    scene.repo.write("notes.txt", "fir2t\n");

    // The attack is live: plain git runs both.
    git_in(root, &["status", "--porcelain"]);
    let mut ran = markers(marks);
    ran.sort();
    assert_eq!(ran, ["equals-filter.ran", "submodule-filter.ran"]);
    for name in ran {
        std::fs::remove_file(marks.join(name)).unwrap();
    }

    // A read-only run with no tool call: Braincode's own git still reads the repository.
    let server = hello_server().await;
    let home = TempHome::new();
    configure(&home, &server);
    let home_dir = scene.user_home.path().display().to_string();
    run_json(&home, root, &[], "hello there", &[("HOME", &home_dir)]).await;
    assert!(
        markers(marks).is_empty(),
        "a repository filter ran: {:?}",
        markers(marks)
    );
    // The probe still worked: the model saw the repository state.
    assert!(
        all_requests_text(&server).contains("changed file"),
        "{}",
        all_requests_text(&server)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_projects_checks_do_not_run_without_trust() {
    let scene = Scene::new();
    let root = scene.repo.path();
    scene.repo.write(
        "package.json",
        r#"{"name": "p", "version": "1.0.0", "scripts": {"test": "touch check.ran"}}"#,
    );
    scene.repo.write("index.js", "module.exports = 1;\n");
    scene.repo.commit("node project");
    let edit = || {
        vec![(
            "edit_file",
            json!({"path": "index.js", "oldString": "= 1", "newString": "= 2"}),
        )]
    };
    for flag in ["--allow-edits", "--yes"] {
        let server = attacking_server_for("edit_file", edit()).await;
        let home = TempHome::new();
        configure(&home, &server);
        let out = run_attack(&scene, &home, &[flag]).await;
        let report: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
        assert!(scene.repo.read("index.js").contains("= 2"), "{report:#}");
        assert!(
            !root.join("check.ran").exists(),
            "{flag}: an untrusted project's test script ran: {}",
            journals(&home)
        );
        let warnings = report["warnings"].to_string();
        assert!(warnings.contains("project not trusted"), "{report:#}");
        assert!(warnings.contains("braincode trust"), "{report:#}");
        assert_eq!(report["checks"]["status"], "skipped", "{report:#}");
        scene.repo.git(&["checkout", "--", "index.js"]);
    }
    // `braincode checks run` with nobody at a terminal refuses too, and says how to trust.
    let home = TempHome::new();
    scene.repo.write("index.js", "module.exports = 3;\n");
    let out = braincode(&home, root, &["checks", "run"], &[]).await;
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("braincode trust"), "{}", out.stderr);
    assert!(!root.join("check.ran").exists());

    // Trusted, the same checks run (the test can fail).
    let server = attacking_server_for("edit_file", edit()).await;
    let home = TempHome::new();
    configure(&home, &server);
    scene.repo.git(&["checkout", "--", "index.js"]);
    let out = run_attack(&scene, &home, &["--allow-edits", "--trust"]).await;
    assert!(
        root.join("check.ran").exists(),
        "a trusted project's checks must run: {}\n{}",
        out.stdout,
        out.stderr
    );
}

/// A server whose primary (the one agent offered `tool`) makes `calls`, then answers.
async fn attacking_server_for(tool: &str, calls: Vec<(&str, Value)>) -> ScriptedServer {
    let script = Script::new()
        .when(
            Matcher::tool_offered(tool),
            [Reply::tool_calls(calls), Reply::text("done")],
        )
        .always(Matcher::model("any"), Reply::text("ok"));
    ScriptedServer::start(script).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_and_the_ledger_never_go_through_a_link_planted_during_the_run() {
    let scene = Scene::new();
    let root = scene.repo.path();
    let bashrc = scene.user_home.path().join(".bashrc");
    std::fs::write(&bashrc, "ORIGINAL_BASHRC_MARKER\n").unwrap();
    let real_hash = sha256_of(&bashrc);
    // The agent creates x/.bashrc (x is new), then a command swaps the directory for a link
    // to $HOME: a ledger that follows the link journals ~/.bashrc as the run's last state of
    // x/.bashrc, and an undo that follows it deletes ~/.bashrc to "remove what the run made".
    let calls = vec![
        (
            "edit_file",
            json!({"path": "x/.bashrc", "content": "agent content\n"}),
        ),
        // Written so the parser cannot see the link: only Braincode's own side can catch it.
        (
            "shell",
            json!({"command": "python3 -c \"import os; os.rename('x', 'x.old'); os.symlink(os.environ['HOME'], 'x')\""}),
        ),
    ];
    let server = attacking_server(calls).await;
    let home = TempHome::new();
    configure(&home, &server);
    let out = run_attack(&scene, &home, &["--yes"]).await;
    assert!(
        std::fs::symlink_metadata(root.join("x"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "the swap must have happened for this test to mean anything: {}\n{}",
        journals(&home),
        out.stderr
    );
    let journal = journals(&home);
    assert!(
        !journal.contains("ORIGINAL_BASHRC_MARKER") && !journal.contains(&real_hash),
        "the ledger read the real ~/.bashrc through the link"
    );
    let undo = braincode(
        &home,
        root,
        &["undo"],
        &[("HOME", &scene.user_home.path().display().to_string())],
    )
    .await;
    assert_ne!(undo.code, 0, "{}\n{}", undo.stdout, undo.stderr);
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "ORIGINAL_BASHRC_MARKER\n",
        "undo wrote through the link: {}\n{}",
        undo.stdout,
        undo.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_never_reads_a_linked_secret() {
    let scene = Scene::new();
    let home = TempHome::new();
    // A command links an untracked file to the user's key and to the Braincode auth file.
    let calls = vec![
        (
            "edit_file",
            json!({"path": "src/main.rs", "content": "fn main() { println!(\"hi\"); }\n"}),
        ),
        (
            "shell",
            json!({"command": format!(
                "python3 -c \"import os; os.symlink(os.environ['HOME'] + '/.ssh/id_rsa', 'notes.txt'); os.symlink('{}', 'creds.txt')\"",
                home.path().join("auth.json").display()
            )}),
        ),
    ];
    let server = attacking_server(calls).await;
    configure(&home, &server);
    home.write_auth_keys(&[("openai", "sk-AUTH_JSON_MARKER_31c4")]);
    let out = run_attack(&scene, &home, &["--yes"]).await;
    assert!(
        std::fs::symlink_metadata(scene.repo.path().join("notes.txt")).is_ok(),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    let sent = all_requests_text(&server);
    assert!(!sent.contains(SSH_MARKER), "the key reached a model");
    assert!(
        sent.contains("# new file notes.txt"),
        "the review must have seen the new files for this test to mean anything: {sent}"
    );
    assert!(sent.contains("notes.txt (symbolic link, not followed)"));
    assert!(
        !sent.contains("AUTH_JSON_MARKER"),
        "auth.json reached a model"
    );
}
