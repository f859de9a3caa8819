//! `Connection` over streamable HTTP against the test server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::*;
use braincode_mcp::{Connection, McpError};
use braincode_test_support::mcp::HttpTestServer;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LONG: Duration = Duration::from_secs(20);

#[tokio::test]
async fn http_lists_tools_and_calls_them() {
    let server = HttpTestServer::start(&[]);
    let cancel = CancellationToken::new();
    let conn = Connection::connect(&http_spec("web", &server.url(), &[]), &cancel)
        .await
        .unwrap();
    assert_eq!(conn.pid(), None);
    assert_eq!(
        conn.info().name.as_deref(),
        Some("braincode-mcp-test-server")
    );
    assert_eq!(tool_names(&conn), BASE_TOOLS);
    assert!(conn.tools()[0].read_only);
    assert_eq!(
        conn.tools()[0].input_schema["properties"]["text"]["type"],
        "string"
    );

    let echo = conn
        .call("echo", args(json!({"text": "over http"})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echo), "over http");
    let add = conn
        .call("add", args(json!({"a": 1.5, "b": 2})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(add.structured, Some(json!({"sum": 3.5})));
    let fail = conn
        .call("fail", args(json!({"message": "nope"})), LONG, &cancel)
        .await
        .unwrap();
    assert!(fail.is_error);
    assert!(conn.is_alive());
    conn.shutdown().await;
}

#[tokio::test]
async fn http_hang_times_out_and_the_session_stays_usable() {
    let server = HttpTestServer::start(&[]);
    let cancel = CancellationToken::new();
    let conn = Connection::connect(&http_spec("web", &server.url(), &[]), &cancel)
        .await
        .unwrap();
    let error = conn
        .call("hang", args(json!({})), Duration::from_millis(300), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, McpError::Timeout { what, .. } if what == "tools/call hang"),
        "{error:?}"
    );
    let echo = conn
        .call("echo", args(json!({"text": "after"})), LONG, &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echo), "after");
    conn.shutdown().await;
}

#[tokio::test]
async fn http_with_the_right_token_connects() {
    let server = HttpTestServer::start(&[("MCP_TEST_TOKEN", "s3cret")]);
    let spec = http_spec("web", &server.url(), &[("Authorization", "Bearer s3cret")]);
    let conn = Connection::connect(&spec, &CancellationToken::new())
        .await
        .unwrap();
    let echo = conn
        .call(
            "echo",
            args(json!({"text": "authorized"})),
            LONG,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(text(&echo), "authorized");
    conn.shutdown().await;
}

#[tokio::test]
async fn http_with_a_wrong_or_missing_token_is_401() {
    let server = HttpTestServer::start(&[("MCP_TEST_TOKEN", "s3cret")]);
    for headers in [vec![("Authorization", "Bearer wrong-token")], vec![]] {
        let spec = http_spec("web", &server.url(), &headers);
        let error = Connection::connect(&spec, &CancellationToken::new())
            .await
            .err()
            .unwrap();
        match &error {
            McpError::Http { status, .. } => assert_eq!(*status, Some(401), "{error}"),
            other => panic!("expected HTTP 401, got {other:?}"),
        }
        eprintln!("{error}");
        assert!(!error.to_string().contains("wrong-token"), "{error}");
        assert!(error.fix().is_some_and(|f| f.contains("Authorization")));
    }
}

#[tokio::test]
async fn http_wrong_path_is_404() {
    let server = HttpTestServer::start(&[]);
    let url = format!("http://{}/not-mcp", server.addr());
    let error = Connection::connect(&http_spec("web", &url, &[]), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    match &error {
        McpError::Http { status, .. } => assert_eq!(*status, Some(404), "{error}"),
        other => panic!("expected HTTP 404, got {other:?}"),
    }
    eprintln!("{error}");
    assert!(error.fix().is_some_and(|f| f.contains("url")));
}

#[tokio::test]
async fn http_nobody_listening_is_a_connection_failure() {
    // A port that was free a moment ago.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let error = Connection::connect(&http_spec("web", &url, &[]), &CancellationToken::new())
        .await
        .err()
        .unwrap();
    match &error {
        McpError::Http { status, message } => {
            eprintln!("{error}");
            assert_eq!(*status, None, "{error}");
            assert!(message.contains("connect"), "{message}");
        }
        other => panic!("expected a connection failure, got {other:?}"),
    }
}

#[tokio::test]
async fn http_server_gone_mid_session_fails_the_call() {
    let server = HttpTestServer::start(&[]);
    let cancel = CancellationToken::new();
    let conn = Connection::connect(&http_spec("web", &server.url(), &[]), &cancel)
        .await
        .unwrap();
    drop(server);
    let error = conn
        .call("echo", args(json!({"text": "x"})), LONG, &cancel)
        .await
        .unwrap_err();
    eprintln!("{error}");
    assert!(
        matches!(error, McpError::Http { .. } | McpError::Protocol { .. }),
        "{error:?}"
    );
    conn.shutdown().await;
}
