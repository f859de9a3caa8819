//! A real third-party MCP server from the npm registry, `@modelcontextprotocol/server-filesystem`
//! (installed by `.ci/run` into `~/.cache/braincode/npm`), run by a real run in the OS
//! sandbox: the primary finds its tools with `mcp_search`, lists the project with one of
//! them, and cannot write through it in a read-only run. Skipped, saying why, when the
//! server is not installed (no npm on the machine).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use crate::support::{self, TestRun};
use serde_json::{Value, json};

/// Where `.ci/run` installs the server (`BRAINCODE_TEST_NPM_MCP` overrides).
fn server_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BRAINCODE_TEST_NPM_MCP") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(cache.join("braincode/npm/node_modules/.bin/mcp-server-filesystem"))
        .filter(|p| p.is_file())
}

#[tokio::test]
async fn the_npm_filesystem_server_lists_the_project_and_cannot_write_in_a_read_only_run() {
    let Some(server) = server_path() else {
        println!(
            "skipped: @modelcontextprotocol/server-filesystem is not installed (npm missing?); \
             `.ci/run` installs it into ~/.cache/braincode/npm"
        );
        return;
    };
    // A user-level server starts outside the project: it is given the project by name.
    let project = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(project.path()).unwrap();
    std::fs::write(root.join("NOTES.md"), "notes\n").unwrap();
    let calls: Vec<(&str, Value)> = vec![
        ("mcp_search", json!({"query": "list directory", "limit": 3})),
        (
            "mcp_call",
            json!({"name": "mcp__fs__list_directory", "arguments": {"path": root}}),
        ),
        (
            "mcp_call",
            json!({"name": "mcp__fs__write_file", "arguments": {"path": root.join("pwned.txt"), "content": "x"}}),
        ),
    ];
    let script = support::primary_calling(calls, "\n=====\n");
    let mcp =
        json!({"mcpServers": {"fs": {"command": server, "args": ["${BRAINCODE_PROJECT_DIR}"]}}});
    let outcome = TestRun::new("List the project's files with the filesystem tools")
        .home_file("mcp.json", &mcp.to_string())
        .project_dir(&root)
        .script(script)
        .run()
        .await;
    let results: Vec<&str> = outcome.report.model_summary.split("\n=====\n").collect();
    assert_eq!(results.len(), 3, "{}", outcome.report.model_summary);
    assert!(
        results[0].contains("## mcp__fs__list_directory"),
        "{}",
        results[0]
    );
    assert!(results[0].contains("input schema"), "{}", results[0]);
    assert!(results[1].contains("NOTES.md"), "{}", results[1]);
    assert!(results[2].contains("may only read"), "{}", results[2]);
    assert!(!root.join("pwned.txt").exists());
    let report = outcome.report.mcp.clone().expect("an MCP report");
    assert_eq!(report.connected.len(), 1, "{report:?}");
    assert!(
        report.connected[0].tool_count.unwrap_or_default() >= 5,
        "{report:?}"
    );
}
