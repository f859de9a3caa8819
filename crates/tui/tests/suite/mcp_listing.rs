//! `/mcp`: the listing of MCP servers as the session draws it, from plain rows (no server is
//! started), while the check runs and once it is done.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use braincode_runtime::{McpCheckStatus, McpServerCheck};
use braincode_tui::session::draw_info;
use braincode_tui::session::mcp::listing_lines;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn row(name: &str, scope: &str, transport: &str, status: McpCheckStatus) -> McpServerCheck {
    McpServerCheck {
        name: name.into(),
        scope: scope.into(),
        transport: transport.into(),
        command: None,
        url: None,
        env: Vec::new(),
        headers: Vec::new(),
        loading: "background".into(),
        schemas: "lazy".into(),
        source: "/home/u/.braincode/mcp.json".into(),
        status,
        reason: None,
        server_name: None,
        server_version: None,
        protocol_version: None,
        tool_count: None,
        latency_ms: None,
        error: None,
        fix: None,
        tools: Arc::new(Vec::new()),
    }
}

fn connected() -> McpServerCheck {
    McpServerCheck {
        server_name: Some("github-mcp-server".into()),
        server_version: Some("0.9.1".into()),
        protocol_version: Some("2025-06-18".into()),
        tool_count: Some(12),
        latency_ms: Some(412),
        ..row("github", "user", "stdio", McpCheckStatus::Ok)
    }
}

fn failed() -> McpServerCheck {
    McpServerCheck {
        latency_ms: Some(35),
        error: Some(
            "server exited with code 7; stderr: postgres-mcp: DATABASE_URL is not set".into(),
        ),
        fix: Some("run the server's command by hand to see why it exits".into()),
        ..row("db", "project", "stdio", McpCheckStatus::Failed)
    }
}

fn skipped() -> McpServerCheck {
    McpServerCheck {
        reason: Some("disabled in its config".into()),
        ..row("docs", "user", "http", McpCheckStatus::Skipped)
    }
}

fn screen(lines: &[String]) -> String {
    let mut terminal = Terminal::new(TestBackend::new(100, 10)).unwrap();
    terminal
        .draw(|frame| draw_info(frame, frame.area(), lines))
        .unwrap();
    terminal.backend().to_string()
}

#[test]
fn mcp_listing_with_connected_failed_and_skipped_servers() {
    let lines = listing_lines(&[connected(), failed(), skipped()]);
    insta::assert_snapshot!(screen(&lines));
}

#[test]
fn mcp_listing_while_checking() {
    let checking = |row: McpServerCheck| McpServerCheck {
        status: McpCheckStatus::Checking,
        ..row
    };
    let lines = listing_lines(&[
        checking(row("github", "user", "stdio", McpCheckStatus::Ok)),
        checking(row("db", "project", "stdio", McpCheckStatus::Ok)),
        skipped(),
    ]);
    insta::assert_snapshot!(screen(&lines));
}

#[test]
fn no_servers_says_where_to_add_them() {
    let lines = listing_lines(&[]);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("~/.braincode/mcp.json"), "{lines:?}");
}

/// The panel is as tall as its lines once wrapped, so a long failure does not push the last
/// line out.
#[test]
fn the_info_panel_counts_wrapped_lines() {
    use braincode_tui::session::info_height;
    let short = vec!["short".to_string(), "lines".to_string()];
    assert_eq!(info_height(&short, 40), 4);
    let long = vec!["word ".repeat(20), "end".to_string()];
    // 100 columns of text in a 40-column panel (38 inside): three rows, then "end".
    assert_eq!(info_height(&long, 40), 6);
}
