//! `braincode undo` end to end: a scripted primary edits a committed file twice and creates
//! a new one under `--allow-edits`; undo puts the tree back byte for byte, once; a file
//! changed again after the run makes undo refuse and change nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{braincode, configure_one_model, journal, repo};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use serde_json::{Value, json};

const ORIGINAL: &str = "pub fn valid(token: &str) -> bool { !token.is_empty() }\n";

/// A primary that edits `src/token.rs` twice and creates `src/new.rs`, then answers.
async fn editing_server() -> ScriptedServer {
    let calls = vec![
        (
            "edit_file",
            json!({"path": "src/token.rs", "oldString": "!token.is_empty()",
                   "newString": "token.len() > 3"}),
        ),
        (
            "edit_file",
            json!({"path": "src/token.rs", "oldString": "> 3", "newString": "> 8"}),
        ),
        (
            "edit_file",
            json!({"path": "src/new.rs", "content": "pub fn fresh() {}\n"}),
        ),
    ];
    ScriptedServer::start(
        Script::new()
            .when(
                Matcher::tool_offered("edit_file"),
                [Reply::tool_calls(calls), Reply::text("done")],
            )
            .always(Matcher::model("any"), Reply::text("ok")),
    )
    .await
}

/// Runs the editing primary in a fresh repository: the home, the repository and the
/// session id.
async fn edited() -> (TempHome, TempRepo, String) {
    let server = editing_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project = repo();
    let out = braincode(
        &home,
        project.path(),
        &[
            "run",
            "--heuristic",
            "--allow-edits",
            "Tighten the token check in src/token.rs",
        ],
    )
    .await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stderr,
        out.stdout
    );
    assert_eq!(
        project.read("src/token.rs"),
        ORIGINAL.replace("!token.is_empty()", "token.len() > 8")
    );
    assert!(
        out.stdout.contains("src/token.rs +2 -2") && out.stdout.contains("src/new.rs +1 -0"),
        "{}",
        out.stdout
    );
    let session = out.session();
    let changes: Vec<Value> = journal(&home, &session)
        .into_iter()
        .filter(|r| r["type"] == "file_change")
        .collect();
    assert_eq!(changes.len(), 3, "{changes:#?}");
    assert!(changes[2]["beforeHash"].is_null());
    (home, project, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_restores_the_tree_byte_for_byte_once() {
    let (home, project, session) = edited().await;
    let root = project.path();

    let dry = braincode(&home, root, &["undo", "--dry-run", "--json"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let plan: Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(plan["status"], "dry_run");
    assert_eq!(plan["session"], session.as_str());
    assert_eq!(plan["files"].as_array().unwrap().len(), 2);
    assert!(root.join("src/new.rs").exists());

    let out = braincode(&home, root, &["undo"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stdout.contains("restored  src/token.rs"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("deleted   src/new.rs"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read(root.join("src/token.rs")).unwrap(),
        ORIGINAL.as_bytes()
    );
    assert!(!root.join("src/new.rs").exists());
    assert_eq!(project.git(&["status", "--porcelain"]), "");
    let undo_records = journal(&home, &session)
        .into_iter()
        .filter(|r| r["type"] == "undo")
        .count();
    assert_eq!(undo_records, 1);

    let again = braincode(&home, root, &["undo", &session[..8]]).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("already undone"), "{}", again.stdout);
    assert_eq!(project.git(&["status", "--porcelain"]), "");
}

/// `--writer` on a run that had no parallel writer: a clear error naming what the run had,
/// and nothing restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_of_a_writer_the_run_did_not_have_restores_nothing() {
    let (home, project, session) = edited().await;
    let root = project.path();
    let edited_now = project.read("src/token.rs");

    let out = braincode(&home, root, &["undo", "--writer", "frontend"]).await;
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(
        out.stderr.contains("has no writer \"frontend\"")
            && out.stderr.contains("none (the run had no parallel writer)"),
        "{}",
        out.stderr
    );
    assert_eq!(project.read("src/token.rs"), edited_now);
    assert!(root.join("src/new.rs").exists());
    assert!(!journal(&home, &session).iter().any(|r| r["type"] == "undo"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_refuses_when_a_changed_file_was_edited_since() {
    let (home, project, session) = edited().await;
    let root = project.path();
    let mine = "pub fn valid(token: &str) -> bool { true }\n";
    std::fs::write(root.join("src/token.rs"), mine).unwrap();

    let out = braincode(&home, root, &["undo", &session]).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stderr.contains("changed since the run: src/token.rs")
            && out.stderr.contains("nothing was restored"),
        "{}",
        out.stderr
    );
    assert_eq!(project.read("src/token.rs"), mine);
    assert!(root.join("src/new.rs").exists());
    assert!(
        !journal(&home, &session).iter().any(|r| r["type"] == "undo"),
        "a refused undo journals nothing"
    );
}

/// Plain `braincode undo` takes back the session's last run that changed files, not a later
/// run that only answered a question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_undo_skips_a_later_run_that_changed_nothing() {
    let (home, project, session) = edited().await;
    let root = project.path();
    // The editing server is gone: a second one only answers.
    let answering = ScriptedServer::start(
        Script::new().always(Matcher::model("any"), Reply::text("It checks the length.")),
    )
    .await;
    configure_one_model(&home, &answering);
    let question = braincode(
        &home,
        root,
        &[
            "run",
            "--heuristic",
            "--session",
            &session,
            "What does src/token.rs check?",
        ],
    )
    .await;
    assert!(matches!(question.code, 0 | 3 | 6), "{}", question.stderr);
    let runs: Vec<String> = journal(&home, &session)
        .into_iter()
        .filter(|r| r["type"] == "run_start")
        .map(|r| r["runId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let dry = braincode(&home, root, &["undo", "--dry-run", "--json"]).await;
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let plan: Value = serde_json::from_str(&dry.stdout).unwrap();
    assert_eq!(plan["runId"], runs[0].as_str(), "{plan:#}");
    assert_eq!(plan["files"].as_array().unwrap().len(), 2, "{plan:#}");
    // Naming the later run still says it changed nothing.
    let named = braincode(&home, root, &["undo", "--run", &runs[1], "--dry-run"]).await;
    assert_eq!(named.code, 0, "{}", named.stderr);
    assert!(named.stdout.contains("changed no file"), "{}", named.stdout);
}
