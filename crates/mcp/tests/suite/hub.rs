//! The hub over real test-server processes: background connects, de-duplicated starts,
//! the one restart, concurrency, subscriptions and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use braincode_mcp::{Hub, McpError, ServerStatus};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const LONG: Duration = Duration::from_secs(20);

#[tokio::test]
async fn subscribers_see_connecting_then_connected() {
    let hub = Hub::new(vec![stdio_spec("a", &[]), stdio_spec("b", &[])]);
    assert_eq!(hub.names(), ["a", "b"]);
    assert_eq!(hub.state("a").unwrap().status, ServerStatus::NotStarted);
    let mut events = hub.subscribe();
    hub.start("a");
    hub.start("not-configured");
    let state = hub.wait("a", LONG).await.unwrap();
    assert_eq!(state.status, ServerStatus::Connected, "{:?}", state.error);
    assert!(state.connect_ms.is_some());
    assert_eq!(state.tools.len(), 8);
    assert_eq!(
        state.info.and_then(|i| i.name).as_deref(),
        Some("braincode-mcp-test-server")
    );
    assert_eq!(state.restarts, 0);

    let first = events.recv().await.unwrap();
    assert_eq!(
        (first.name.as_str(), first.status),
        ("a", ServerStatus::Connecting)
    );
    let second = events.recv().await.unwrap();
    assert_eq!(
        (second.name.as_str(), second.status),
        ("a", ServerStatus::Connected)
    );

    let states = hub.states();
    assert_eq!(states[1].status, ServerStatus::NotStarted);
    assert!(hub.wait("nope", LONG).await.is_none());
    hub.shutdown().await;
}

#[tokio::test]
async fn concurrent_wait_and_calls_share_one_connect() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let log = dir.path().join("calls.log");
    let log_str = log.to_string_lossy().to_string();
    let spec = counted_spec(
        "slowish",
        &[
            ("MCP_TEST_STARTUP_DELAY_MS", "300"),
            ("MCP_TEST_CALL_LOG", &log_str),
        ],
        &pids,
    );
    let hub = Hub::new(vec![spec]);
    hub.start("slowish");
    let waiter = {
        let hub = Arc::clone(&hub);
        tokio::spawn(async move { hub.wait("slowish", LONG).await })
    };
    let calls: Vec<_> = (0..5)
        .map(|i| {
            let hub = Arc::clone(&hub);
            tokio::spawn(async move {
                hub.start("slowish");
                hub.call(
                    "slowish",
                    "echo",
                    args(json!({"text": format!("n{i}")})),
                    &CancellationToken::new(),
                )
                .await
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let out = call.await.unwrap().unwrap();
        assert_eq!(text(&out), format!("n{i}"));
    }
    assert_eq!(
        waiter.await.unwrap().unwrap().status,
        ServerStatus::Connected
    );
    assert_eq!(spawned_pids(&pids).len(), 1, "one process for every caller");
    assert_eq!(log_lines(&log).iter().filter(|l| *l == "echo").count(), 5);
    hub.shutdown().await;
}

#[tokio::test]
async fn calls_run_concurrently() {
    let mut spec = stdio_spec("c", &[]);
    spec.call_timeout = Duration::from_secs(5);
    let hub = Hub::new(vec![spec]);
    let hang = {
        let hub = Arc::clone(&hub);
        tokio::spawn(async move {
            hub.call("c", "hang", args(json!({})), &CancellationToken::new())
                .await
        })
    };
    // Connected and the hang in flight: an echo still answers.
    hub.wait("c", LONG).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let echo = hub
        .call(
            "c",
            "echo",
            args(json!({"text": "beside"})),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(text(&echo), "beside");
    assert!(!hang.is_finished(), "the echo waited for the hang");
    let hung = hang.await.unwrap().unwrap_err();
    assert!(matches!(hung, McpError::Timeout { .. }), "{hung:?}");
    // A timeout is not a death.
    assert_eq!(hub.state("c").unwrap().restarts, 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_crashed_server_is_restarted_once_then_down() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let hub = Hub::new(vec![counted_spec("crashy", &[], &pids)]);
    let cancel = CancellationToken::new();

    let first = hub
        .call("crashy", "crash", args(json!({})), &cancel)
        .await
        .unwrap_err();
    match &first {
        McpError::Exited {
            code, stderr_tail, ..
        } => {
            assert_eq!(*code, Some(3));
            assert!(
                stderr_tail.contains("crashing on purpose"),
                "{stderr_tail:?}"
            );
        }
        other => panic!("expected the crash, got {other:?}"),
    }

    // The next call gets a restarted server.
    let echo = hub
        .call("crashy", "echo", args(json!({"text": "again"})), &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echo), "again");
    let state = hub.state("crashy").unwrap();
    assert_eq!((state.status, state.restarts), (ServerStatus::Connected, 1));
    assert!(matches!(
        state.error,
        Some(McpError::Exited { code: Some(3), .. })
    ));
    assert_eq!(spawned_pids(&pids).len(), 2);

    // A second crash uses up the restart: later calls say it is down.
    let second = hub
        .call("crashy", "crash", args(json!({})), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(second, McpError::Exited { code: Some(3), .. }),
        "{second:?}"
    );
    let later = hub
        .call("crashy", "echo", args(json!({"text": "x"})), &cancel)
        .await
        .unwrap_err();
    match &later {
        McpError::Down { last } => {
            assert!(
                matches!(**last, McpError::Exited { code: Some(3), .. }),
                "{last:?}"
            );
        }
        other => panic!("expected Down, got {other:?}"),
    }
    assert!(later.fix().is_some());
    assert_eq!(hub.state("crashy").unwrap().status, ServerStatus::Failed);
    assert_eq!(spawned_pids(&pids).len(), 2, "no third spawn");
    for pid in spawned_pids(&pids) {
        assert!(wait_gone(pid).await);
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_found_dead_is_restarted_and_the_call_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let hub = Hub::new(vec![counted_spec("victim", &[], &pids)]);
    assert_eq!(
        hub.wait("victim", LONG).await.unwrap().status,
        ServerStatus::Connected
    );
    let pid = spawned_pids(&pids)[0];
    let status = std::process::Command::new("kill")
        .arg("-9")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_gone(pid).await);
    // The hub learns of the death from the process's exit (a call racing the exit itself
    // may find the server dying rather than dead, and get the crash).
    let deadline = Instant::now() + LONG;
    while hub.state("victim").unwrap().restarts == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let echo = hub
        .call(
            "victim",
            "echo",
            args(json!({"text": "revived"})),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(text(&echo), "revived");
    let state = hub.state("victim").unwrap();
    assert_eq!(state.restarts, 1);
    assert!(
        matches!(
            state.error,
            Some(McpError::Exited {
                signal: Some(9),
                ..
            })
        ),
        "{:?}",
        state.error
    );
    assert_eq!(spawned_pids(&pids).len(), 2);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_then_is_down() {
    let hub = Hub::new(vec![
        stdio_spec("broken", &[("MCP_TEST_EXIT_AT_START", "7")]),
        missing_program_spec("missing"),
    ]);
    let state = hub.wait("broken", LONG).await.unwrap();
    assert_eq!(state.status, ServerStatus::Failed);
    match &state.error {
        Some(McpError::Exited {
            code: Some(7),
            stderr_tail,
            ..
        }) => assert!(stderr_tail.contains("refusing to start"), "{stderr_tail:?}"),
        other => panic!("expected exit 7, got {other:?}"),
    }
    let cancel = CancellationToken::new();
    // The one restart is tried by the first call; after that the server is down.
    let retried = hub
        .call("broken", "echo", args(json!({"text": "x"})), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(retried, McpError::Exited { code: Some(7), .. }),
        "{retried:?}"
    );
    let down = hub
        .call("broken", "echo", args(json!({"text": "x"})), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(down, McpError::Down { .. }), "{down:?}");

    let missing = hub
        .call("missing", "echo", args(json!({"text": "x"})), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(missing, McpError::Spawn { .. }), "{missing:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn unknown_servers_and_tools_are_named() {
    let hub = Hub::new(vec![stdio_spec("s", &[])]);
    let cancel = CancellationToken::new();
    let error = hub
        .call("nope", "echo", args(json!({})), &cancel)
        .await
        .unwrap_err();
    assert_eq!(error, McpError::UnknownServer("nope".into()));
    assert_eq!(hub.state("s").unwrap().status, ServerStatus::NotStarted);
    let error = hub
        .call("s", "nope", args(json!({})), &cancel)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        McpError::UnknownTool {
            server: "s".into(),
            tool: "nope".into()
        }
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_times_out_and_the_server_stays_usable() {
    let mut spec = stdio_spec("t", &[]);
    spec.call_timeout = Duration::from_millis(300);
    let hub = Hub::new(vec![spec]);
    let cancel = CancellationToken::new();
    let error = hub
        .call("t", "hang", args(json!({})), &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, McpError::Timeout { what, .. } if what == "tools/call hang"),
        "{error:?}"
    );
    let echo = hub
        .call("t", "echo", args(json!({"text": "ok"})), &cancel)
        .await
        .unwrap();
    assert_eq!(text(&echo), "ok");
    assert_eq!(hub.state("t").unwrap().restarts, 0);
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_every_server_and_later_calls_fail_fast() {
    let dir = tempfile::tempdir().unwrap();
    let (pids_a, pids_b) = (dir.path().join("a"), dir.path().join("b"));
    let hub = Hub::new(vec![
        counted_spec("a", &[], &pids_a),
        counted_spec("b", &[], &pids_b),
    ]);
    assert_eq!(
        hub.wait("a", LONG).await.unwrap().status,
        ServerStatus::Connected
    );
    assert_eq!(
        hub.wait("b", LONG).await.unwrap().status,
        ServerStatus::Connected
    );
    let mut events = hub.subscribe();
    hub.shutdown().await;
    for pid in spawned_pids(&pids_a)
        .into_iter()
        .chain(spawned_pids(&pids_b))
    {
        assert!(wait_gone(pid).await, "{pid} survived the shutdown");
    }
    assert!(
        hub.states()
            .iter()
            .all(|s| s.status == ServerStatus::Stopped)
    );
    let stopped: Vec<_> = [events.recv().await.unwrap(), events.recv().await.unwrap()]
        .into_iter()
        .map(|s| (s.name, s.status))
        .collect();
    assert!(
        stopped
            .iter()
            .all(|(_, status)| *status == ServerStatus::Stopped),
        "{stopped:?}"
    );

    let started = Instant::now();
    let error = hub
        .call(
            "a",
            "echo",
            args(json!({"text": "late"})),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(error, McpError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    hub.start("a");
    assert_eq!(hub.state("a").unwrap().status, ServerStatus::Stopped);
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_during_a_connect_kills_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let hub = Hub::new(vec![counted_spec(
        "slow",
        &[("MCP_TEST_STARTUP_DELAY_MS", "30000")],
        &pids,
    )]);
    hub.start("slow");
    let deadline = Instant::now() + LONG;
    while spawned_pids(&pids).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    hub.shutdown().await;
    let pid = spawned_pids(&pids)[0];
    assert!(wait_gone(pid).await);
    assert_eq!(hub.state("slow").unwrap().status, ServerStatus::Stopped);
}

#[tokio::test]
async fn dropping_the_hub_kills_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let hub = Hub::new(vec![counted_spec("d", &[], &pids)]);
    assert_eq!(
        hub.wait("d", LONG).await.unwrap().status,
        ServerStatus::Connected
    );
    let pid = spawned_pids(&pids)[0];
    drop(hub);
    assert!(wait_gone(pid).await, "{pid} outlived the hub");
}

#[tokio::test]
async fn http_servers_work_through_the_hub() {
    let server = braincode_test_support::mcp::HttpTestServer::start(&[]);
    let hub = Hub::new(vec![http_spec("web", &server.url(), &[])]);
    let out = hub
        .call(
            "web",
            "add",
            args(json!({"a": 20, "b": 22})),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(text(&out), "42");
    hub.shutdown().await;
}
