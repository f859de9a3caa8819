//! How `braincode` starts without a command: the session needs a terminal, `-p` runs one
//! task like `run` (with the session's flags), and `-p` does not go with a command.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{braincode, configure_one_model, hello_server, repo};
use braincode_test_support::TempHome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_the_session_says_how_to_run_a_task() {
    let home = TempHome::new();
    let project = repo();
    let out = braincode(&home, project.path(), &[]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("needs a terminal"), "{}", out.stderr);
    assert!(out.stderr.contains("braincode -p"), "{}", out.stderr);
    assert!(!home.path().join("sessions").exists(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_runs_one_task_with_the_session_flags() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project = repo();
    let out = braincode(
        &home,
        project.path(),
        &["-p", "say hello", "--allow-edits", "--mode", "radical"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(out.stdout.contains("hello!"), "{}", out.stdout);
    let sessions: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(sessions.len(), 1);
    let journal = std::fs::read_to_string(sessions[0].path()).unwrap();
    assert!(
        journal.contains("\"permission\":\"acceptEdits\""),
        "{journal}"
    );
    assert!(journal.contains("\"mode\":\"radical\""), "{journal}");

    let both = braincode(&home, project.path(), &["-p", "x", "sessions", "list"]).await;
    assert_eq!(both.code, 2, "{}", both.stderr);
}
