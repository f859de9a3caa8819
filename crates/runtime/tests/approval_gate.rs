//! The permission + approval gate: a policy `deny` is final whatever the mode; everything else
//! is decided by the mode, the runtime policy, or a person — and journaled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use braincode_llm::ToolCall;
use braincode_protocol::{ApprovalDecision, Approver, Mode, Record, ToolCallOrigin};
use braincode_runtime::agent::{GateOutcome, GateRequest, ToolGate};
use braincode_runtime::approval::PolicyGate;
use braincode_runtime::{
    ApprovalAnswer, ApprovalHandler, ApprovalRequest, MemoryJournal, PermissionMode, RunSink,
};
use braincode_tools::{PermissionPolicy, ToolDefinition, ToolPermission, ToolRisk};
use serde_json::{Value, json};

fn tool(name: &str, permission: ToolPermission) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        permission,
        risk: ToolRisk::Medium,
    }
}

struct Scripted {
    answers: Mutex<Vec<ApprovalAnswer>>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl ApprovalHandler for Scripted {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.tool_name.clone());
        self.answers.lock().unwrap().remove(0)
    }
}

struct Gate {
    gate: PolicyGate,
    journal: MemoryJournal,
    _root: tempfile::TempDir,
}

fn gate(mode: Mode, permission: PermissionMode, handler: Option<Arc<dyn ApprovalHandler>>) -> Gate {
    let root = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::default();
    let sink = RunSink::new("s", Some(Box::new(journal.clone())), Vec::new());
    let gate = PolicyGate::new(
        PermissionPolicy::default(),
        root.path().to_path_buf(),
        mode,
        permission,
        handler,
        sink,
    );
    Gate {
        gate,
        journal,
        _root: root,
    }
}

async fn check(gate: &PolicyGate, definition: &ToolDefinition, arguments: Value) -> GateOutcome {
    let call = ToolCall::from_raw("call-1", definition.name.clone(), arguments.to_string());
    let origin = ToolCallOrigin::default();
    gate.check(GateRequest {
        call: &call,
        tool: definition,
        origin: &origin,
    })
    .await
}

fn decisions(journal: &MemoryJournal) -> Vec<(ApprovalDecision, Approver)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::ToolApprovalDecision(d) => Some((d.decision, d.approver)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_policy_deny_wins_over_yes_radical_and_a_person() {
    let shell = tool("shell", ToolPermission::Execute);
    let handler: Arc<dyn ApprovalHandler> = Arc::new(Scripted {
        answers: Mutex::new(vec![ApprovalAnswer::Approve]),
        asked: Mutex::new(Vec::new()),
    });
    for (mode, permission, handler) in [
        (Mode::Auto, PermissionMode::Yes, None),
        (Mode::Radical, PermissionMode::Yes, None),
        (Mode::Auto, PermissionMode::ReadOnly, Some(handler.clone())),
    ] {
        let g = gate(mode, permission, handler);
        for command in [
            "git push origin main",
            "sh -c 'git push'",
            "ls && rm -rf build",
        ] {
            let outcome = check(&g.gate, &shell, json!({"command": command})).await;
            match outcome {
                GateOutcome::Refuse(message) => {
                    assert!(message.contains("Permission policy denied"), "{message}");
                }
                GateOutcome::Allow => panic!("{command} was allowed under {mode:?}/{permission:?}"),
            }
        }
        assert!(
            decisions(&g.journal)
                .iter()
                .all(|d| *d == (ApprovalDecision::Denied, Approver::PermissionPolicy))
        );
    }
}

#[tokio::test]
async fn without_an_approver_risky_calls_are_blocked_and_reads_pass() {
    let g = gate(Mode::Auto, PermissionMode::ReadOnly, None);
    let read = tool("read_file", ToolPermission::Read);
    assert_eq!(
        check(&g.gate, &read, json!({"path": "a.txt"})).await,
        GateOutcome::Allow
    );
    let shell = tool("shell", ToolPermission::Execute);
    let GateOutcome::Refuse(message) = check(&g.gate, &shell, json!({"command": "ls"})).await
    else {
        panic!("a command ran without approval");
    };
    assert!(
        message.contains("--yes"),
        "the refusal says how to allow it: {message}"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![(ApprovalDecision::Blocked, Approver::RuntimePolicy)]
    );
}

#[tokio::test]
async fn allow_edits_approves_file_edits_but_not_commands() {
    let g = gate(Mode::Auto, PermissionMode::AllowEdits, None);
    let edit = tool("edit_file", ToolPermission::Write);
    assert_eq!(
        check(
            &g.gate,
            &edit,
            json!({"path": "src/lib.rs", "content": "x"})
        )
        .await,
        GateOutcome::Allow
    );
    let shell = tool("shell", ToolPermission::Execute);
    assert!(matches!(
        check(&g.gate, &shell, json!({"command": "make"})).await,
        GateOutcome::Refuse(_)
    ));
    assert_eq!(
        decisions(&g.journal),
        vec![
            (ApprovalDecision::Approved, Approver::RuntimePolicy),
            (ApprovalDecision::Blocked, Approver::RuntimePolicy)
        ]
    );
}

#[tokio::test]
async fn radical_mode_auto_approves_and_review_rules_raise_the_flag() {
    let g = gate(Mode::Radical, PermissionMode::AllowEdits, None);
    let edit = tool("edit_file", ToolPermission::Write);
    assert!(!g.gate.review_required());
    // `src/x/../auth/a.ts` resolves into src/auth/**, a review-required default rule.
    assert_eq!(
        check(
            &g.gate,
            &edit,
            json!({"path": "src/x/../auth/a.ts", "content": "x"})
        )
        .await,
        GateOutcome::Allow
    );
    assert!(
        g.gate.review_required(),
        "a review-required rule forces a review worker"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![(ApprovalDecision::AutoApproved, Approver::ModePolicy)]
    );
}

#[tokio::test]
async fn a_person_approves_once_for_the_session_or_blocks() {
    let handler = Arc::new(Scripted {
        answers: Mutex::new(vec![
            ApprovalAnswer::Block("not now".into()),
            ApprovalAnswer::ApproveForSession,
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let g = gate(Mode::Auto, PermissionMode::ReadOnly, Some(handler.clone()));
    let shell = tool("shell", ToolPermission::Execute);
    let GateOutcome::Refuse(message) =
        check(&g.gate, &shell, json!({"command": "make test"})).await
    else {
        panic!("blocked call ran");
    };
    assert!(message.contains("not now"));
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "make test"})).await,
        GateOutcome::Allow
    );
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "make lint"})).await,
        GateOutcome::Allow
    );
    assert_eq!(
        handler.asked.lock().unwrap().len(),
        2,
        "the session approval is not asked again"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![
            (ApprovalDecision::Blocked, Approver::Human),
            (ApprovalDecision::Approved, Approver::Human),
            (ApprovalDecision::Approved, Approver::Human),
        ]
    );
}
