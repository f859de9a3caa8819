//! Session handoffs through the binary: every run ends with a bounded `handoff` record that
//! extends the session's summary; `@@id` inlines a fresh handoff as it is (no model call, no
//! snapshot); `braincode sessions handoff` reuses it, or writes a new one with a focus.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_harness;

use braincode_test_support::TempHome;
use run_harness::{
    all_requests_text, braincode, configure_one_model, hello_server, journal, repo, run_json,
};
use serde_json::Value;

fn handoffs(records: &[Value]) -> Vec<&Value> {
    records.iter().filter(|r| r["type"] == "handoff").collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_extend_the_session_handoff_and_at_at_reuses_it() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();

    let first = run_json(
        &home,
        repo.path(),
        &[],
        "hello, what is the token check for?",
        &[],
    )
    .await;
    let session = first["sessionId"].as_str().unwrap().to_string();
    run_json(
        &home,
        repo.path(),
        &["--session", &session],
        "and where is it called from?",
        &[],
    )
    .await;
    let records = journal(&home, &session);
    let written = handoffs(&records);
    assert_eq!(written.len(), 2, "one handoff per run");
    let last = written[1]["summary"].as_str().unwrap();
    assert_eq!(written[1]["trigger"], "run_end");
    assert!(
        last.starts_with("**Objective:** hello, what is the token check for?"),
        "{last}"
    );
    assert!(
        last.contains("- **user:** and where is it called from?"),
        "{last}"
    );
    assert!(last.contains("hello!"), "{last}");
    assert!(last.chars().count() <= 4_096);
    // The handoff comes before the run's terminal record, which stays last.
    assert_eq!(records.last().unwrap()["type"], "run_end");

    // @@id inlines the fresh handoff (not the mechanical snapshot).
    let before = server.chat_requests().len();
    let third = run_json(
        &home,
        repo.path(),
        &[],
        &format!("hello again, continue from @@{session}"),
        &[],
    )
    .await;
    assert_ne!(third["sessionId"].as_str().unwrap(), session);
    let text = all_requests_text(&server);
    assert!(text.contains("Referenced session handoff"), "{text}");
    assert!(text.contains("- **user:** and where is it called from?"));
    assert_eq!(
        server.chat_requests().len() - before,
        1,
        "the handoff was reused: no summarizing model call"
    );

    // `sessions handoff`: the fresh one is reused; a focus writes a new one.
    let out = braincode(
        &home,
        repo.path(),
        &["sessions", "handoff", &session, "--json"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["reused"], true);
    assert_eq!(doc["summary"], last);
    let out = braincode(
        &home,
        repo.path(),
        &[
            "sessions",
            "handoff",
            &session,
            "--focus",
            "the callers",
            "--json",
        ],
    )
    .await;
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["reused"], false);
    let records = journal(&home, &session);
    let manual = handoffs(&records).into_iter().last().unwrap().clone();
    assert_eq!(manual["trigger"], "manual");
    assert_eq!(manual["focus"], "the callers");

    let missing = braincode(&home, repo.path(), &["sessions", "handoff", "nope"]).await;
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("nope"), "{}", missing.stderr);
}
