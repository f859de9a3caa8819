//! MCP in real runs: a real MCP server (the test server, over stdio, in the OS sandbox) and
//! scripted models. The primary finds a tool with `mcp_search` and calls it with `mcp_call`;
//! a denied or read-only-run write tool never reaches the server; a role scoped to a server
//! is the only one that sees (and starts) it; a crashing server is reported, restarted once,
//! and the run still answers once; a slow server never holds up the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use crate::support::{self, BrainConfig, Matcher, ModelCall, Reply, Script, TestOutcome, TestRun};
use braincode_llm::ChatMessage;
use braincode_protocol::{McpConnect, Role, ToolExecutionSummary, ToolStage};
use braincode_runtime::McpHubCache;
use braincode_runtime::PermissionMode;
use braincode_test_support::mcp::test_server_binary;
use serde_json::{Value, json};

const PROMPT: &str = "Use the project's tools to look this up and tell me what you found";
/// A task the planner routes (not the fast path).
const TEAM_PROMPT: &str = "Add an index for the session lookup query and fix the token validation";

/// `mcp.json` with one stdio test server per `(name, env)`, in the OS sandbox.
fn mcp_json(servers: &[(&str, Value)]) -> String {
    mcp_json_with(servers, true)
}

/// `mcp.json` with one stdio test server per `(name, env)`; unsandboxed servers can write
/// logs outside the project.
fn mcp_json_with(servers: &[(&str, Value)], sandbox: bool) -> String {
    let bin = test_server_binary();
    let entries: serde_json::Map<String, Value> = servers
        .iter()
        .map(|(name, env)| {
            (
                (*name).to_string(),
                json!({"command": bin, "args": ["--stdio"], "env": env, "sandbox": sandbox}),
            )
        })
        .collect();
    json!({ "mcpServers": entries }).to_string()
}

/// A primary that makes `calls` tool calls in turn, then answers with every tool result.
fn primary_calling(calls: Vec<(&'static str, Value)>) -> Script {
    support::primary_calling(calls, " | ")
}

/// The primary's first request.
fn first_primary(outcome: &TestOutcome) -> ModelCall {
    outcome
        .requests
        .calls()
        .iter()
        .find(|c| Matcher::primary().matches(c))
        .cloned()
        .expect("a primary request")
}

fn ends<'a>(outcome: &'a TestOutcome, tool: &str) -> Vec<&'a ToolExecutionSummary> {
    outcome
        .journal
        .of_type::<ToolExecutionSummary>()
        .into_iter()
        .filter(|t| t.tool_name == tool && t.stage == ToolStage::End)
        .collect()
}

fn last_report(outcome: &TestOutcome) -> braincode_protocol::McpConnectReport {
    outcome
        .journal
        .of_type::<McpConnect>()
        .last()
        .map(|r| r.report.clone())
        .expect("an mcp_connect record")
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn the_primary_finds_a_tool_with_mcp_search_and_calls_it() {
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
        .script(primary_calling(vec![
            ("mcp_search", json!({"query": "echo"})),
            (
                "mcp_call",
                json!({"name": "mcp__t__echo", "arguments": {"text": "hello from mcp"}}),
            ),
        ]))
        .run()
        .await;
    let answer = &outcome.report.model_summary;
    assert!(answer.contains("mcp__t__echo"), "{answer}");
    assert!(answer.contains("input schema"), "{answer}");
    assert!(answer.contains("hello from mcp"), "{answer}");
    // The primary was offered the two small tools, not the server's schemas.
    let primary = first_primary(&outcome);
    let names = primary.tool_names();
    assert!(
        names.contains(&"mcp_search") && names.contains(&"mcp_call"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    // The journal names the real tool, with its output.
    let echo = ends(&outcome, "mcp__t__echo");
    assert_eq!(echo.len(), 1, "{:?}", outcome.journal.types());
    assert!(!echo[0].is_error);
    assert!(
        echo[0]
            .output
            .as_deref()
            .unwrap_or_default()
            .contains("hello from mcp")
    );
    let report = last_report(&outcome);
    assert_eq!(report.connected.len(), 1, "{report:?}");
    assert!(report.connected[0].tool_count.unwrap_or_default() >= 5);
    assert_eq!(outcome.report.mcp.as_ref(), Some(&report));
}

#[tokio::test]
async fn a_denied_mcp_tool_is_refused_and_never_reaches_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls.log");
    let marker = dir.path().join("marker.txt");
    let env = json!({"MCP_TEST_CALL_LOG": calls});
    let tools_json = json!({"permissions": {"tools": [
        {"pattern": "mcp__t__write_*", "policy": "deny", "reason": "no writes through MCP"}
    ]}});
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json_with(&[("t", env)], false))
        .home_file("tools.json", &tools_json.to_string())
        .permission(PermissionMode::Yes)
        .script(primary_calling(vec![
            (
                "mcp_call",
                json!({"name": "mcp__t__write_marker", "arguments": {"path": marker, "text": "pwned"}}),
            ),
            ("mcp__t__echo", json!({"text": "still works"})),
        ]))
        .run()
        .await;
    assert!(!marker.exists(), "the denied tool ran");
    let answer = &outcome.report.model_summary;
    assert!(answer.contains("no writes through MCP"), "{answer}");
    // Called directly by name (not offered: resolved), echo ran.
    assert!(answer.contains("still works"), "{answer}");
    let log = log_lines(&calls);
    assert_eq!(log, ["echo"], "calls that reached the server");
}

#[tokio::test]
async fn a_read_only_run_cannot_call_a_tool_its_server_does_not_mark_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker.txt");
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
        .script(primary_calling(vec![
            ("mcp_search", json!({"query": ""})),
            (
                "mcp_call",
                json!({"name": "mcp__t__write_marker", "arguments": {"path": marker, "text": "x"}}),
            ),
        ]))
        .run()
        .await;
    assert!(!marker.exists(), "a read-only run wrote through MCP");
    let answer = &outcome.report.model_summary;
    assert!(answer.contains("may only read"), "{answer}");
    // The search does not offer it either.
    assert!(!answer.contains("## mcp__t__write_marker"), "{answer}");
    assert!(
        answer.contains("not available in this run's permission mode"),
        "{answer}"
    );
}

#[tokio::test]
async fn a_server_scoped_to_dba_is_seen_and_started_by_dba_alone() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("db-starts.log");
    let bin = test_server_binary();
    // The db server logs each start before it serves.
    let mcp = json!({"mcpServers": {
        "db": {"command": "sh", "args": ["-c", format!("echo start >> '{}'; exec '{}' --stdio", starts.display(), bin.display())], "sandbox": false},
        "shared": {"command": bin, "args": ["--stdio"]}
    }});
    let script = Script::new()
        .always(
            Matcher::router(),
            Reply::json(&support::router_decision_json(
                Role::Backend,
                &[Role::Dba, Role::Security],
            )),
        )
        .when_fn(Matcher::any_support(), |call| {
            Reply::json(&support::worker_result_for(call, "done"))
        })
        .always(
            Matcher::review(),
            Reply::json(&support::review_json(
                braincode_protocol::ReviewVerdict::Approved,
            )),
        )
        .always(Matcher::primary(), Reply::text("merged"));
    let outcome = TestRun::new(TEAM_PROMPT)
        .brain(BrainConfig::per_role().mcp_servers(Role::Dba, &["db"]))
        .home_file("mcp.json", &mcp.to_string())
        .script(script)
        .run()
        .await;
    let search_description = |call: &ModelCall| {
        call.request
            .tools
            .iter()
            .find(|t| t.name == "mcp_search")
            .map(|t| t.description.clone())
    };
    let by_role = |role: Role| {
        outcome
            .requests
            .calls()
            .iter()
            .find(|c| c.role() == Some(role))
            .cloned()
            .unwrap_or_else(|| {
                let seen: Vec<String> = outcome
                    .requests
                    .calls()
                    .iter()
                    .map(|call| call.describe())
                    .collect();
                panic!(
                    "no request of {role}: {seen:#?} {:?}",
                    outcome.report.warnings
                )
            })
    };
    let dba = search_description(&by_role(Role::Dba)).expect("dba gets mcp_search");
    assert!(dba.contains("db") && !dba.contains("shared"), "{dba}");
    let security = search_description(&by_role(Role::Security)).expect("security sees shared");
    assert!(
        security.contains("shared") && !security.contains("(db"),
        "{security}"
    );
    let primary = search_description(&by_role(Role::Backend)).expect("primary sees shared");
    assert!(
        !primary.contains("db,") && !primary.contains("(db"),
        "{primary}"
    );
    assert!(outcome.report.model_summary.contains("merged"));

    // Without a dba worker the db server is never started.
    let first_run_starts = log_lines(&starts).len();
    assert!(first_run_starts <= 1, "{first_run_starts}");
    std::fs::remove_file(&starts).ok();
    let outcome = TestRun::new(TEAM_PROMPT)
        .brain(BrainConfig::per_role().mcp_servers(Role::Dba, &["db"]))
        .home_file("mcp.json", &mcp.to_string())
        .script(primary_calling(vec![("mcp_search", json!({"query": ""}))]))
        .run()
        .await;
    assert!(
        !outcome.report.model_summary.contains("mcp__db__"),
        "{}",
        outcome.report.model_summary
    );
    assert!(
        log_lines(&starts).is_empty(),
        "db started without a dba worker"
    );
    let report = last_report(&outcome);
    let db = report
        .pending
        .iter()
        .find(|s| s.name == "db")
        .expect("db is pending");
    assert_eq!(
        db.reason.as_deref(),
        Some("starts when a role that may use it runs")
    );
}

/// A server runs in the OS sandbox: even a tool the run lets through (`--yes`) cannot write
/// outside the project. (A user-level server starts outside the project: it names project
/// files by their full path.)
#[tokio::test]
async fn a_sandboxed_server_cannot_write_outside_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside.txt");
    let project = tempfile::tempdir().unwrap();
    let inside = std::fs::canonicalize(project.path())
        .unwrap()
        .join("inside.txt");
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
        .project_dir(project.path())
        .permission(PermissionMode::Yes)
        .script(primary_calling(vec![
            (
                "mcp_call",
                json!({"name": "mcp__t__write_marker", "arguments": {"path": outside, "text": "escaped"}}),
            ),
            (
                "mcp_call",
                json!({"name": "mcp__t__write_marker", "arguments": {"path": inside, "text": "fine"}}),
            ),
        ]))
        .run()
        .await;
    assert!(
        !outside.exists(),
        "the sandboxed server wrote outside the project"
    );
    assert_eq!(
        std::fs::read_to_string(&inside).ok().as_deref(),
        Some("fine"),
        "{}",
        outcome.report.model_summary
    );
}

#[tokio::test]
async fn a_crashing_server_is_reported_restarted_once_and_the_run_answers() {
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
        .script(primary_calling(vec![
            (
                "mcp_call",
                json!({"name": "mcp__t__crash", "arguments": {}}),
            ),
            (
                "mcp_call",
                json!({"name": "mcp__t__echo", "arguments": {"text": "after the crash"}}),
            ),
        ]))
        .permission(PermissionMode::Yes)
        .run()
        .await;
    let answer = &outcome.report.model_summary;
    assert!(answer.contains("crashing on purpose"), "{answer}");
    assert!(answer.contains("code 3"), "{answer}");
    assert!(answer.contains("after the crash"), "{answer}");
    assert!(outcome.report.error.is_none(), "{:?}", outcome.report.error);
    let connects = outcome.journal.of_type::<McpConnect>();
    assert!(
        connects.iter().any(|c| c
            .report
            .connected
            .iter()
            .any(|s| s.reason.as_deref().is_some_and(|r| r.contains("restarted")))),
        "{connects:?}"
    );
}

#[tokio::test]
async fn a_slow_background_server_never_holds_up_the_run() {
    let outcome = TestRun::new(PROMPT)
        .home_file(
            "mcp.json",
            &mcp_json(&[("slow", json!({"MCP_TEST_STARTUP_DELAY_MS": "30000"}))]),
        )
        .script(
            Script::new()
                .always(
                    Matcher::router(),
                    Reply::json(&support::router_decision_json(Role::Backend, &[])),
                )
                .always(Matcher::primary(), Reply::text("no tools needed")),
        )
        .run()
        .await;
    assert_eq!(outcome.report.model_summary, "no tools needed");
    // The run ended while the server was still starting: nothing waited for it.
    let report = outcome.report.mcp.clone().expect("an MCP report");
    assert!(report.connected.is_empty(), "{report:?}");
    assert_eq!(report.pending.len(), 1, "{report:?}");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_with_its_exit_code_and_stderr() {
    let outcome = TestRun::new(PROMPT)
        .home_file(
            "mcp.json",
            &mcp_json(&[("broken", json!({"MCP_TEST_EXIT_AT_START": "7"}))]),
        )
        .script(primary_calling(vec![(
            "mcp_search",
            json!({"query": "echo"}),
        )]))
        .run()
        .await;
    let answer = &outcome.report.model_summary;
    assert!(answer.contains("broken: unavailable"), "{answer}");
    assert!(answer.contains("code 7"), "{answer}");
    let report = last_report(&outcome);
    let failed = report.failed.first().expect("a failed server");
    let error = failed.error.as_deref().unwrap_or_default();
    assert!(
        error.contains("code 7") && error.contains("refusing to start"),
        "{error}"
    );
}

/// An `eager` server is waited for (within the startup budget) before the agent's first
/// request, and `schemas: eager` offers its tools with their full schemas from the start.
#[tokio::test]
async fn an_eager_server_with_eager_schemas_is_offered_tool_by_tool() {
    let bin = test_server_binary();
    let mcp = json!({"mcpServers": {"t": {
        "command": bin, "args": ["--stdio"], "loading": "eager", "schemas": "eager",
        "env": {"MCP_TEST_STARTUP_DELAY_MS": "300"}
    }}});
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp.to_string())
        .script(primary_calling(vec![(
            "mcp__t__echo",
            json!({"text": "eager echo"}),
        )]))
        .run()
        .await;
    let primary = first_primary(&outcome);
    let names = primary.tool_names();
    assert!(names.contains(&"mcp__t__echo"), "{names:?}");
    // A read-only run offers only the tools the server marks read-only.
    assert!(!names.contains(&"mcp__t__write_marker"), "{names:?}");
    let add = primary
        .request
        .tools
        .iter()
        .find(|t| t.name == "mcp__t__add")
        .unwrap();
    assert!(
        add.parameters["properties"]["a"].is_object(),
        "{}",
        add.parameters
    );
    assert!(
        outcome.report.model_summary.contains("eager echo"),
        "{}",
        outcome.report.model_summary
    );
}

/// The requests of an interactive session share their MCP servers: the second run reuses the
/// first run's server (one start), and a changed configuration starts a fresh one.
#[tokio::test]
async fn a_sessions_runs_reuse_their_servers_until_the_config_changes() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts.log");
    let bin = test_server_binary();
    let mcp = |extra: &str| {
        json!({"mcpServers": {"t": {
            "command": "sh",
            "args": ["-c", format!("echo start >> '{}'; exec '{}' --stdio", starts.display(), bin.display())],
            "sandbox": false, "env": {"EXTRA": extra}
        }}})
        .to_string()
    };
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    );
    let hubs = McpHubCache::new();
    let project = tempfile::tempdir().unwrap();
    let echo = |text: &'static str| {
        primary_calling(vec![(
            "mcp_call",
            json!({"name": "mcp__t__echo", "arguments": {"text": text}}),
        )])
    };
    for (config, text) in [("a", "first"), ("a", "second"), ("b", "third")] {
        let outcome = TestRun::new(PROMPT)
            .home_file("mcp.json", &mcp(config))
            .script(echo(text))
            .in_session(hubs.clone(), runtime.clone())
            .project_dir(project.path())
            .run()
            .await;
        assert!(
            outcome.report.model_summary.contains(text),
            "{}",
            outcome.report.model_summary
        );
    }
    assert_eq!(log_lines(&starts).len(), 2, "one start per configuration");
    hubs.shutdown().await;
    if let Ok(runtime) = Arc::try_unwrap(runtime) {
        runtime.shutdown_background();
    }
}

/// An image an MCP tool returns reaches a model that reads images (after the turn's tool
/// results), and a model that does not is told it is not shown.
#[tokio::test]
async fn an_image_from_an_mcp_tool_reaches_a_model_that_reads_images() {
    for vision in [true, false] {
        let brain = BrainConfig::per_role();
        let models: Vec<braincode_protocol::ModelDefinition> = brain
            .model_ids()
            .iter()
            .map(|id| braincode_protocol::ModelDefinition {
                supports_vision: vision,
                ..support::scripted_model(id)
            })
            .collect();
        let outcome = TestRun::new(PROMPT)
            .brain(brain)
            .models_json(json!({ "models": models }))
            .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
            .script(primary_calling(vec![(
                "mcp_call",
                json!({"name": "mcp__t__image", "arguments": {}}),
            )]))
            .run()
            .await;
        let after = outcome
            .requests
            .calls()
            .iter()
            .filter(|c| Matcher::primary().matches(c))
            .nth(1)
            .cloned()
            .expect("a second primary request");
        let image_parts = after
            .request
            .messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::User { content } => Some(content),
                _ => None,
            })
            .flatten()
            .filter(|p| matches!(p, braincode_llm::ContentPart::Image { mime_type, .. } if mime_type == "image/png"))
            .count();
        let tool_text = after.tool_results().join("\n");
        if vision {
            assert_eq!(image_parts, 1, "{tool_text}");
            assert!(tool_text.contains("its images follow"), "{tool_text}");
        } else {
            assert_eq!(image_parts, 0, "{tool_text}");
            assert!(tool_text.contains("does not read images"), "{tool_text}");
        }
    }
}

/// A misspelt built-in tool gets the loop's own answer (the tools there are), not an MCP one;
/// an `mcp__` name of a server the agent cannot use says which servers it can.
#[tokio::test]
async fn unknown_names_get_the_answer_that_fits_them() {
    let outcome = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp_json(&[("t", json!({}))]))
        .script(primary_calling(vec![
            ("read_fiel", json!({"path": "x"})),
            ("mcp__other__x", json!({})),
        ]))
        .run()
        .await;
    let answer = &outcome.report.model_summary;
    assert!(
        answer.contains("unknown tool \"read_fiel\"; available tools:"),
        "{answer}"
    );
    assert!(
        answer.contains("not a tool of an MCP server you can use (t)"),
        "{answer}"
    );
}

/// Cancelling a run while an MCP call hangs ends the run at once (aborted) and stops the
/// server's process.
#[tokio::test]
async fn cancelling_a_run_during_an_mcp_call_stops_the_call_and_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let calls = dir.path().join("calls.log");
    let bin = test_server_binary();
    // `$$` is how mcp.json writes a literal `$`: the shell sees `echo $$`.
    let mcp = json!({"mcpServers": {"t": {
        "command": "sh",
        "args": ["-c", format!("echo $$$$ > '{}'; exec '{}' --stdio", pid_file.display(), bin.display())],
        "env": {"MCP_TEST_CALL_LOG": calls},
        "sandbox": false
    }}});
    let run = TestRun::new(PROMPT)
        .home_file("mcp.json", &mcp.to_string())
        .script(primary_calling(vec![(
            "mcp_call",
            json!({"name": "mcp__t__hang", "arguments": {}}),
        )]))
        .start();
    // The call has reached the server.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !log_lines(&calls).iter().any(|l| l == "hang") {
        assert!(
            std::time::Instant::now() < deadline,
            "the hang call never reached the server"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    run.cancel("test cancelled");
    let outcome = run.finish().await;
    assert_eq!(
        outcome.report.status,
        braincode_protocol::FinalStatus::Aborted
    );
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state == "Z" || state == "X")
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gone() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone(), "the MCP server {pid} outlived the cancelled run");
}
