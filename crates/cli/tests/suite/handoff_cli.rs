//! Session handoffs through the binary: every run ends with a bounded `handoff` record that
//! extends the session's summary; `@@id` inlines a fresh handoff as it is (no model call, no
//! snapshot); `braincode sessions handoff` reuses it, or writes a new one with a focus — by
//! the heuristic, or by the brain's `summarize` role when asked, bounded, with the heuristic
//! as the recorded fallback when that model fails or is too slow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{
    all_requests_text, braincode, configure_one_model, hello_server, journal, repo, run_json,
};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_summarizer_is_bounded_off_by_default_and_falls_back_when_slow() {
    let long_line = "L".repeat(600);
    let body: String = (0..300).map(|n| format!("- step {n} done\n")).collect();
    let model_summary = format!("Objective: keep tokens valid\n{long_line}\n{body}");
    let script = Script::new()
        .when(
            Matcher::system_contains("handoff summary of a coding session"),
            [Reply::text(model_summary), Reply::stall()],
        )
        .always(Matcher::model("any"), Reply::text("hello!"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();
    let report = run_json(&home, repo.path(), &[], "hello, check the tokens", &[]).await;
    let session = report["sessionId"].as_str().unwrap().to_string();
    let handoff = |args: &[&str]| {
        let mut all = vec!["sessions", "handoff", session.as_str(), "--json"];
        all.extend_from_slice(args);
        all.iter().map(|a| (*a).to_string()).collect::<Vec<_>>()
    };

    // Off by default: a new handoff is the heuristic one, no model is asked.
    let before = server.chat_requests().len();
    let args = handoff(&["--focus", "the parser"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = braincode(&home, repo.path(), &args).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["summarizer"], "heuristic");
    assert_eq!(server.chat_requests().len(), before, "a model was asked");

    // Asked for: the summarize role writes it, held to the bounds.
    let args = handoff(&["--focus", "the parser", "--summarizer", "model"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = braincode(&home, repo.path(), &args).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["summarizer"], "model:test/any");
    assert_eq!(doc["fallback"], Value::Null);
    let summary = doc["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("Objective: keep tokens valid"),
        "{summary}"
    );
    // Three quarters of the handoff bound: later runs' turns still fit.
    assert!(summary.chars().count() <= 3_072);
    assert!(summary.lines().all(|l| l.chars().count() <= 240));
    let asked = server.chat_requests().last().unwrap().all_text();
    assert!(
        asked.contains("Focus for the next session: the parser"),
        "{asked}"
    );
    assert!(asked.contains("hello, check the tokens"), "{asked}");
    let records = journal(&home, &session);
    let written = handoffs(&records).into_iter().last().unwrap().clone();
    assert_eq!(written["summarizer"], "model:test/any");
    assert_eq!(written["summary"], summary);

    // Set in settings.json with a short deadline: the stalled model is given up on, the
    // heuristic summary is written, and the journal says why.
    home.write_settings(&json!({
        "version": 1, "mode": "auto", "defaultBrainId": "test",
        "context": {"handoffSummarizer": "model", "handoffTimeoutMs": 1000}
    }));
    let args = handoff(&["--focus", "the callers"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = braincode(&home, repo.path(), &args).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(doc["summarizer"], "heuristic");
    assert!(
        doc["fallback"]
            .as_str()
            .unwrap()
            .contains("timed out after 1000 ms"),
        "{doc:#}"
    );
    let records = journal(&home, &session);
    let written = handoffs(&records).into_iter().last().unwrap().clone();
    assert_eq!(written["summarizer"], "heuristic");
    assert!(
        written["summarizerFallback"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );
    // Nothing ran since the model's summary, so the heuristic one is that summary.
    assert_eq!(written["summary"], summary);

    // A later run extends the model's summary with its own turns.
    run_json(
        &home,
        repo.path(),
        &["--session", &session],
        "hello, and the refresh tokens?",
        &[],
    )
    .await;
    let records = journal(&home, &session);
    let extended = handoffs(&records).into_iter().last().unwrap().clone();
    let extended = extended["summary"].as_str().unwrap();
    assert!(
        extended.starts_with("Objective: keep tokens valid"),
        "{extended}"
    );
    assert!(
        extended.contains("- **user:** hello, and the refresh tokens?"),
        "{extended}"
    );
    assert!(extended.chars().count() <= 4_096);

    // A bad deadline is a settings error naming the field.
    home.write_settings(&json!({
        "version": 1, "mode": "auto", "defaultBrainId": "test",
        "context": {"handoffTimeoutMs": 5}
    }));
    let out = braincode(&home, repo.path(), &args).await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("handoffTimeoutMs"), "{}", out.stderr);
}
