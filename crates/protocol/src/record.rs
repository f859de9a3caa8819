//! Session journal records (one JSON object per line of `<home>/sessions/<id>.jsonl`).
//!
//! Every line is `{"timestamp": <epoch ms>, "type": "<record type>", ...fields}`. A line whose
//! `type` this version does not know is kept verbatim as [`Record::Unknown`], so older binaries
//! can read newer journals without losing anything. Payloads owned by other crates (plans,
//! handoff packets, worker results, the BrainTaskContext) are carried as opaque JSON and typed
//! by the crate that owns them.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{
    AgentMessage, CheckSummary, Clarification, FinalReport, PatchSummary, Phase, ReviewDecision,
    Role, RoutingSource, TaskStatus, Todo, TodoDependency, Usage, WorkerPhase,
};

fn is_false(value: &bool) -> bool {
    !*value
}

/// Summary of the project and user support files a run saw.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSupportSummary {
    /// Absolute project root.
    pub root: String,
    /// Whether a project AGENTS.md was found.
    #[serde(default)]
    pub agents_md: bool,
    /// Whether a user AGENTS.md was found.
    #[serde(default)]
    pub user_agents_md: bool,
    /// Skill ids (project and user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// MCP server names (project and user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
    /// Number of hook handlers configured.
    #[serde(default)]
    pub hooks: u32,
}

/// `run_start`: the primary agent starts an attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStart {
    /// The request as the primary sees it.
    pub prompt: String,
    /// The runtime plan (opaque; typed by the runtime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
    /// What project support was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_support: Option<ProjectSupportSummary>,
    /// Model candidate that runs this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// 1-based attempt number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `run_end`: the run finished and answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    /// The final answer.
    pub summary: String,
    /// Worker results (opaque WorkerResult packets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_results: Option<Vec<Value>>,
    /// What changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchSummary>,
    /// Checks gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckSummary>,
    /// Review gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_decision: Option<ReviewDecision>,
    /// Final status (same as the report's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<crate::FinalStatus>,
    /// Fix-loop passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iterations: Option<u32>,
    /// Attempt that produced the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `run_error`: an attempt (or the whole run) failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// Human-readable error.
    pub error: String,
    /// Error class (`aborted`, `auth`, `rate_limit`, `network`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Attempt that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Whether the next candidate will be tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub will_fallback: Option<bool>,
}

/// `worker_start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStart {
    /// Pipeline phase.
    pub phase: WorkerPhase,
    /// Worker role.
    pub worker: Role,
    /// Worker goal.
    pub goal: String,
    /// Handoff packet (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Value>,
    /// Model id of this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `<taskId>-<attempt>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// 1-based attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `worker_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerEnd {
    /// Pipeline phase.
    pub phase: WorkerPhase,
    /// Worker role.
    pub worker: Role,
    /// WorkerResult packet (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Attempt that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `worker_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerError {
    /// Pipeline phase.
    pub phase: WorkerPhase,
    /// Worker role.
    pub worker: Role,
    /// What failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Handoff packet (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Value>,
    /// Attempt that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Whether the next candidate will be tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub will_fallback: Option<bool>,
}

/// `agent_message`: a handoff or result packet crossed the brain/agent boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageRecord {
    /// Pipeline phase.
    pub phase: WorkerPhase,
    /// Worker role.
    pub worker: Role,
    /// The envelope.
    pub message: AgentMessage,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `todo_plan`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoPlan {
    /// Todos in execution order.
    pub todos: Vec<Todo>,
    /// Normalized dependency edges.
    #[serde(default)]
    pub dependencies: Vec<TodoDependency>,
    /// Plan reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `todo_update`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoUpdate {
    /// Phase that changed the todos.
    pub phase: WorkerPhase,
    /// Role that owns them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// New status.
    pub status: TaskStatus,
    /// Todos that changed.
    pub todo_ids: Vec<String>,
    /// Every todo after the change.
    #[serde(default)]
    pub todos: Vec<Todo>,
    /// Outcome summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Failure or blocking reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `context_plan`: the BrainTaskContext of the run (opaque).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPlan {
    /// The BrainTaskContext.
    pub context: Value,
}

/// `routing`: how the plan was made, including why the router was not used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingRecord {
    /// Plan source.
    pub source: RoutingSource,
    /// Primary role.
    pub primary_role: Role,
    /// Why this plan.
    pub reason: String,
    /// Router confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Router model used (or tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What went wrong when the router was wanted but the heuristic was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// `clarification_request`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClarificationRequest {
    /// The question.
    pub clarification: Clarification,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `check_summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSummaryRecord {
    /// The summary.
    #[serde(flatten)]
    pub summary: CheckSummary,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Fix-loop pass (0 = before any fix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iteration: Option<u32>,
}

/// `review_decision`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewDecisionRecord {
    /// The decision.
    #[serde(flatten)]
    pub decision: ReviewDecision,
    /// Reviewer model, when known (independence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Fix-loop pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iteration: Option<u32>,
}

/// `review_artifacts_summary`: what the reviewer was shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewArtifactsSummary {
    /// Changed files shown.
    #[serde(default)]
    pub changed_files: Vec<String>,
    /// Whether the diff was clipped.
    #[serde(default)]
    pub diff_truncated: bool,
    /// Checks status at review time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks_status: Option<String>,
    /// Risk tier of the patch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_tier: Option<String>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Fix-loop pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iteration: Option<u32>,
}

/// Why a fix pass started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixTrigger {
    /// Checks failed.
    ChecksFailed,
    /// The reviewer requested changes.
    ChangesRequested,
}

/// `fix_iteration`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FixIteration {
    /// 1-based pass.
    pub iteration: u32,
    /// Why.
    pub trigger: FixTrigger,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `patch_summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchSummaryRecord {
    /// The summary.
    #[serde(flatten)]
    pub patch: PatchSummary,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `final_report`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalReportRecord {
    /// The report.
    pub final_report: Box<FinalReport>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// `mcp_connect`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConnect {
    /// Connection report (opaque).
    pub report: Value,
}

/// Tool calls of one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseToolCalls {
    /// Calls started.
    pub total: u64,
    /// Calls that failed.
    pub failed: u64,
}

/// `tool_call_count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCount {
    /// Calls started.
    pub total: u64,
    /// Calls that failed.
    pub failed: u64,
    /// Split by phase.
    #[serde(default)]
    pub by_phase: BTreeMap<String, PhaseToolCalls>,
    /// Attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
}

/// What started a handoff summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffTrigger {
    /// The user asked.
    Manual,
    /// The context-size guard fired.
    Auto,
}

/// `handoff`: a summary later runs can continue from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handoff {
    /// The summary (bounded, see the `context` crate).
    pub summary: String,
    /// What the next run should focus on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// What started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<HandoffTrigger>,
    /// Estimated request size when the guard fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_bytes: Option<u64>,
    /// The guard's limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
}

/// Stage of a dynamic dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DispatchPhase {
    /// The primary asked for a specialist.
    Request,
    /// The specialist answered.
    Result,
}

/// `dynamic_dispatch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicDispatch {
    /// Stage.
    pub phase: DispatchPhase,
    /// Specialist role.
    pub role: Role,
    /// Specialist goal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    /// Why the primary asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Specialist context id.
    pub context_id: String,
    /// Role of the primary that asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_role: Option<Role>,
    /// Result status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// Result summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// How results will be validated (execution plan review).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationPlan {
    /// Checks description.
    #[serde(default)]
    pub checks: Vec<String>,
    /// Evidence that will be collected.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// Success criteria (todo titles).
    #[serde(default)]
    pub success_criteria: Vec<String>,
}

/// `execution_plan_review`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPlanReview {
    /// `<contextId>:plan`.
    pub plan_id: String,
    /// `approved` or `auto_approved`.
    pub status: String,
    /// Who approved.
    pub approver: String,
    /// Whether an independent review is required.
    pub required_review: bool,
    /// Declared side effects.
    pub proposed_side_effects: Vec<crate::SideEffect>,
    /// Validation plan.
    pub validation_plan: ValidationPlan,
    /// What made the plan risky.
    #[serde(default)]
    pub risk_triggers: Vec<String>,
    /// Known risks before execution.
    #[serde(default)]
    pub residual_pre_execution_risks: Vec<String>,
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
    /// The permission-policy evaluation (matched rules), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_policy: Option<Value>,
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
}

/// `token_usage`: one assistant message's usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// One journal record. Unknown types are kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// The primary starts an attempt.
    RunStart(RunStart),
    /// The run answered.
    RunEnd(RunEnd),
    /// An attempt or the run failed.
    RunError(RunError),
    /// A worker starts.
    WorkerStart(WorkerStart),
    /// A worker finished.
    WorkerEnd(WorkerEnd),
    /// A worker attempt failed.
    WorkerError(WorkerError),
    /// A packet crossed the brain/agent boundary.
    AgentMessage(AgentMessageRecord),
    /// The plan's todos.
    TodoPlan(TodoPlan),
    /// Todos changed state.
    TodoUpdate(TodoUpdate),
    /// The BrainTaskContext.
    ContextPlan(ContextPlan),
    /// How the plan was made.
    Routing(RoutingRecord),
    /// The run stopped to ask.
    ClarificationRequest(ClarificationRequest),
    /// Checks gate.
    CheckSummary(CheckSummaryRecord),
    /// Review gate.
    ReviewDecision(ReviewDecisionRecord),
    /// What the reviewer saw.
    ReviewArtifactsSummary(ReviewArtifactsSummary),
    /// A fix pass starts.
    FixIteration(FixIteration),
    /// What changed.
    PatchSummary(PatchSummaryRecord),
    /// The final report.
    FinalReport(FinalReportRecord),
    /// MCP connection report.
    McpConnect(McpConnect),
    /// Tool-call counts.
    ToolCallCount(ToolCallCount),
    /// A handoff summary.
    Handoff(Handoff),
    /// A specialist dispatch.
    DynamicDispatch(DynamicDispatch),
    /// The pre-execution plan review.
    ExecutionPlanReview(ExecutionPlanReview),
    /// A tool call's approval.
    ToolApprovalDecision(ToolApprovalDecision),
    /// A tool call's start or end.
    ToolExecutionSummary(ToolExecutionSummary),
    /// SessionStart hooks.
    HookSessionStart(HookRecord),
    /// UserPromptSubmit hooks.
    HookUserPromptSubmit(HookRecord),
    /// SubagentStart hooks.
    HookSubagentStart(HookRecord),
    /// SubagentStop hooks.
    HookSubagentStop(HookRecord),
    /// Stop hooks.
    HookStop(HookRecord),
    /// One assistant message's token usage.
    TokenUsage(TokenUsage),
    /// A record type this version does not know (or a known type whose fields did not
    /// parse), kept verbatim including its `type`.
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

impl Record {
    /// Every record type this version knows.
    pub const KNOWN_TYPES: [&'static str; 31] = [
        "run_start",
        "run_end",
        "run_error",
        "worker_start",
        "worker_end",
        "worker_error",
        "agent_message",
        "todo_plan",
        "todo_update",
        "context_plan",
        "routing",
        "clarification_request",
        "check_summary",
        "review_decision",
        "review_artifacts_summary",
        "fix_iteration",
        "patch_summary",
        "final_report",
        "mcp_connect",
        "tool_call_count",
        "handoff",
        "dynamic_dispatch",
        "execution_plan_review",
        "tool_approval_decision",
        "tool_execution_summary",
        "hook_session_start",
        "hook_user_prompt_submit",
        "hook_subagent_start",
        "hook_subagent_stop",
        "hook_stop",
        "token_usage",
    ];

    /// The record's `type` value (`""` for an unknown record without one).
    pub fn type_name(&self) -> &str {
        match self {
            Record::RunStart(_) => "run_start",
            Record::RunEnd(_) => "run_end",
            Record::RunError(_) => "run_error",
            Record::WorkerStart(_) => "worker_start",
            Record::WorkerEnd(_) => "worker_end",
            Record::WorkerError(_) => "worker_error",
            Record::AgentMessage(_) => "agent_message",
            Record::TodoPlan(_) => "todo_plan",
            Record::TodoUpdate(_) => "todo_update",
            Record::ContextPlan(_) => "context_plan",
            Record::Routing(_) => "routing",
            Record::ClarificationRequest(_) => "clarification_request",
            Record::CheckSummary(_) => "check_summary",
            Record::ReviewDecision(_) => "review_decision",
            Record::ReviewArtifactsSummary(_) => "review_artifacts_summary",
            Record::FixIteration(_) => "fix_iteration",
            Record::PatchSummary(_) => "patch_summary",
            Record::FinalReport(_) => "final_report",
            Record::McpConnect(_) => "mcp_connect",
            Record::ToolCallCount(_) => "tool_call_count",
            Record::Handoff(_) => "handoff",
            Record::DynamicDispatch(_) => "dynamic_dispatch",
            Record::ExecutionPlanReview(_) => "execution_plan_review",
            Record::ToolApprovalDecision(_) => "tool_approval_decision",
            Record::ToolExecutionSummary(_) => "tool_execution_summary",
            Record::HookSessionStart(_) => "hook_session_start",
            Record::HookUserPromptSubmit(_) => "hook_user_prompt_submit",
            Record::HookSubagentStart(_) => "hook_subagent_start",
            Record::HookSubagentStop(_) => "hook_subagent_stop",
            Record::HookStop(_) => "hook_stop",
            Record::TokenUsage(_) => "token_usage",
            Record::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// Whether this record must reach the disk before the writer goes on (fsync): the end of
    /// a run and handoffs are what later runs depend on.
    pub fn is_durability_point(&self) -> bool {
        matches!(
            self,
            Record::RunEnd(_) | Record::RunError(_) | Record::Handoff(_)
        )
    }

    /// For an [`Record::Unknown`] whose `type` is one this version knows: the fields did not
    /// match the expected shape.
    pub fn is_malformed_known(&self) -> bool {
        match self {
            Record::Unknown(map) => map
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|ty| Self::KNOWN_TYPES.contains(&ty)),
            _ => false,
        }
    }
}

/// One line of a session journal.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The record.
    pub record: Record,
}

impl JournalEntry {
    /// Wraps a record with a timestamp.
    pub fn new(timestamp: i64, record: Record) -> Self {
        Self { timestamp, record }
    }
}

impl Serialize for JournalEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `timestamp` first, then the record's own fields (`type` leads for known records).
        let body = serde_json::to_value(&self.record).map_err(serde::ser::Error::custom)?;
        let mut map = Map::new();
        map.insert("timestamp".into(), Value::from(self.timestamp));
        if let Value::Object(fields) = body {
            for (key, value) in fields {
                if key != "timestamp" {
                    map.insert(key, value);
                }
            }
        }
        map.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JournalEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let timestamp = match map.shift_remove("timestamp") {
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .ok_or_else(|| serde::de::Error::custom("timestamp is not an integer"))?,
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "timestamp must be epoch milliseconds, found {other}"
                )));
            }
            None => 0,
        };
        if !map.get("type").is_some_and(Value::is_string) {
            return Err(serde::de::Error::custom(
                "record has no string \"type\" field",
            ));
        }
        let record = serde_json::from_value::<Record>(Value::Object(map))
            .map_err(serde::de::Error::custom)?;
        Ok(JournalEntry { timestamp, record })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample_records() -> Vec<Record> {
        vec![
            Record::RunStart(RunStart {
                prompt: "hello".into(),
                plan: Some(json!({"primary": "rush"})),
                project_support: Some(ProjectSupportSummary {
                    root: "/p".into(),
                    ..Default::default()
                }),
                model: None,
                attempt: Some(1),
            }),
            Record::RunError(RunError {
                error: "boom".into(),
                kind: Some("aborted".into()),
                attempt: None,
                will_fallback: Some(false),
            }),
            Record::TokenUsage(TokenUsage {
                role: Some(Role::Backend),
                phase: Some(Phase::Support),
                brain_id: Some("brain".into()),
                model_id: Some("local/smollm2".into()),
                provider: Some("local".into()),
                agent_session_id: None,
                task_id: None,
                parent_id: None,
                turn_id: Some("t:0:0".into()),
                attempt: Some(1),
                usage: Usage::new(1, 2, 3, 4),
            }),
            Record::HookStop(HookRecord {
                event_name: "Stop".into(),
                matcher: None,
                records: vec![],
                additional_context: vec!["ctx".into()],
                blocked_reason: None,
            }),
            Record::Handoff(Handoff {
                summary: "s".into(),
                focus: None,
                trigger: Some(HandoffTrigger::Manual),
                estimated_bytes: None,
                limit_bytes: None,
            }),
        ]
    }

    #[test]
    fn entries_round_trip_with_timestamp_and_type_first() {
        for record in sample_records() {
            let entry = JournalEntry::new(1_700_000_000_000, record.clone());
            let line = serde_json::to_string(&entry).unwrap();
            assert!(
                line.starts_with(&format!(
                    "{{\"timestamp\":1700000000000,\"type\":\"{}\"",
                    record.type_name()
                )),
                "{line}"
            );
            let back: JournalEntry = serde_json::from_str(&line).unwrap();
            assert_eq!(back, entry);
            assert!(!back.record.is_malformed_known());
        }
    }

    #[test]
    fn unknown_types_are_kept_verbatim() {
        let line = r#"{"timestamp":5,"type":"future_thing","nested":{"a":[1,2]},"x":"y"}"#;
        let entry: JournalEntry = serde_json::from_str(line).unwrap();
        assert_eq!(entry.record.type_name(), "future_thing");
        assert!(matches!(entry.record, Record::Unknown(_)));
        assert!(!entry.record.is_malformed_known());
        assert_eq!(serde_json::to_string(&entry).unwrap(), line);
    }

    #[test]
    fn known_type_with_bad_fields_is_kept_and_flagged() {
        let line = r#"{"timestamp":5,"type":"run_start","prompt":42}"#;
        let entry: JournalEntry = serde_json::from_str(line).unwrap();
        assert!(entry.record.is_malformed_known());
        assert_eq!(entry.record.type_name(), "run_start");
    }

    #[test]
    fn lines_without_a_type_are_errors() {
        assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":5}"#).is_err());
        assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":"x","type":"a"}"#).is_err());
        assert!(serde_json::from_str::<JournalEntry>("[1]").is_err());
    }

    #[test]
    fn every_known_type_name_is_listed() {
        for record in sample_records() {
            assert!(Record::KNOWN_TYPES.contains(&record.type_name()));
        }
        let mut sorted = Record::KNOWN_TYPES.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), Record::KNOWN_TYPES.len());
    }

    #[test]
    fn durability_points_are_run_end_error_and_handoff() {
        let records = sample_records();
        assert!(!records[0].is_durability_point());
        assert!(records[1].is_durability_point());
        assert!(records[4].is_durability_point());
    }
}
