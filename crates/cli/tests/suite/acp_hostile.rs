//! `braincode acp` against a repository that plants things where an edit goes: what the
//! editor is shown of an edit (its permission request, the updates) never comes from beyond
//! the project, and never blocks on a file that is not a regular file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    PermissionOptionKind, PromptRequest, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client};
use braincode_test_support::{Reply, TempHome, TempRepo};
use serde_json::json;

use super::acp_rust::{agent, open, text};
use crate::run_harness::{self, configure};

/// Runs one prompt asking to overwrite `notes.txt` with an editor that records every
/// permission request and update it gets, rejecting each request; what it saw, as JSON text.
async fn overwrite_notes(repo: &TempRepo) -> (Vec<String>, Vec<String>) {
    let server = super::acp_editor::editor_model_with(vec![
        Reply::tool_call(
            "edit_file",
            json!({"path": "notes.txt", "content": "overwritten\n"}),
        ),
        Reply::text("Not changed."),
    ])
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let told: Arc<Mutex<Vec<String>>> = Arc::default();
    let (requests, updates) = (asked.clone(), told.clone());
    let prompt = text(
        "edit the file notes.txt in this repository so that its whole content is the single word overwritten",
    );
    let run = Client
        .v1()
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _connection: ConnectionTo<Agent>| {
                requests
                    .lock()
                    .unwrap()
                    .push(serde_json::to_string(&request).unwrap());
                let reject = request
                    .options
                    .iter()
                    .find(|o| o.kind == PermissionOptionKind::RejectOnce)
                    .unwrap()
                    .option_id
                    .clone();
                responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(reject)),
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: SessionNotification, _connection: ConnectionTo<Agent>| {
                updates
                    .lock()
                    .unwrap()
                    .push(serde_json::to_string(&notification).unwrap());
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&home, &[]),
            async |connection: ConnectionTo<Agent>| {
                let session = open(&connection, repo).await;
                connection
                    .send_request(PromptRequest::new(session, prompt))
                    .block_task()
                    .await?;
                Ok(())
            },
        );
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the prompt was answered within a minute")
        .unwrap();
    let asked = asked.lock().unwrap().clone();
    let told = told.lock().unwrap().clone();
    (asked, told)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_planted_where_an_edit_goes_does_not_hold_up_the_permission_request() {
    // Showing the edit's "before" must not open a FIFO: that read would block the request,
    // and the run with it, forever.
    let repo = run_harness::repo();
    let fifo = repo.path().join("notes.txt");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let (asked, _) = overwrite_notes(&repo).await;
    assert_eq!(asked.len(), 1, "the edit was asked about once");
    assert!(asked[0].contains("overwritten"), "{}", asked[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editor_never_sees_a_file_a_planted_link_points_out_to() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("id_secret");
    std::fs::write(&secret, "SECRET_KEY_MATERIAL_4242\n").unwrap();
    let repo = run_harness::repo();
    std::os::unix::fs::symlink(&secret, repo.path().join("notes.txt")).unwrap();
    let (asked, told) = overwrite_notes(&repo).await;
    for seen in asked.iter().chain(&told) {
        assert!(
            !seen.contains("SECRET_KEY_MATERIAL_4242"),
            "the link's target reached the editor: {seen}"
        );
    }
    assert!(
        told.iter().any(|update| update.contains("notes.txt")),
        "the refused call is shown"
    );
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "SECRET_KEY_MATERIAL_4242\n"
    );
}
