//! The payloads of the worker, todo, gate and dispatch records (Appendix E of the
//! reference); the run-level ones are in `run.rs`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    AgentMessage, CheckSummary, Clarification, FinalReport, HandoffPacket, PatchSummary,
    ReviewDecision, Role, TaskStatus, Todo, TodoDependency, WorkerPhase, WorkerResult,
};

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
    /// The handoff packet the worker was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffPacket>,
    /// Model id of this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `<taskId>-<attempt>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// 1-based attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Where a parallel writer works (its git worktree); none: the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}

/// `worker_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerEnd {
    /// Pipeline phase.
    pub phase: WorkerPhase,
    /// Worker role.
    pub worker: Role,
    /// The worker's result packet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<WorkerResult>,
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
    /// The handoff packet the worker was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffPacket>,
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
    /// Whether the reviewer runs on a different model from the primary's (`false`: the brain
    /// offered no other model, so the review is not independent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub independent: Option<bool>,
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

/// `network_access`: a sandboxed command asked the network allowlist for a connection (the
/// proxy's decision). A transport fact: a replay runs no command and has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkAccess {
    /// The host name (or address) asked for.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether the proxy let it through.
    pub allowed: bool,
    /// Why it was refused, or why the allowed connection failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `repo_facts`: what was read from the repository, without a model, to stand next to a
/// small model's answer about it (languages, manifests, checks, entry points, README).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RepoFacts {
    /// One fact per line.
    pub facts: Vec<String>,
    /// Paths the model's answer names that the repository does not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_paths: Vec<String>,
}

/// What started a handoff summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoffTrigger {
    /// The user asked.
    Manual,
    /// The context-size guard fired.
    Auto,
    /// A run ended: the session's summary so far.
    #[serde(rename = "run_end")]
    RunEnd,
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
    /// What wrote the summary: `heuristic`, or `model:<id>` (the brain's `summarize` role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Why the model summarizer was asked for but the heuristic summary was written
    /// (timeout, no usable model, an empty or failed reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer_fallback: Option<String>,
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
