//! `braincode run` end to end through the binary, against the scripted model served over real
//! HTTP: routing, isolation, fallbacks, one voice, cancellation, hooks and the journal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Stdio;
use std::time::Duration;

use crate::run_harness::{
    Output, braincode, configure, first, journal, model_requests, repo, review_reply, types,
    worker_reply,
};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

fn router_plan() -> Reply {
    Reply::json(&json!({
        "role": "backend",
        "workers": [
            {"role": "librarian", "goal": "Map where session tokens are validated", "reason": "orientation"},
            {"role": "security", "goal": "Assess the token validation", "reason": "auth code"},
            {"role": "qa", "goal": "List the tests that cover tokens", "reason": "verification"},
            {"role": "backend", "goal": "Fix the validation", "reason": "backend code"}
        ],
        "todos": [
            {"id": "map-context", "title": "Map token validation", "role": "librarian"},
            {"id": "assess-security", "title": "Assess token checks", "role": "security"},
            {"id": "list-tests", "title": "List token tests", "role": "qa"},
            {"id": "build-backend", "title": "Fix token validation", "role": "backend"}
        ],
        "dependencies": [{"from": "Map-Context", "to": "assess-security", "reason": "needs the map"}],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.82,
        "reason": "session tokens are backend work with a security angle"
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_run_routes_isolates_reviews_and_journals() {
    let script = Script::new()
        .when(Matcher::model("router"), [router_plan()])
        .when(
            Matcher::model("librarian"),
            [worker_reply(
                "Token checks live in src/token.rs MARKER_LIBRARIAN",
            )],
        )
        .when(
            Matcher::model("security"),
            [worker_reply("Empty tokens pass: reject them")],
        )
        .when(
            Matcher::model("qa"),
            [worker_reply("No test covers empty tokens")],
        )
        .when(
            Matcher::model("backend"),
            [
                Reply::tool_call("read_file", json!({"path": "src/token.rs"})),
                Reply::text(
                    "The validation only rejects empty tokens; it should also check the signature.",
                ),
            ],
        )
        .when(Matcher::model("review"), [review_reply("approved")]);
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();

    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "Fix the session token validation in the backend",
        ],
    )
    .await;
    assert_eq!(
        out.code, 0,
        "stderr: {}\nstdout: {}",
        out.stderr, out.stdout
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "approved");
    assert_eq!(report["routing"]["source"], "router-brain");
    assert_eq!(report["routing"]["primaryRole"], "backend");
    assert_eq!(report["review"]["decision"], "approved");
    assert!(
        report["modelSummary"]
            .as_str()
            .unwrap()
            .contains("signature")
    );
    let roles: Vec<&str> = report["routing"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["librarian", "security", "qa", "backend", "review"]);
    assert_eq!(report["metrics"]["toolCalls"]["total"], 1);

    // Isolation: security depends on the librarian and sees its result; qa does not.
    let security = model_requests(&server, "security");
    let qa = model_requests(&server, "qa");
    assert_eq!((security.len(), qa.len()), (1, 1));
    assert!(
        security[0].contains("MARKER_LIBRARIAN"),
        "a dependent worker gets its upstream result"
    );
    assert!(
        !qa[0].contains("MARKER_LIBRARIAN"),
        "an independent worker never sees another worker's result"
    );
    assert!(
        model_requests(&server, "backend")[0].contains("MARKER_LIBRARIAN"),
        "the primary gets worker results"
    );
    for request in server.chat_requests() {
        assert!(
            !request.all_text().contains("RAW_TRANSCRIPT_MARKER"),
            "a raw worker reply leaked into a prompt"
        );
    }
    // Invariant 3: the packet ids come from the handoff, not from the reply.
    assert!(!security[0].contains("made-up-task"));

    // The journal tells the whole story, in order.
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let t = types(&records);
    assert_eq!(t[0], "run_start", "the prompt is journaled first: {t:?}");
    assert_eq!(
        records[0]["prompt"],
        "Fix the session token validation in the backend"
    );
    assert_eq!(t.iter().filter(|x| *x == "run_start").count(), 1);
    assert!(first(&t, "routing") < first(&t, "context_plan"));
    assert!(first(&t, "context_plan") < first(&t, "todo_plan"));
    assert!(first(&t, "todo_plan") < first(&t, "worker_start"));
    let primary_start = records
        .iter()
        .position(|r| r["type"] == "worker_start" && r["phase"] == "primary")
        .unwrap();
    assert_eq!(records[primary_start]["worker"], "backend");
    assert!(first(&t, "worker_end") < primary_start);
    assert!(primary_start < first(&t, "tool_execution_summary"));
    assert!(first(&t, "tool_execution_summary") < first(&t, "review_decision"));
    assert!(first(&t, "review_decision") < first(&t, "final_report"));
    assert_eq!(t.last().unwrap(), "run_end");
    let librarian_end = records
        .iter()
        .position(|r| r["type"] == "worker_end" && r["worker"] == "librarian")
        .unwrap();
    let security_start = records
        .iter()
        .position(|r| r["type"] == "worker_start" && r["worker"] == "security")
        .unwrap();
    assert!(
        librarian_end < security_start,
        "security waited for its upstream"
    );
    let usage: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "token_usage")
        .collect();
    assert_eq!(
        usage.len(),
        7,
        "router + 3 workers + 2 primary turns + review"
    );
    assert!(usage.iter().any(|u| u["role"] == "routeBrain"
        && u["phase"] == "router"
        && u["modelId"] == "test/router"));
    assert!(
        usage
            .iter()
            .all(|u| u["usage"]["total"].as_u64().unwrap() > 0)
    );
    let routing = records.iter().find(|r| r["type"] == "routing").unwrap();
    assert_eq!(routing["source"], "router-brain");
}

/// "Explain how the backend token service works" with `router_reply` from the router, which
/// the heuristic must replace (backend primary, librarian and security support): the output,
/// the server and the home.
async fn run_with_unusable_router(router_reply: Reply) -> (Output, ScriptedServer, TempHome) {
    let script = Script::new()
        .when(Matcher::model("router"), [router_reply])
        .always(Matcher::model("librarian"), worker_reply("mapped"))
        .always(Matcher::model("security"), worker_reply("assessed"))
        .always(
            Matcher::model("backend"),
            Reply::text("Here is the explanation."),
        )
        .always(Matcher::model("review"), review_reply("approved"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &["run", "Explain how the backend token service works"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stdout.contains("Routing:  heuristic → backend"),
        "{}",
        out.stdout
    );
    (out, server, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_garbage_falls_back_to_the_heuristic_and_says_why() {
    let (out, _server, home) =
        run_with_unusable_router(Reply::text("I would pick the backend agent, probably.")).await;
    assert!(
        out.stdout.contains("router not used"),
        "the fallback reason is shown: {}",
        out.stdout
    );
    assert!(out.stdout.contains("not a usable plan"), "{}", out.stdout);
    let session = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Session:  "))
        .unwrap()
        .trim()
        .to_string();
    let records = journal(&home, &session);
    let routing = records.iter().find(|r| r["type"] == "routing").unwrap();
    assert_eq!(routing["source"], "heuristic");
    assert!(
        routing["fallbackReason"]
            .as_str()
            .unwrap()
            .contains("test/router")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_worker_model_falls_back_to_the_next_candidate() {
    let script = Script::new()
        .always(Matcher::model("router"), Reply::text("not json"))
        .always(
            Matcher::model("broken"),
            Reply::http_error(401, "{\"error\":{\"message\":\"invalid api key\"}}"),
        )
        .always(
            Matcher::model("librarian"),
            worker_reply("mapped by the fallback"),
        )
        .always(Matcher::model("backend"), Reply::text("Answer."))
        .always(Matcher::model("review"), review_reply("approved"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(
        &home,
        &server,
        &["test/broken"],
        &[("librarian", vec!["test/broken", "test/librarian"])],
    );
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "Refactor the backend handler layout",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let librarian = report["routing"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["role"] == "librarian")
        .unwrap()
        .clone();
    assert_eq!(librarian["status"], "completed");
    assert_eq!(librarian["model"], "test/librarian");
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let error = records
        .iter()
        .find(|r| r["type"] == "worker_error" && r["worker"] == "librarian")
        .unwrap();
    assert_eq!(error["willFallback"], true);
    assert_eq!(error["attempt"], 1);
    let end = records
        .iter()
        .find(|r| r["type"] == "worker_end" && r["worker"] == "librarian")
        .unwrap();
    assert_eq!(end["attempt"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_primary_candidate_fails_there_is_exactly_one_error_answer() {
    let script = Script::new()
        .always(
            Matcher::model("backend"),
            Reply::http_error(
                400,
                "{\"error\":{\"message\":\"model is overloaded in a way that is your fault\"}}",
            ),
        )
        .always(
            Matcher::model("broken"),
            Reply::http_error(403, "{\"error\":{\"message\":\"forbidden\"}}"),
        );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(
        &home,
        &server,
        &["test/broken"],
        &[("backend", vec!["test/broken", "test/backend"])],
    );
    let repo = repo();
    // A backend question with no edit wording: a backend primary and no support workers.
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--events",
            "--heuristic",
            "what does the backend api return",
        ],
    )
    .await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finals: Vec<&Value> = events.iter().filter(|e| e["event"] == "final").collect();
    assert_eq!(finals.len(), 1, "exactly one final answer");
    assert_eq!(
        events.last().unwrap()["event"],
        "final",
        "the final answer comes last"
    );
    let report = &finals[0]["report"];
    assert_eq!(report["status"], "failed");
    assert!(
        report["error"].as_str().unwrap().contains("test/backend"),
        "{report}"
    );
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let errors: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "run_error")
        .collect();
    assert_eq!(
        errors.len(),
        3,
        "one per attempt plus the closing one: {errors:?}"
    );
    assert_eq!(errors[0]["willFallback"], true);
    assert_eq!(types(&records).last().unwrap(), "run_error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vague_prompt_stops_for_clarification_before_any_worker() {
    let server = ScriptedServer::start(Script::new()).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    for prompt in ["fix it", "改一下"] {
        let out = braincode(
            &home,
            repo.path(),
            &["run", "--json", "--heuristic", prompt],
        )
        .await;
        assert_eq!(out.code, 5, "{}\n{}", out.stderr, out.stdout);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(report["status"], "needs_clarification");
        assert!(report["clarification"]["options"].as_array().unwrap().len() >= 2);
        let records = journal(&home, report["sessionId"].as_str().unwrap());
        let t = types(&records);
        assert!(t.contains(&"clarification_request".to_string()));
        assert_eq!(t[0], "run_start", "{t:?}");
        assert!(!t.iter().any(|x| x == "worker_start"), "{t:?}");
        assert_eq!(t.last().unwrap(), "run_end");
    }
    assert!(server.requests().is_empty(), "no model was called");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_add_context_and_can_block_the_run() {
    let script = Script::new().always(Matcher::model("backend"), Reply::text("hello!"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    home.write_json(
        "hooks.json",
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": "echo HOOK_CONTEXT_MARKER", "trusted": true}]}]}}),
    );
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "hello there"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(
        server
            .chat_requests()
            .iter()
            .any(|r| r.all_text().contains("HOOK_CONTEXT_MARKER"))
    );

    home.write_json(
        "hooks.json",
        &json!({"hooks": {"SessionStart": [{"hooks": [{"command": "echo 'not today' >&2; exit 2", "trusted": true}]}]}}),
    );
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "hello again"],
    )
    .await;
    assert_eq!(out.code, 4, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "blocked");
    assert!(report["error"].as_str().unwrap().contains("not today"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_cancels_promptly_records_aborted_and_prints_one_final_line() {
    let script = Script::new().always(Matcher::model("backend"), Reply::stall());
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let mut child = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args([
            "run",
            "--events",
            "--heuristic",
            "what does the backend api return",
        ])
        .current_dir(repo.path())
        .env("BRAINCODE_HOME", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Wait until the primary is talking to the (stalled) model, then press Ctrl-C.
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        let event: Value = serde_json::from_str(&line).unwrap();
        let is_start = event["event"] == "record"
            && event["entry"]["type"] == "worker_start"
            && event["entry"]["phase"] == "primary";
        seen.push(event);
        if is_start {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exited after Ctrl-C")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let finals: Vec<&Value> = seen.iter().filter(|e| e["event"] == "final").collect();
    assert_eq!(finals.len(), 1);
    assert_eq!(finals[0]["report"]["status"], "aborted");
    let records = journal(&home, finals[0]["report"]["sessionId"].as_str().unwrap());
    let last = records.last().unwrap();
    assert_eq!(last["type"], "run_error");
    assert_eq!(last["kind"], "aborted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_dispatches_specialists_within_its_budget() {
    let dispatch = |role: &str| {
        Reply::tool_call(
            "dispatch_specialist",
            json!({"role": role, "goal": format!("help as {role}")}),
        )
    };
    let script = Script::new()
        .when(
            Matcher::model("backend"),
            [
                dispatch("security"),
                dispatch("librarian"),
                dispatch("qa"),
                Reply::text("done with help"),
            ],
        )
        .always(
            Matcher::model("security"),
            worker_reply("SPECIALIST_SECURITY_FINDING"),
        )
        .always(Matcher::model("librarian"), worker_reply("mapped"))
        .always(Matcher::model("qa"), worker_reply("tested"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "what does the backend api return",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let backend = model_requests(&server, "backend");
    assert_eq!(backend.len(), 4);
    assert!(
        backend[1].contains("Specialist security (completed) — dispatch 1/2 used"),
        "{}",
        backend[1]
    );
    assert!(backend[1].contains("SPECIALIST_SECURITY_FINDING"));
    assert!(
        backend[3].contains("dispatch_specialist rejected: the dispatch budget of 2 is used up")
    );
    assert!(
        model_requests(&server, "qa").is_empty(),
        "the over-budget specialist never ran"
    );
    let supports: Vec<&str> = report["routing"]["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["phase"] == "support")
        .map(|w| w["role"].as_str().unwrap())
        .collect();
    assert_eq!(supports, ["security", "librarian"]);
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let phases: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "dynamic_dispatch")
        .map(|r| r["phase"].as_str().unwrap())
        .collect();
    assert_eq!(phases, ["request", "result", "request", "result"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_verdicts_become_exit_codes_ci_can_use() {
    for (verdict, code, status) in [
        ("changes_requested", 3, "changes_requested"),
        ("blocked", 4, "blocked"),
    ] {
        let script = Script::new()
            .always(Matcher::model("librarian"), worker_reply("mapped"))
            .always(Matcher::model("backend"), Reply::text("Refactored."))
            .always(Matcher::model("review"), review_reply(verdict));
        let server = ScriptedServer::start(script).await;
        let home = TempHome::new();
        configure(&home, &server, &[], &[]);
        let repo = repo();
        let out = braincode(
            &home,
            repo.path(),
            &[
                "run",
                "--json",
                "--heuristic",
                "Refactor the backend handler layout",
            ],
        )
        .await;
        assert_eq!(out.code, code, "{verdict}: {}\n{}", out.stderr, out.stdout);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(report["status"], status);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn references_are_inlined_contained_and_sessions_continue() {
    let script = Script::new().always(
        Matcher::model("backend"),
        Reply::text("It checks that the token is not empty."),
    );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let secret = home.write_file("secret.txt", "TOP_SECRET_VALUE");
    let prompt = format!(
        "Explain the token check in @src/token.rs and @{}",
        secret.display()
    );
    let first = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", &prompt],
    )
    .await;
    assert_eq!(first.code, 0, "{}\n{}", first.stderr, first.stdout);
    let sent = model_requests(&server, "backend").pop().unwrap();
    assert!(
        sent.contains("pub fn valid(token: &str)"),
        "the project file was inlined"
    );
    assert!(
        !sent.contains("TOP_SECRET_VALUE"),
        "a file outside the project must not reach a model"
    );
    assert!(sent.contains("could not be inlined"), "{sent}");

    let session = serde_json::from_str::<Value>(&first.stdout).unwrap()["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let second = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "--heuristic",
            "--session",
            &session[..12],
            "and for expired tokens?",
        ],
    )
    .await;
    assert_eq!(second.code, 0, "{}\n{}", second.stderr, second.stdout);
    let report: Value = serde_json::from_str(&second.stdout).unwrap();
    assert_eq!(
        report["sessionId"],
        session.as_str(),
        "a prefix resumes the same session"
    );
    let follow_up = model_requests(&server, "backend").pop().unwrap();
    assert!(follow_up.contains("Conversation so far"), "{follow_up}");
    assert!(
        follow_up.contains("It checks that the token is not empty."),
        "the earlier answer is in the continuity block"
    );
    let records = journal(&home, &session);
    assert_eq!(records.iter().filter(|r| r["type"] == "run_end").count(), 2);
}

/// A small router held to the schema echoes its placeholders (`"goal": "..."`); such a plan
/// would send workers off with nothing to do, so the heuristic plans instead and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_that_echoes_the_template_is_not_followed() {
    let echo = json!({
        "role": "qa",
        "workers": [{"role": "qa", "goal": "...", "reason": "..."}],
        "todos": [{"id": "short-stable-id", "title": "...", "role": "qa", "reason": "..."}],
        "dependencies": [], "confidence": 0.0, "reason": "..."
    });
    let (out, server, _home) = run_with_unusable_router(Reply::json(&echo)).await;
    assert!(out.stdout.contains("placeholders"), "{}", out.stdout);
    assert_eq!(
        server
            .chat_requests()
            .iter()
            .filter(|r| r.model() == Some("qa"))
            .count(),
        0,
        "the echoed plan's qa worker never ran"
    );
}

/// A worker whose model only repeats its result template (`"summary": "what you found or
/// did"`) has found nothing: the worker is asked on its next model, and with none left it is
/// `failed`, never `completed`, and its echo never reaches the primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_echoes_its_template_is_not_a_completed_result() {
    let echo = Reply::json(&json!({
        "taskId": "x", "parentId": "y",
        "progress": {"status": "completed", "summary": "one line"},
        "summary": "what you found or did",
        "artifacts": [{"kind": "file", "uri": "path", "label": "why it matters"}],
        "risks": ["..."], "nextQuestions": ["..."]
    }));
    let script = Script::new()
        .when(Matcher::model("router"), [router_plan()])
        .always(Matcher::model("librarian"), echo.clone())
        .always(Matcher::model("security"), echo)
        .always(
            Matcher::model("spare"),
            worker_reply("Empty tokens pass the check in src/token.rs"),
        )
        .always(
            Matcher::model("qa"),
            worker_reply("No test covers empty tokens"),
        )
        .always(Matcher::model("backend"), Reply::text("Done."))
        .always(Matcher::model("review"), review_reply("approved"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    // The librarian has a next model; the security worker (which needs the librarian's
    // map) has none.
    configure(
        &home,
        &server,
        &["test/spare"],
        &[("librarian", vec!["test/librarian", "test/spare"])],
    );
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--json",
            "Fix the session token validation in the backend",
        ],
    )
    .await;
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", out.stdout, out.stderr));
    let worker = |role: &str| {
        report["routing"]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["role"] == role)
            .unwrap()
            .clone()
    };
    assert_eq!(worker("librarian")["status"], "completed", "{report:#}");
    assert_eq!(worker("librarian")["model"], "test/spare", "{report:#}");
    assert_eq!(worker("security")["status"], "failed", "{report:#}");
    assert!(
        report["warnings"]
            .to_string()
            .contains("repeats the result template"),
        "{report:#}"
    );
    // The primary never saw the echo as a finding.
    let primary = model_requests(&server, "backend").join("\n");
    assert!(!primary.contains("what you found or did"), "{primary}");
}
