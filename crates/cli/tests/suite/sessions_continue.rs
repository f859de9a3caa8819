//! `braincode run --continue` (this project's latest session) and `braincode sessions show`
//! (a session as a conversation), end to end through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{
    braincode, configure_one_model, journal, requests_text_after, run_json, types,
};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use serde_json::{Value, json};

/// Each request token gets its own answer; the newest request of a continued session also
/// carries the older tokens (in the continuity block), so the newest rules come first.
async fn server() -> ScriptedServer {
    let rule =
        |token: &str, answer: &str| (Matcher::any_message_contains(token), Reply::text(answer));
    let mut script = Script::new();
    for (matcher, reply) in [
        rule("ALPHA_THREE", "REPLY_THREE the third answer"),
        rule("BRAVO_ONE", "REPLY_BRAVO"),
        rule("ALPHA_TWO", "REPLY_TWO the second answer"),
        rule(
            "ALPHA_ONE",
            "REPLY_ONE the first answer\nwith a second line",
        ),
    ] {
        script = script.always(matcher, reply);
    }
    ScriptedServer::start(script).await
}

fn session_of(report: &Value) -> String {
    report["sessionId"].as_str().unwrap().to_string()
}

/// The position of each needle in `haystack`, which must contain them all in this order.
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        let at = haystack[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing or out of order in:\n{haystack}"));
        from += at + needle.len();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_picks_this_projects_latest_session_and_show_tells_it() {
    let server = server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project_a = TempRepo::new();
    let project_b = TempRepo::new();

    let first = run_json(&home, project_a.path(), &[], "ALPHA_ONE what is here?", &[]).await;
    let session_a = session_of(&first);
    let second = run_json(&home, project_a.path(), &["-c"], "ALPHA_TWO and then?", &[]).await;
    assert_eq!(session_of(&second), session_a, "-c continues A's session");
    let other = run_json(&home, project_b.path(), &[], "BRAVO_ONE elsewhere", &[]).await;
    let session_b = session_of(&other);
    assert_ne!(session_b, session_a);

    // B's session is newer, but --continue in A continues A's.
    let before = server.chat_requests().len();
    let third = run_json(
        &home,
        project_a.path(),
        &["--continue"],
        "ALPHA_THREE last one",
        &[],
    )
    .await;
    assert_eq!(session_of(&third), session_a);
    assert!(
        third["modelSummary"]
            .as_str()
            .unwrap()
            .contains("REPLY_THREE")
    );
    let sent = requests_text_after(&server, before);
    assert!(sent.contains("ALPHA_THREE"), "{sent}");
    assert!(
        sent.contains("ALPHA_TWO") && sent.contains("REPLY_TWO"),
        "the earlier request and answer were sent along: {sent}"
    );
    assert!(!sent.contains("BRAVO"), "nothing of B's session: {sent}");
    let records = journal(&home, &session_a);
    let kinds = types(&records);
    assert_eq!(kinds.iter().filter(|t| *t == "run_start").count(), 3);
    assert_eq!(kinds.iter().filter(|t| *t == "run_end").count(), 3);
    assert_eq!(
        types(&journal(&home, &session_b))
            .iter()
            .filter(|t| *t == "run_start")
            .count(),
        1
    );

    // The conversation, in order, answers in full.
    let out = braincode(
        &home,
        project_b.path(),
        &["sessions", "show", &session_a[..session_a.len() - 2]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    assert_in_order(
        &out.stdout,
        &[
            &format!(
                "Session {} ({session_a}) · 3 runs",
                braincode_protocol::short_form(&session_a)
            ),
            "── Run 1",
            "answered",
            "> ALPHA_ONE what is here?",
            "REPLY_ONE the first answer\nwith a second line",
            "── Run 2",
            "> ALPHA_TWO and then?",
            "REPLY_TWO the second answer",
            "── Run 3",
            "> ALPHA_THREE last one",
            "REPLY_THREE the third answer",
        ],
    );
    assert!(out.stdout.contains("model test/any"), "{}", out.stdout);

    let out = braincode(
        &home,
        project_a.path(),
        &["sessions", "show", &session_a, "--json"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let runs: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let prompts: Vec<&str> = runs.iter().map(|r| r["prompt"].as_str().unwrap()).collect();
    assert_eq!(
        prompts,
        [
            "ALPHA_ONE what is here?",
            "ALPHA_TWO and then?",
            "ALPHA_THREE last one"
        ]
    );
    for (index, run) in runs.iter().enumerate() {
        assert_eq!(run["runIndex"], index + 1);
        assert_eq!(run["status"], "answered", "{run}");
        assert_eq!(run["error"], Value::Null);
        assert!(run["startedAt"].as_i64().unwrap() > 0);
        assert!(run["durationMs"].is_u64(), "{run}");
    }
    assert_eq!(
        runs[0]["answer"],
        "REPLY_ONE the first answer\nwith a second line"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_without_a_session_here_is_a_clear_error() {
    let server = server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let project_a = TempRepo::new();
    let empty = TempRepo::new();
    run_json(&home, project_a.path(), &[], "ALPHA_ONE hi", &[]).await;
    let requests = server.chat_requests().len();

    let out = braincode(
        &home,
        empty.path(),
        &["run", "--continue", "ALPHA_TWO more"],
    )
    .await;
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let root = empty.path().canonicalize().unwrap();
    assert!(
        out.stderr.contains(&format!(
            "no earlier session in {}; start one with `braincode run <task>`",
            root.display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(
        server.chat_requests().len(),
        requests,
        "no model was called"
    );
    assert_eq!(
        std::fs::read_dir(home.path().join("sessions"))
            .unwrap()
            .count(),
        1,
        "no session was started"
    );

    // --continue and --session do not go together (a usage error).
    let out = braincode(
        &home,
        project_a.path(),
        &["run", "-c", "--session", "x", "ALPHA_TWO"],
    )
    .await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--session"), "{}", out.stderr);
}

/// Writes a journal by hand: one JSON record per line, `raw` lines inserted where given.
fn write_journal(home: &TempHome, id: &str, lines: &[String]) {
    let dir = home.path().join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(dir.join(format!("{id}.jsonl")), text).unwrap();
}

fn line(value: Value) -> String {
    value.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_runs_and_malformed_lines_are_shown_not_fatal() {
    let home = TempHome::new();
    let project = TempRepo::new();
    let root = project.path().to_str().unwrap();
    write_journal(
        &home,
        "20261201-crash1",
        &[
            line(
                json!({"timestamp": 1_000, "type": "run_start", "prompt": "first ask",
                "projectSupport": {"root": root}}),
            ),
            line(
                json!({"timestamp": 2_000, "type": "run_end", "summary": "first reply",
                "status": "answered"}),
            ),
            "this line is not a record".to_string(),
            line(
                json!({"timestamp": 3_000, "type": "run_start", "prompt": "second ask",
                "projectSupport": {"root": root}}),
            ),
            line(
                json!({"timestamp": 3_100, "type": "worker_start", "phase": "primary",
                "worker": "backend", "goal": "g", "model": "test/backend",
                "agentSessionId": "primary-1", "attempt": 1}),
            ),
            line(json!({"timestamp": 4_000, "type": "run_start", "prompt": "third ask"})),
            line(
                json!({"timestamp": 4_500, "type": "run_error", "error": "cancelled by Ctrl-C",
                "kind": "aborted", "willFallback": false}),
            ),
        ],
    );

    let out = braincode(
        &home,
        project.path(),
        &["sessions", "show", "20261201-crash1"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("warning: skipped line 3 of")
            && out.stderr.contains("not a journal record"),
        "{}",
        out.stderr
    );
    assert_in_order(
        &out.stdout,
        &[
            "Session 20261201-cra (20261201-crash1) · 3 runs",
            "── Run 1",
            "> first ask",
            "first reply",
            "── Run 2",
            "model test/backend · interrupted",
            "> second ask",
            "(interrupted: no answer)",
            "── Run 3",
            "aborted",
            "> third ask",
            "aborted: cancelled by Ctrl-C",
        ],
    );

    let out = braincode(
        &home,
        project.path(),
        &["sessions", "show", "20261201-crash1", "--json"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("line 3"), "{}", out.stderr);
    let runs: Vec<Value> = serde_json::from_str(&out.stdout).unwrap();
    let statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["answered", "interrupted", "aborted"]);
    assert_eq!(runs[1]["answer"], Value::Null);
    assert_eq!(runs[1]["error"], Value::Null);
    assert_eq!(runs[1]["durationMs"], Value::Null);
    assert_eq!(runs[2]["error"], "cancelled by Ctrl-C");
    assert_eq!(runs[2]["durationMs"], 500);

    // The snapshot view is still there.
    let out = braincode(
        &home,
        project.path(),
        &[
            "sessions",
            "show",
            "20261201-crash1",
            "--snapshot",
            "--max-entries",
            "3",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("Session 20261201-crash1 · status"),
        "{}",
        out.stdout
    );
}
