//! The payloads of the audit records: tool approvals and executions, hooks and token usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Phase, PolicyEvaluation, Role, Usage};

fn is_false(value: &bool) -> bool {
    !*value
}

/// Outcome of the approval step for one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// A policy allowed it without asking.
    Allowed,
    /// Someone approved it.
    Approved,
    /// Radical mode approved it.
    AutoApproved,
    /// Someone (or a missing approver) blocked it.
    Blocked,
    /// A permission rule denied it.
    Denied,
}

/// Who made an approval decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approver {
    /// A person (TUI, web panel, CLI prompt).
    Human,
    /// The tools.json permission policy.
    PermissionPolicy,
    /// The mode (radical, `--yes`).
    ModePolicy,
    /// The runtime's own rules (read-only mode, `--allow-edits`).
    RuntimePolicy,
    /// A `PermissionRequest` hook answered instead of a person (never for protected calls
    /// or commands without the OS sandbox: those stay a person's).
    Hook,
}

/// Who ran a tool call: role, phase and ids.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallOrigin {
    /// Phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Agent session (`<taskId>-<attempt>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// Task context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Parent (brain) context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Brain id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain_id: Option<String>,
}

/// `tool_approval_decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolApprovalDecision {
    /// Provider tool-call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Outcome.
    pub decision: ApprovalDecision,
    /// Who decided.
    pub approver: Approver,
    /// Who called.
    #[serde(flatten)]
    pub origin: ToolCallOrigin,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Bounded summary of the arguments.
    #[serde(default)]
    pub args_summary: Value,
    /// The permission-policy evaluation (matched rules, unanalysable and protected reasons),
    /// when it had something to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_policy: Option<PolicyEvaluation>,
}

/// Start or end of a tool execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStage {
    /// About to run.
    Start,
    /// Finished.
    End,
}

/// `tool_execution_summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecutionSummary {
    /// Provider tool-call id.
    pub tool_call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Start or end.
    pub stage: ToolStage,
    /// Who called.
    #[serde(flatten)]
    pub origin: ToolCallOrigin,
    /// Bounded summary of the arguments (start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_summary: Option<Value>,
    /// Whether the call failed (end).
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// Bounded summary of the result (end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_summary: Option<Value>,
    /// The tool's output text as the model saw it (end; clipped for the journal), so a replay
    /// can hand the same output back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// Wall time (end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// How one hook handler ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookOutcome {
    /// Exit 0.
    Completed,
    /// The hook said no (exit 2, `decision: block`, `continue: false`).
    Blocked,
    /// Non-zero exit other than 2.
    Failed,
    /// Killed after its timeout.
    TimedOut,
    /// Could not be started, or died on a signal.
    Crashed,
    /// Not run (untrusted, disabled, async, unsupported type).
    Skipped,
}

/// One hook handler's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRun {
    /// Config file the handler came from.
    pub source: String,
    /// The command.
    pub command: String,
    /// Outcome.
    pub outcome: HookOutcome,
    /// Exit code, if it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Wall time.
    #[serde(default)]
    pub duration_ms: u64,
    /// Block reason, failure message or skip reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `hook_*` records: what the handlers of one event did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRecord {
    /// Event name (`SessionStart`, …).
    pub event_name: String,
    /// Value matched against (`startup`, a role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Every handler that matched.
    #[serde(default)]
    pub records: Vec<HookRun>,
    /// Context the hooks added.
    #[serde(default)]
    pub additional_context: Vec<String>,
    /// First block reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<String>,
    /// The agent session the event belongs to (tool and compaction events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The tool call the event is about (tool events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The permission decision the hooks returned (`PreToolUse`, `PermissionRequest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<HookDecision>,
    /// Why a hook allowed or asked (shown to the person an `ask` reaches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    /// The arguments a `PreToolUse` hook replaced the call's with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
}

/// A permission decision returned by tool hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Let the call go on (it still passes the permission policy and approval).
    Allow,
    /// A person must decide the call.
    Ask,
    /// Do not run the call.
    Deny,
}

/// `token_usage`: one assistant message's usage.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    /// Brain id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain_id: Option<String>,
    /// Model id (models.json id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// Provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Agent session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// Task context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Parent context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// `<agentSessionId>:<messageIndex>:<usageIndex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Counts.
    pub usage: Usage,
    /// What the call cost, in millionths of a US dollar, at the catalogue's prices when it
    /// was made (absent: the model has no price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
    /// Wall time of the call, from the request to the reply's last byte, retries of an
    /// interrupted reply included (absent: not measured, as in journals written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}
