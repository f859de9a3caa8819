//! `braincode run` with a real MCP server, through the binary: the model finds and calls an
//! MCP tool; the run's journal replays identically (the harness checks every run), and a
//! replay never starts the server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{configure_one_model, journal, replay_check, repo, run_json, types};
use braincode_test_support::mcp::test_server_binary;
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_calls_an_mcp_tool_and_its_replay_starts_no_server() {
    let server = ScriptedServer::start(Script::new().when(
        Matcher::model("any"),
        [
            Reply::tool_call("mcp_search", json!({"query": "echo"})),
            Reply::tool_call(
                "mcp_call",
                json!({"name": "mcp__t__echo", "arguments": {"text": "through the binary"}}),
            ),
            Reply::text("The echo tool said: through the binary."),
        ],
    ))
    .await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let bin = test_server_binary();
    home.write_json(
        "mcp.json",
        &json!({"mcpServers": {"t": {"command": bin, "args": ["--stdio"]}}}),
    );
    let project = repo();
    let report = run_json(&home, project.path(), &[], "say hi", &[]).await;
    let session = report["sessionId"].as_str().unwrap().to_string();
    let records = journal(&home, &session);
    let kinds = types(&records);
    assert!(kinds.iter().any(|t| t == "mcp_connect"), "{kinds:?}");
    let echo = records
        .iter()
        .find(|r| {
            r["type"] == "tool_execution_summary"
                && r["toolName"] == "mcp__t__echo"
                && r["stage"] == "end"
        })
        .unwrap_or_else(|| panic!("no echo call in {kinds:?}"));
    assert!(
        echo["output"]
            .as_str()
            .unwrap()
            .contains("through the binary"),
        "{echo}"
    );
    assert_eq!(
        report["mcp"]["connected"][0]["name"], "t",
        "{}",
        report["mcp"]
    );
    drop(server);

    // The server's command now leaves a marker: a replay must not run it.
    let marker = project.path().join("server-started");
    home.write_json(
        "mcp.json",
        &json!({"mcpServers": {"t": {"command": "sh", "args": ["-c", format!("touch '{}'", marker.display())], "sandbox": false}}}),
    );
    replay_check(&home, project.path(), &session, &[]).await;
    assert!(!marker.exists(), "the replay started the MCP server");
}
