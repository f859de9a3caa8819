//! The payload of each journal record type (Appendix E of the reference, plus `routing`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    AgentMessage, CheckSummary, Clarification, FinalReport, PatchSummary, ReviewDecision, Role,
    RoutingSource, TaskStatus, Todo, TodoDependency, WorkerPhase,
};

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

/// `run_start`: the run begins — the first record of every run, with the prompt as typed, so a
/// run killed at any point is listed with it. Each primary attempt is a `worker_start` with
/// phase `primary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStart {
    /// The prompt as the user typed it (clipped for the journal when huge).
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

/// `model_retry`: a model call was tried again on the same model (a model call has no side
/// effects, so a glitch is retried before any fallback).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRetry {
    /// Catalogue id of the model.
    pub model: String,
    /// The attempt that failed (1 = the first).
    pub attempt: u32,
    /// What failed (`stream_interrupted`, `rate_limit`, `server`, …).
    pub kind: String,
    /// The error, secrets redacted.
    pub message: String,
    /// Who was calling (`primary`, `support`, `review`, `router`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The role of the calling agent, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
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
