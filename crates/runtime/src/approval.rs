//! The permission + approval gate every tool call passes.
//!
//! Order: the permission policy first (a `deny` is final: no mode, flag or person can
//! override it), then whether the call needs approval, then who approves: the mode
//! (radical / `--yes`), the runtime policy (`--allow-edits` approves file edits), a person
//! through an [`ApprovalHandler`] (TUI, web panel, terminal prompt), or nobody — then it is
//! blocked. Every decision that involved a rule or an approval is journaled.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use braincode_protocol::{
    ApprovalDecision, Approver, Mode, Record, ToolApprovalDecision, ToolCallOrigin,
};
use braincode_tools::{
    PermissionPolicy, PermissionRequest, PolicyDecision, ToolPermission, requires_approval,
    summarize_json,
};
use serde_json::Value;

use crate::agent::{GateOutcome, GateRequest, ToolGate};
use crate::sink::RunSink;

/// How much a run may change, chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    /// Only read tools are offered (the default).
    #[default]
    ReadOnly,
    /// Read and edit tools are offered; file edits are approved by the runtime.
    AllowEdits,
    /// Every tool is offered; every call is approved except permission-policy denials.
    Yes,
}

impl PermissionMode {
    /// The hook/payload name of the mode.
    pub const fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "default",
            PermissionMode::AllowEdits => "acceptEdits",
            PermissionMode::Yes => "bypassPermissions",
        }
    }
}

/// A call waiting for a person's decision.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// Provider call id.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// The arguments.
    pub arguments: Value,
    /// What the permission policy said (rules that matched).
    pub policy_summary: String,
    /// Who is calling.
    pub origin: ToolCallOrigin,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalAnswer {
    /// Run this call.
    Approve,
    /// Run this call and every later call of the same tool in this session.
    ApproveForSession,
    /// Do not run it.
    Block(String),
}

/// Asks a person (TUI panel, web panel, terminal prompt).
#[async_trait]
pub trait ApprovalHandler: Send + Sync {
    /// Returns the person's decision for one call.
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer;
}

/// The gate used by real runs.
pub struct PolicyGate {
    policy: PermissionPolicy,
    project_root: PathBuf,
    mode: Mode,
    permission: PermissionMode,
    handler: Option<std::sync::Arc<dyn ApprovalHandler>>,
    sink: RunSink,
    approved_for_session: Mutex<HashSet<String>>,
    review_required: AtomicBool,
}

impl PolicyGate {
    /// A gate for one run.
    pub fn new(
        policy: PermissionPolicy,
        project_root: PathBuf,
        mode: Mode,
        permission: PermissionMode,
        handler: Option<std::sync::Arc<dyn ApprovalHandler>>,
        sink: RunSink,
    ) -> Self {
        Self {
            policy,
            project_root,
            mode,
            permission,
            handler,
            sink,
            approved_for_session: Mutex::new(HashSet::new()),
            review_required: AtomicBool::new(false),
        }
    }

    /// Whether a matched rule asked for an independent review.
    pub fn review_required(&self) -> bool {
        self.review_required.load(Ordering::SeqCst)
    }

    fn session_approved(&self, tool: &str) -> bool {
        match self.approved_for_session.lock() {
            Ok(set) => set.contains(tool),
            Err(poisoned) => poisoned.into_inner().contains(tool),
        }
    }

    fn approve_for_session(&self, tool: &str) {
        match self.approved_for_session.lock() {
            Ok(mut set) => set.insert(tool.to_string()),
            Err(poisoned) => poisoned.into_inner().insert(tool.to_string()),
        };
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        request: &GateRequest<'_>,
        decision: ApprovalDecision,
        approver: Approver,
        reason: Option<String>,
        policy: Option<Value>,
    ) {
        self.sink
            .record(Record::ToolApprovalDecision(ToolApprovalDecision {
                tool_call_id: request.call.id.clone(),
                tool_name: request.tool.name.clone(),
                decision,
                approver,
                origin: request.origin.clone(),
                reason,
                args_summary: summarize_json(&request.call.arguments),
                permission_policy: policy,
            }));
    }
}

#[async_trait]
impl ToolGate for PolicyGate {
    async fn check(&self, request: GateRequest<'_>) -> GateOutcome {
        let evaluation = self.policy.evaluate(&PermissionRequest {
            tool_name: &request.tool.name,
            arguments: &request.call.arguments,
            project_root: &self.project_root,
        });
        let policy_json = (!evaluation.matches.is_empty() || !evaluation.notes.is_empty())
            .then(|| serde_json::to_value(&evaluation).ok())
            .flatten();
        if let Some(message) = evaluation.denial_message() {
            self.record(
                &request,
                ApprovalDecision::Denied,
                Approver::PermissionPolicy,
                Some(message.clone()),
                policy_json,
            );
            return GateOutcome::Refuse(message);
        }
        if evaluation.review_required {
            self.review_required.store(true, Ordering::SeqCst);
        }
        let needs_approval = requires_approval(request.tool, &request.call.arguments, &evaluation);
        if !needs_approval {
            if evaluation.decision == Some(PolicyDecision::Allow) {
                self.record(
                    &request,
                    ApprovalDecision::Allowed,
                    Approver::PermissionPolicy,
                    None,
                    policy_json,
                );
            }
            return GateOutcome::Allow;
        }
        if self.mode == Mode::Radical || self.permission == PermissionMode::Yes {
            let why = if self.mode == Mode::Radical {
                "radical mode"
            } else {
                "--yes"
            };
            self.record(
                &request,
                ApprovalDecision::AutoApproved,
                Approver::ModePolicy,
                Some(format!("approved by {why}")),
                policy_json,
            );
            return GateOutcome::Allow;
        }
        if self.permission == PermissionMode::AllowEdits
            && request.tool.permission == ToolPermission::Write
        {
            self.record(
                &request,
                ApprovalDecision::Approved,
                Approver::RuntimePolicy,
                Some("file edits approved by --allow-edits".into()),
                policy_json,
            );
            return GateOutcome::Allow;
        }
        if self.session_approved(&request.tool.name) {
            self.record(
                &request,
                ApprovalDecision::Approved,
                Approver::Human,
                Some("approved earlier for this session".into()),
                policy_json,
            );
            return GateOutcome::Allow;
        }
        let Some(handler) = &self.handler else {
            let reason = format!(
                "{} needs approval and nobody can approve it in this run; rerun with {} to allow it",
                request.tool.name,
                if request.tool.permission == ToolPermission::Write {
                    "--allow-edits or --yes"
                } else {
                    "--yes"
                }
            );
            self.record(
                &request,
                ApprovalDecision::Blocked,
                Approver::RuntimePolicy,
                Some(reason.clone()),
                policy_json,
            );
            return GateOutcome::Refuse(format!("blocked: {reason}"));
        };
        let ask = ApprovalRequest {
            call_id: request.call.id.clone(),
            tool_name: request.tool.name.clone(),
            arguments: request.call.arguments.clone(),
            policy_summary: evaluation.summary(),
            origin: request.origin.clone(),
        };
        match handler.decide(&ask).await {
            ApprovalAnswer::Approve => {
                self.record(
                    &request,
                    ApprovalDecision::Approved,
                    Approver::Human,
                    None,
                    policy_json,
                );
                GateOutcome::Allow
            }
            ApprovalAnswer::ApproveForSession => {
                self.approve_for_session(&request.tool.name);
                self.record(
                    &request,
                    ApprovalDecision::Approved,
                    Approver::Human,
                    Some("approved for the rest of the session".into()),
                    policy_json,
                );
                GateOutcome::Allow
            }
            ApprovalAnswer::Block(reason) => {
                self.record(
                    &request,
                    ApprovalDecision::Blocked,
                    Approver::Human,
                    Some(reason.clone()),
                    policy_json,
                );
                GateOutcome::Refuse(format!("blocked by the user: {reason}"))
            }
        }
    }
}
