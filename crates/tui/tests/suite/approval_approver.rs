//! The TUI approver and panel: answers reach the run, nothing hangs when the UI is gone,
//! several requests queue.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::{ctrl, key};
use braincode_protocol::{Phase, Role, ToolCallOrigin};
use braincode_runtime::{ApprovalAnswer, ApprovalHandler, ApprovalRequest};
use braincode_tui::approval::{
    Answered, ApprovalPanel, DENIED, DISMISSED, PanelAction, PendingApproval, TuiApprover,
};
use crossterm::event::KeyCode;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

fn request(call_id: &str) -> ApprovalRequest {
    ApprovalRequest {
        call_id: call_id.into(),
        tool_name: "shell".into(),
        arguments: json!({"command": "cargo test"}),
        policy_summary: "no rule".into(),
        origin: ToolCallOrigin {
            role: Some(Role::Qa),
            phase: Some(Phase::Support),
            ..ToolCallOrigin::default()
        },
        once_only: None,
    }
}

/// Runs `decide` in a task, so the test can play the UI.
fn ask(approver: &TuiApprover, call_id: &str) -> tokio::task::JoinHandle<ApprovalAnswer> {
    let approver = approver.clone();
    let request = request(call_id);
    tokio::spawn(async move { approver.decide(&request).await })
}

async fn next(receiver: &mut UnboundedReceiver<PendingApproval>) -> PendingApproval {
    tokio::time::timeout(Duration::from_secs(10), receiver.recv())
        .await
        .expect("a request in time")
        .expect("the channel open")
}

async fn answer_of(task: tokio::task::JoinHandle<ApprovalAnswer>) -> ApprovalAnswer {
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("decide returned in time")
        .expect("decide did not panic")
}

#[tokio::test]
async fn an_answer_reaches_the_run() {
    let (approver, mut receiver) = TuiApprover::new();
    let task = ask(&approver, "c1");
    let pending = next(&mut receiver).await;
    assert_eq!(pending.request.call_id, "c1");
    let mut panel = ApprovalPanel::new();
    panel.push(pending);
    assert!(panel.is_active());
    let action = panel.handle_key(key(KeyCode::Char('y')));
    assert_eq!(
        action,
        PanelAction::Answered(Answered {
            call_id: "c1".into(),
            tool_name: "shell".into(),
            answer: ApprovalAnswer::Approve,
            delivered: true,
        })
    );
    assert!(!panel.is_active());
    assert_eq!(answer_of(task).await, ApprovalAnswer::Approve);
}

#[tokio::test]
async fn a_closed_ui_blocks_instead_of_hanging() {
    let (approver, receiver) = TuiApprover::new();
    drop(receiver);
    let answer = answer_of(ask(&approver, "c1")).await;
    match answer {
        ApprovalAnswer::Block(reason) => {
            assert!(
                reason.starts_with("no one was there to approve shell"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_dropped_request_blocks() {
    let (approver, mut receiver) = TuiApprover::new();
    let task = ask(&approver, "c1");
    drop(next(&mut receiver).await);
    match answer_of(task).await {
        ApprovalAnswer::Block(reason) => {
            assert!(reason.contains("no one was there to approve"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A panel dropped with requests in it (the UI quits) blocks them too.
    let task = ask(&approver, "c2");
    let mut panel = ApprovalPanel::new();
    panel.push(next(&mut receiver).await);
    drop(panel);
    assert!(matches!(answer_of(task).await, ApprovalAnswer::Block(_)));
}

#[tokio::test]
async fn requests_queue_and_are_answered_in_order() {
    let (approver, mut receiver) = TuiApprover::new();
    let tasks: Vec<_> = ["c1", "c2", "c3", "c4", "c5"]
        .iter()
        .map(|id| ask(&approver, id))
        .collect();
    let mut pending = Vec::new();
    for _ in 0..5 {
        pending.push(next(&mut receiver).await);
    }
    // The tasks may ask in any order; queue them by id to know which answer goes where.
    pending.sort_by(|a, b| a.request.call_id.cmp(&b.request.call_id));
    let mut panel = ApprovalPanel::new();
    for one in pending {
        panel.push(one);
    }
    assert_eq!(panel.len(), 5);
    let first = panel.current().unwrap().call_id.clone();

    panel.handle_key(key(KeyCode::Char('a')));
    panel.handle_key(key(KeyCode::Char('n')));
    panel.handle_key(key(KeyCode::Esc));
    // r opens the reason field; Esc there goes back without answering.
    panel.handle_key(key(KeyCode::Char('r')));
    assert_eq!(panel.reason(), Some(""));
    panel.handle_key(key(KeyCode::Esc));
    assert_eq!(panel.reason(), None);
    assert_eq!(panel.len(), 2);
    panel.handle_key(key(KeyCode::Char('r')));
    for c in "use cargo nextest".chars() {
        panel.handle_key(key(KeyCode::Char(c)));
    }
    // Letters typed into the reason are not answers.
    assert_eq!(panel.len(), 2);
    panel.handle_key(key(KeyCode::Enter));
    panel.handle_key(key(KeyCode::Char('r')));
    assert!(matches!(
        panel.handle_key(key(KeyCode::Enter)),
        PanelAction::Answered(_)
    ));
    assert!(panel.is_empty());

    let mut answers = Vec::new();
    for task in tasks {
        answers.push(answer_of(task).await);
    }
    // The first request shown is the first one the run asked.
    assert_eq!(first, "c1");
    assert_eq!(
        answers,
        [
            ApprovalAnswer::ApproveForSession,
            ApprovalAnswer::Block(DENIED.into()),
            ApprovalAnswer::Block(DISMISSED.into()),
            ApprovalAnswer::Block("use cargo nextest".into()),
            ApprovalAnswer::Block(DENIED.into()),
        ]
    );
}

#[tokio::test]
async fn a_request_the_run_stopped_waiting_for_is_dropped() {
    let (approver, mut receiver) = TuiApprover::new();
    let cancelled = ask(&approver, "c1");
    let waiting = ask(&approver, "c2");
    let mut panel = ApprovalPanel::new();
    let first = next(&mut receiver).await;
    let second = next(&mut receiver).await;
    let (first, second) = if first.request.call_id == "c1" {
        (first, second)
    } else {
        (second, first)
    };
    panel.push(first);
    panel.push(second);
    cancelled.abort();
    let _ = cancelled.await;
    assert_eq!(panel.prune_abandoned(), 1);
    assert_eq!(panel.current().unwrap().call_id, "c2");
    let answered = panel.deny_all("interrupted by Esc");
    assert_eq!(answered.len(), 1);
    assert!(answered[0].delivered);
    assert_eq!(
        answer_of(waiting).await,
        ApprovalAnswer::Block("interrupted by Esc".into())
    );
}

#[tokio::test]
async fn ctrl_c_is_left_to_the_event_loop() {
    let (approver, mut receiver) = TuiApprover::new();
    let _task = ask(&approver, "c1");
    let mut panel = ApprovalPanel::new();
    panel.push(next(&mut receiver).await);
    let ctrl_c = ctrl('c');
    assert_eq!(panel.handle_key(ctrl_c), PanelAction::Unhandled);
    assert_eq!(panel.handle_key(key(KeyCode::Char('x'))), PanelAction::None);
    assert_eq!(panel.len(), 1);
}
