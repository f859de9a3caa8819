//! `braincode mcp add tavily` through the binary: the key goes to auth.json (0600) and the
//! user's mcp.json gets a server entry that refers to it, never the key itself; an existing
//! entry is kept unless --force; no key at all is a clear error that changes nothing. Then a
//! run against a Tavily-like server (the MCP test server's `tavily_search`, started with the
//! entry's key reference) searches twice for the same thing: the server answers once, the
//! run's evidence cache the second time, and the next run asks the server again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;

use crate::run_harness::{braincode_env, configure_one_model, journal, repo, run_json};
use braincode_test_support::mcp::test_server_binary;
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};

fn read_json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_add_tavily_stores_the_key_apart_and_web_results_are_reused_within_a_run() {
    let home = TempHome::new();
    let project = repo();
    let mcp_path = home.path().join("mcp.json");
    let auth_path = home.path().join("auth.json");
    let no_env = [("TAVILY_API_KEY", "")];

    // No key anywhere: a clear error, and nothing written.
    let out = braincode_env(&home, project.path(), &["mcp", "add", "tavily"], &no_env).await;
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("no Tavily API key: pass --key KEY"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("TAVILY_API_KEY"), "{}", out.stderr);
    assert!(!mcp_path.exists() && !auth_path.exists());

    // A key on the command line: auth.json (0600) holds it, mcp.json only refers to it.
    let out = braincode_env(
        &home,
        project.path(),
        &["mcp", "add", "tavily", "--key", "tvly-first-key"],
        &no_env,
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Added MCP server tavily"),
        "{}",
        out.stdout
    );
    let mcp = read_json(&mcp_path);
    let entry = &mcp["mcpServers"]["tavily"];
    assert_eq!(entry["command"], "npx", "{mcp:#}");
    assert_eq!(entry["args"], json!(["-y", "tavily-mcp@latest"]));
    assert_eq!(entry["env"]["TAVILY_API_KEY"], "${BRAINCODE_AUTH:tavily}");
    assert!(
        !std::fs::read_to_string(&mcp_path)
            .unwrap()
            .contains("tvly-")
    );
    assert_eq!(
        read_json(&auth_path)["providers"]["tavily"],
        "tvly-first-key"
    );
    for path in [&auth_path, &mcp_path] {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }

    // An existing entry is kept unless --force (and the stored key with it).
    let before = std::fs::read_to_string(&mcp_path).unwrap();
    let out = braincode_env(
        &home,
        project.path(),
        &["mcp", "add", "tavily", "--key", "tvly-second-key"],
        &no_env,
    )
    .await;
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stderr.contains("already has a server named \"tavily\"")
            && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    assert_eq!(std::fs::read_to_string(&mcp_path).unwrap(), before);
    assert_eq!(
        read_json(&auth_path)["providers"]["tavily"],
        "tvly-first-key"
    );
    // --force with the key from TAVILY_API_KEY; the other servers of the file stay.
    let mut with_other = read_json(&mcp_path);
    with_other["mcpServers"]["docs"] = json!({"url": "http://127.0.0.1:9/mcp"});
    home.write_json("mcp.json", &with_other);
    let out = braincode_env(
        &home,
        project.path(),
        &["mcp", "add", "tavily", "--force"],
        &[("TAVILY_API_KEY", "tvly-env-key")],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Replaced"), "{}", out.stdout);
    assert!(
        out.stdout.contains("saved from TAVILY_API_KEY"),
        "{}",
        out.stdout
    );
    assert_eq!(read_json(&auth_path)["providers"]["tavily"], "tvly-env-key");
    assert!(read_json(&mcp_path)["mcpServers"]["docs"].is_object());

    // The entry as written, its command swapped for the Tavily-like test server (npx would
    // need the network): the key reaches the server through ${BRAINCODE_AUTH:tavily}.
    let calls = tempfile::tempdir().unwrap();
    let call_log = calls.path().join("calls.log");
    let mut mcp = read_json(&mcp_path);
    let entry = mcp["mcpServers"]["tavily"].as_object_mut().unwrap();
    entry.insert("command".into(), json!(test_server_binary()));
    entry.insert("args".into(), json!(["--stdio"]));
    entry.insert("sandbox".into(), json!(false));
    let env = entry["env"].as_object_mut().unwrap();
    env.insert("MCP_TEST_TAVILY".into(), json!("1"));
    env.insert("MCP_TEST_CALL_LOG".into(), json!(call_log));
    mcp["mcpServers"].as_object_mut().unwrap().remove("docs");
    home.write_json("mcp.json", &mcp);

    let search =
        json!({"name": "mcp__tavily__tavily_search", "arguments": {"query": "rust 2024 edition"}});
    let script = || {
        Script::new().when(
            Matcher::model("any"),
            [
                Reply::tool_call("mcp_call", search.clone()),
                Reply::tool_call("mcp_search", json!({"query": "browser"})),
                Reply::tool_call("mcp_call", search.clone()),
                Reply::text("The 2024 edition is out."),
            ],
        )
    };
    let mut searches_after = Vec::new();
    for _ in 0..2 {
        let model = ScriptedServer::start(script()).await;
        configure_one_model(&home, &model);
        let report = run_json(&home, project.path(), &[], "say hi", &[]).await;
        let session = report["sessionId"].as_str().unwrap().to_string();
        let ends: Vec<Value> = journal(&home, &session)
            .into_iter()
            .filter(|r| {
                r["type"] == "tool_execution_summary"
                    && r["toolName"] == "mcp__tavily__tavily_search"
                    && r["stage"] == "end"
            })
            .collect();
        assert_eq!(ends.len(), 2, "{ends:#?}");
        for end in &ends {
            assert_ne!(end["isError"], true, "{end:#}");
            assert!(
                end["output"]
                    .as_str()
                    .unwrap()
                    .contains("rust 2024 edition"),
                "{end:#}"
            );
        }
        let log = std::fs::read_to_string(&call_log).unwrap_or_default();
        searches_after.push(log.lines().filter(|l| *l == "tavily_search").count());
    }
    // One search reached the server per run: the repeat was answered from the run's cache.
    assert_eq!(searches_after, [1, 2]);
}
