//! `Connection` against the real test server over stdio: handshake, tools, every result
//! kind, and every way a server fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use crate::common::*;
use braincode_mcp::{Connection, Content, Endpoint, McpError, ServerSpec};
use braincode_test_support::mcp::test_server_binary;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LONG: Duration = Duration::from_secs(20);

async fn connect(spec: &ServerSpec) -> Connection {
    Connection::connect(spec, &CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("connect failed: {e}"))
}

#[tokio::test]
async fn stdio_lists_tools_with_hints_titles_and_schemas() {
    let conn = connect(&stdio_spec("t", &[])).await;
    let info = conn.info();
    assert_eq!(info.name.as_deref(), Some("braincode-mcp-test-server"));
    assert!(info.version.is_some());
    // We offer the newest revision that still has `initialize`; this server speaks it.
    assert_eq!(info.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(
        info.instructions.as_deref(),
        Some("A server for Braincode's MCP tests.")
    );

    assert_eq!(tool_names(&conn), BASE_TOOLS);
    let tool = |name: &str| conn.tools().iter().find(|t| t.name == name).unwrap();
    for read_only in ["echo", "add", "fail", "hang", "image", "env"] {
        assert!(tool(read_only).read_only, "{read_only} is read-only");
    }
    assert!(!tool("crash").read_only);
    assert_eq!(tool("crash").destructive, None);
    assert!(!tool("write_marker").read_only);
    assert_eq!(tool("write_marker").destructive, Some(false));
    assert_eq!(tool("add").title.as_deref(), Some("Add numbers"));
    assert_eq!(
        tool("write_marker").title.as_deref(),
        Some("Write a marker file")
    );
    assert_eq!(tool("echo").description, "Returns its text.");
    let schema = &tool("echo").input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["text"]["type"], "string");
    assert_eq!(schema["required"], json!(["text"]));
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test]
async fn every_page_of_tools_is_listed() {
    let conn = connect(&stdio_spec("big", &[("MCP_TEST_EXTRA_TOOLS", "12")])).await;
    // The server pages by ten: 20 tools come in two pages.
    assert_eq!(conn.tools().len(), 20);
    assert_eq!(
        conn.tools().last().map(|t| t.name.as_str()),
        Some("extra_12")
    );
    let extra = conn.tools().iter().find(|t| t.name == "extra_01").unwrap();
    assert!(extra.description.len() > 100);
    assert_eq!(extra.input_schema["required"], json!(["query"]));
    let bytes: usize = conn
        .tools()
        .iter()
        .map(|t| serde_json::to_string(t).map(|s| s.len()).unwrap_or(0))
        .sum();
    eprintln!("tool list of a 20-tool server: {bytes} bytes of JSON");
    conn.shutdown().await;
}

#[tokio::test]
async fn calls_map_every_result_kind() {
    let conn = connect(&stdio_spec("t", &[("MCP_TEST_SOME_VAR", "value-42")])).await;
    let cancel = CancellationToken::new();

    let echo = conn
        .call("echo", args(json!({"text": "hi"})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(echo.content, [Content::Text { text: "hi".into() }]);
    assert!(!echo.is_error && echo.structured.is_none());

    let add = conn
        .call("add", args(json!({"a": 2, "b": 3})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&add), "5");
    assert_eq!(add.structured, Some(json!({"sum": 5})));

    let fail = conn
        .call(
            "fail",
            args(json!({"message": "no such file"})),
            LONG,
            &cancel,
        )
        .await
        .unwrap();
    assert!(fail.is_error);
    assert_eq!(text(&fail), "no such file");

    let image = conn
        .call("image", args(json!({})), LONG, &cancel)
        .await
        .unwrap();
    match image.content.as_slice() {
        [Content::Image { mime_type, data }] => {
            assert_eq!(mime_type, "image/png");
            assert!(data.starts_with("iVBORw0KGgo"), "{data}");
        }
        other => panic!("expected one image, got {other:?}"),
    }

    let set = conn
        .call(
            "env",
            args(json!({"name": "MCP_TEST_SOME_VAR"})),
            LONG,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(text(&set), "value-42");
    let unset = conn
        .call(
            "env",
            args(json!({"name": "MCP_TEST_NOT_SET_ANYWHERE"})),
            LONG,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(text(&unset), "<unset>");
    conn.shutdown().await;
}

#[tokio::test]
async fn write_marker_writes() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker.txt");
    let conn = connect(&stdio_spec("t", &[])).await;
    let path = marker.to_string_lossy().to_string();
    let out = conn
        .call(
            "write_marker",
            args(json!({"path": path, "text": "ran"})),
            LONG,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(!out.is_error);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran");
    conn.shutdown().await;
}

#[tokio::test]
async fn bad_arguments_are_a_json_rpc_error() {
    let conn = connect(&stdio_spec("t", &[])).await;
    let error = conn
        .call(
            "echo",
            args(json!({"wrong": 1})),
            LONG,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    match &error {
        McpError::Rpc { code, message, .. } => {
            assert_eq!(*code, -32602);
            assert!(message.contains("text"), "{message}");
        }
        other => panic!("expected an RPC error, got {other:?}"),
    }
    assert!(error.fix().is_some_and(|f| f.contains("schema")));
    // The server is fine.
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test]
async fn a_hung_call_times_out_is_cancelled_and_the_server_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_str = log.to_string_lossy().to_string();
    let conn = connect(&stdio_spec("t", &[("MCP_TEST_CALL_LOG", &log_str)])).await;
    let cancel = CancellationToken::new();

    let error = conn
        .call("hang", args(json!({})), Duration::from_millis(300), &cancel)
        .await
        .unwrap_err();
    match &error {
        McpError::Timeout { what, after_ms, .. } => {
            assert_eq!(what, "tools/call hang");
            assert_eq!(*after_ms, 300);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(error.fix().is_some_and(|f| f.contains("callTimeoutMs")));

    let echo = conn
        .call("echo", args(json!({"text": "still here"})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echo), "still here");

    // The server heard `notifications/cancelled` for the hung call.
    let mut heard = false;
    for _ in 0..250 {
        if log_lines(&log).iter().any(|l| l == "cancelled hang") {
            heard = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(heard, "call log: {:?}", log_lines(&log));
    conn.shutdown().await;
}

#[tokio::test]
async fn the_cancel_token_cancels_a_call() {
    let conn = connect(&stdio_spec("t", &[])).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let error = conn
        .call("hang", args(json!({})), LONG, &cancel)
        .await
        .unwrap_err();
    assert_eq!(error, McpError::Cancelled);
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_exit_with_code_and_stderr() {
    let conn = connect(&stdio_spec("t", &[])).await;
    let error = conn
        .call("crash", args(json!({})), LONG, &CancellationToken::new())
        .await
        .unwrap_err();
    match &error {
        McpError::Exited {
            code,
            signal,
            stderr_tail,
        } => {
            assert_eq!(*code, Some(3));
            assert_eq!(*signal, None);
            assert!(
                stderr_tail.contains("crashing on purpose"),
                "{stderr_tail:?}"
            );
        }
        other => panic!("expected an exit, got {other:?}"),
    }
    assert!(error.to_string().contains("with code 3"), "{error}");
    assert!(!conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test]
async fn a_server_exiting_at_startup_says_why() {
    let spec = stdio_spec("t", &[("MCP_TEST_EXIT_AT_START", "7")]);
    let error = Connection::connect(&spec, &CancellationToken::new())
        .await
        .err()
        .unwrap();
    match &error {
        McpError::Exited {
            code, stderr_tail, ..
        } => {
            assert_eq!(*code, Some(7));
            assert!(
                stderr_tail.contains("test server: refusing to start: bad config"),
                "{stderr_tail:?}"
            );
        }
        other => panic!("expected an exit, got {other:?}"),
    }
    assert!(error.fix().is_some_and(|f| f.contains("by hand")));
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let error = Connection::connect(&missing_program_spec("t"), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    match &error {
        McpError::Spawn { command, message } => {
            assert_eq!(command, "braincode-no-such-mcp-server --stdio");
            assert!(message.contains("No such file"), "{message}");
        }
        other => panic!("expected a spawn error, got {other:?}"),
    }
    assert_eq!(
        error.fix().as_deref(),
        Some(
            "check that `braincode-no-such-mcp-server` is installed and on PATH, or fix `command`"
        )
    );
}

#[tokio::test]
async fn a_slow_startup_times_out_and_the_process_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let mut spec = counted_spec("slow", &[("MCP_TEST_STARTUP_DELAY_MS", "30000")], &pids);
    spec.startup_timeout = Duration::from_millis(500);
    let error = Connection::connect(&spec, &CancellationToken::new())
        .await
        .err()
        .unwrap();
    match &error {
        McpError::Timeout { what, after_ms, .. } => {
            assert_eq!(what, "initialize");
            assert_eq!(*after_ms, 500);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(error.fix().is_some_and(|f| f.contains("startupTimeoutMs")));
    let spawned = spawned_pids(&pids);
    assert_eq!(spawned.len(), 1);
    assert!(
        wait_gone(spawned[0]).await,
        "the slow server is still running"
    );
}

#[tokio::test]
async fn cancelling_a_connect_kills_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let spec = counted_spec("slow", &[("MCP_TEST_STARTUP_DELAY_MS", "30000")], &pids);
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let error = Connection::connect(&spec, &cancel).await.err().unwrap();
    assert_eq!(error, McpError::Cancelled);
    let spawned = spawned_pids(&pids);
    assert_eq!(spawned.len(), 1);
    assert!(wait_gone(spawned[0]).await);
}

/// A server that leaves a background `sleep` in its process group; writes the sleep's pid.
fn server_with_a_child(sleep_pid_file: &std::path::Path) -> ServerSpec {
    let binary = test_server_binary();
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec '{}' --stdio",
        sleep_pid_file.display(),
        binary.display()
    );
    let factory = move || {
        let mut command = std::process::Command::new("sh");
        command.arg("-c").arg(&script);
        command
    };
    ServerSpec {
        name: "family".into(),
        endpoint: Endpoint::Stdio {
            command: Arc::new(factory),
            display: "sh -c family".into(),
        },
        startup_timeout: LONG,
        call_timeout: LONG,
    }
}

/// A connected server that started a child in its process group: the connection, the
/// server's pid and the child's.
async fn connect_with_a_child(dir: &std::path::Path) -> (Connection, u32, u32) {
    let sleep_pid = dir.join("sleep.pid");
    let conn = connect(&server_with_a_child(&sleep_pid)).await;
    let pid = conn.pid().unwrap();
    let child: u32 = std::fs::read_to_string(&sleep_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (conn, pid, child)
}

#[tokio::test]
async fn shutdown_leaves_no_process_of_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, pid, child) = connect_with_a_child(dir.path()).await;
    assert!(!process_gone(pid) && !process_gone(child));
    conn.shutdown().await;
    assert!(wait_gone(pid).await, "server {pid} survived shutdown");
    assert!(
        wait_gone(child).await,
        "its child {child} survived shutdown"
    );
}

#[tokio::test]
async fn dropping_a_connection_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let (conn, pid, child) = connect_with_a_child(dir.path()).await;
    drop(conn);
    assert!(wait_gone(pid).await, "server {pid} survived the drop");
    assert!(
        wait_gone(child).await,
        "its child {child} survived the drop"
    );
}
