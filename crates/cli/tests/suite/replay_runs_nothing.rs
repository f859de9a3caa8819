//! `braincode replay` runs nothing: no model (no server is even running), no tool, no hook,
//! not even git. A `git` on PATH that leaves a marker proves it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;

use crate::run_harness::{configure_one_model, hello_server, replay_check, repo, run_json};
use braincode_test_support::TempHome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_starts_no_process_and_calls_no_model() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project = repo();
    let report = run_json(&home, project.path(), &[], "what does main do?", &[]).await;
    let session = report["sessionId"].as_str().unwrap().to_string();
    let requests = server.chat_requests().len();
    drop(server);

    // A git that tells on itself, first on PATH.
    let bin = tempfile::tempdir().unwrap();
    let marker = bin.path().join("git-ran");
    let fake = bin.path().join("git");
    std::fs::write(
        &fake,
        format!("#!/bin/sh\ntouch {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    replay_check(&home, project.path(), &session, &[("PATH", &path)]).await;
    assert!(!marker.exists(), "the replay started git");
    assert!(requests > 0);
}
