//! What the pages say: a session's real status and its short id, a journal read as a
//! conversation, the project's trust in the words `braincode trust --status` uses, and an
//! address that keeps its parameters when the token leaves it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{fixture, plain_client, write_session};
use braincode_config::Home;
use braincode_protocol::SessionId;
use reqwest::StatusCode;
use serde_json::json;

/// The `<tr>` of the sessions table that carries `data-session="<id>"`.
fn session_row<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("data-session=\"{id}\""))
        .unwrap_or_else(|| panic!("no row for {id} in {page}"));
    let end = start + page[start..].find("</tr>").unwrap();
    &page[start..end]
}

#[tokio::test]
async fn sessions_show_their_real_status_and_their_short_id() {
    let f = fixture().await;
    let start = |prompt: &str, run: &str| json!({"type": "run_start", "prompt": prompt, "attempt": 1, "runId": run});
    // Five sessions of the same minute: the first 13 characters are all alike.
    let sessions = [
        (
            "20261202-103801-aaaaaa",
            vec![
                start("Answer me", "r1"),
                json!({"type": "run_end", "summary": "Here.", "status": "answered"}),
            ],
            "completed",
        ),
        (
            "20261202-103802-bbbbbb",
            vec![
                start("Stop me", "r2"),
                json!({"type": "run_end", "summary": "Interrupted.", "status": "aborted"}),
            ],
            "aborted",
        ),
        (
            "20261202-103803-cccccc",
            vec![
                start("Fail me", "r3"),
                json!({"type": "run_error", "error": "timeout", "attempt": 1, "willFallback": true}),
                json!({"type": "run_error", "error": "every model failed", "status": "failed"}),
            ],
            "failed",
        ),
        (
            "20261202-103804-dddddd",
            vec![
                start("Killed", "r4"),
                json!({"type": "run_error", "error": "the process died", "kind": "interrupted",
                    "status": "aborted"}),
            ],
            "aborted",
        ),
        (
            "20261202-103805-eeeeee",
            vec![start("Die without a word", "r5")],
            "interrupted",
        ),
        (
            "20261202-103806-ffffff",
            vec![start("Still going", "r6")],
            "running",
        ),
    ];
    for (id, records, _) in &sessions {
        write_session(&f.home, id, records);
    }
    let home = Home::at(&f.home);
    let live = SessionId::new("20261202-103806-ffffff").unwrap();
    let _running = braincode_config::journal::hold_live_run(&home, &live, "r6").unwrap();

    let (status, page) = f.page("/sessions").await;
    assert_eq!(status, StatusCode::OK);
    for (id, _, expected) in &sessions {
        let row = session_row(&page, id);
        assert!(
            row.contains(&format!("data-status=\"{expected}\"")),
            "{id} is not shown {expected}: {row}"
        );
        let short = braincode_protocol::short_form(id);
        assert!(row.contains(&format!(">{short}<")), "{id}: {row}");
        assert!(row.contains(&format!("title=\"{id}\"")), "{id}: {row}");
        assert!(
            row.contains(&format!("href=\"/sessions/{id}\"")),
            "{id}: {row}"
        );
    }
    assert!(
        !page.contains(">20261202-1038<"),
        "ids are still cut to 13 characters"
    );
    // The detail page says the same, and follows only the run that is running.
    for (id, _, expected) in &sessions {
        let (_, detail) = f.page(&format!("/sessions/{id}")).await;
        assert!(
            detail.contains(&format!("data-run-status=\"{expected}\"")),
            "{id}: {detail}"
        );
        assert_eq!(
            detail.contains("data-live-session"),
            *expected == "running",
            "{id}: {detail}"
        );
    }
}

#[tokio::test]
async fn a_session_reads_as_a_conversation_with_the_raw_records_folded_away() {
    let f = fixture().await;
    let id = "20261203-090000-0a1b2c";
    write_session(
        &f.home,
        id,
        &[
            json!({"type": "run_start", "prompt": "Rename the Flux capacitor", "attempt": 1}),
            json!({"type": "worker_start", "phase": "support", "worker": "librarian",
                "goal": "Map the capacitor code"}),
            json!({"type": "worker_end", "phase": "support", "worker": "librarian"}),
            json!({"type": "tool_execution_summary", "toolCallId": "c1", "toolName": "exec_command",
                "stage": "start", "role": "backend", "argsSummary": {"command": "cargo test -p flux"}}),
            json!({"type": "tool_execution_summary", "toolCallId": "c1", "toolName": "exec_command",
                "stage": "end", "role": "backend", "isError": true, "durationMs": 1200,
                "output": "error[E0425]: cannot find value `capacitor`"}),
            json!({"type": "worker_error", "phase": "support", "worker": "qa",
                "error": "the qa model timed out"}),
            json!({"type": "run_end", "summary": "Renamed it to Flux compensator.", "status": "approved"}),
        ],
    );
    let (status, page) = f.page(&format!("/sessions/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    let conversation = {
        let start = page.find("id=\"conversation\"").expect(&page);
        let end = start + page[start..].find("</section>").unwrap();
        &page[start..end]
    };
    for shown in [
        "Rename the Flux capacitor",
        "Map the capacitor code",
        "exec_command",
        "cargo test -p flux",
        "cannot find value",
        "the qa model timed out",
        "Renamed it to Flux compensator.",
    ] {
        assert!(
            conversation.contains(shown),
            "{shown:?} is not in the conversation: {conversation}"
        );
    }
    assert!(
        !conversation.contains("\"toolCallId\""),
        "the conversation is a JSON dump: {conversation}"
    );
    assert!(
        conversation.contains("class=\"turn user\""),
        "{conversation}"
    );
    assert!(
        conversation.contains("class=\"turn answer\""),
        "{conversation}"
    );
    // One line per tool call (start and end together).
    assert_eq!(
        conversation.matches("class=\"tool").count(),
        1,
        "{conversation}"
    );
    // The raw records are still there, folded.
    let details = page.find("<details").expect("no raw records disclosure");
    assert!(page[details..].contains("id=\"records\""), "{page}");
    // The page names the session by its short id, with the whole id at hand.
    assert!(page.contains("0a1b2c"), "{page}");
    assert!(page.contains(&format!("title=\"{id}\"")), "{page}");
}

#[tokio::test]
async fn the_mcp_page_says_what_trust_status_says() {
    let f = fixture().await;
    let project = f._dir.path().join("project");
    let (_, page) = f.page("/mcp").await;
    assert!(
        page.contains("nothing to trust: no hooks, MCP servers, settings or checks"),
        "{page}"
    );
    assert!(!page.contains(">trusted<"), "{page}");
    // A project with an MCP file: not trusted until the user says so.
    std::fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers": {"files": {"command": "mcp-files"}}}"#,
    )
    .unwrap();
    let (_, page) = f.page("/mcp").await;
    assert!(page.contains("not trusted"), "{page}");
    braincode_config::trust_project(&Home::at(&f.home), &project).unwrap();
    let (_, page) = f.page("/mcp").await;
    assert!(page.contains(">trusted<"), "{page}");
    assert!(!page.contains("nothing to trust"), "{page}");
}

#[tokio::test]
async fn the_token_leaves_the_address_and_the_other_parameters_stay() {
    let f = fixture().await;
    let token = &f.panel.token;
    for (asked, expected) in [
        (
            format!("/sessions?q=flux&token={token}&by=role"),
            "/sessions?q=flux&by=role",
        ),
        (
            format!("/usage?token={token}&by=model&since=7d"),
            "/usage?by=model&since=7d",
        ),
        (format!("/models?token={token}"), "/models"),
    ] {
        let response = plain_client().get(f.url(&asked)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{asked}");
        assert_eq!(response.headers()["location"], expected, "{asked}");
        assert!(response.headers().contains_key("set-cookie"));
    }
}

#[tokio::test]
async fn usage_by_session_names_sessions_by_their_short_id() {
    let f = fixture().await;
    let id = "20261202-103801-aaaaaa";
    write_session(
        &f.home,
        id,
        &[
            json!({"type": "token_usage", "role": "backend", "modelId": "local/smollm2",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0}}),
        ],
    );
    let (status, page) = f.page("/usage?by=session").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains(&format!(
            "<a href=\"/sessions/{id}\" title=\"{id}\"><code>aaaaaa</code></a>"
        )),
        "{page}"
    );
}
