//! Plans and the FinalReport (v1) that every run ends with; the patch, checks and review it
//! carries are in [`crate::verification`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{
    CheckSummary, Mode, PatchSummary, PlanReview, ReviewDecision, ReviewVerdict, Role, TaskStatus,
    Usage, WorkerPhase,
};

/// One todo of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Todo {
    /// Short stable id (`[a-z0-9_-]+`).
    pub id: String,
    /// What to do.
    pub title: String,
    /// Owner role.
    pub role: Role,
    /// Current state.
    #[serde(default)]
    pub status: TaskStatus,
    /// Why this todo exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Outcome summary once finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Failure or blocking reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `from` must finish before `to` starts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoDependency {
    /// Upstream todo id.
    pub from: String,
    /// Downstream todo id.
    pub to: String,
    /// Why the edge exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One answer the user can pick when the Brain asks for clarification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClarificationOption {
    /// Stable id.
    pub id: String,
    /// Short label.
    pub label: String,
    /// What picking it means.
    #[serde(default)]
    pub description: String,
}

/// The clarification gate's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Clarification {
    /// Whether the run must stop and ask.
    pub required: bool,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// The one question to ask.
    #[serde(default)]
    pub question: String,
    /// What information is missing (at most 6).
    #[serde(default)]
    pub missing: Vec<String>,
    /// Mutually exclusive answers (2..=3 when required).
    #[serde(default)]
    pub options: Vec<ClarificationOption>,
}

/// Where the plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoutingSource {
    /// The routeBrain model produced the plan.
    RouterBrain,
    /// The deterministic heuristic produced the plan (fast path, diagnostic or fallback).
    Heuristic,
}

impl RoutingSource {
    /// The JSON name of the source.
    pub const fn as_str(self) -> &'static str {
        match self {
            RoutingSource::RouterBrain => "router-brain",
            RoutingSource::Heuristic => "heuristic",
        }
    }
}

/// Tool calls made in a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallCounts {
    /// Calls started.
    pub total: u64,
    /// Calls that ended with an error.
    pub failed: u64,
    /// Split by phase name.
    #[serde(default)]
    pub by_phase: BTreeMap<String, u64>,
}

/// Tokens spent in a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenMetrics {
    /// Sum over every call.
    pub total: Usage,
    /// Split by phase name (router, support, primary, review, …).
    #[serde(default)]
    pub by_phase: BTreeMap<String, Usage>,
    /// Split by role name.
    #[serde(default)]
    pub by_role: BTreeMap<String, Usage>,
    /// Split by model id.
    #[serde(default)]
    pub by_model: BTreeMap<String, Usage>,
    /// Number of model calls that reported usage.
    #[serde(default)]
    pub calls: u64,
    /// What the calls cost, in millionths of a US dollar (calls of unpriced models count 0).
    #[serde(default)]
    pub cost_micro_usd: u64,
    /// Calls of models without a price (not in `costMicroUsd`).
    #[serde(default)]
    pub unpriced_calls: u64,
}

/// Run metrics.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// Tokens.
    pub tokens: TokenMetrics,
    /// Tool calls.
    pub tool_calls: ToolCallCounts,
    /// Wall time of the whole run.
    #[serde(default)]
    pub duration_ms: u64,
}

/// Final status of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinalStatus {
    /// Changes were made and accepted.
    Approved,
    /// Review or checks asked for changes.
    ChangesRequested,
    /// The review blocked the result, or the run could not proceed.
    Blocked,
    /// A plain answer, no tools used.
    Answered,
    /// Tools were used but nothing was changed.
    ReadOnly,
    /// The run stopped before any worker to ask the user a question.
    NeedsClarification,
    /// The run failed (every model candidate failed, a hook blocked it, …).
    Failed,
    /// The run was cancelled (Ctrl-C, Esc, HTTP cancel).
    Aborted,
    /// The run reached its token or cost budget and stopped (`--max-tokens`, `--max-cost`).
    BudgetExceeded,
}

impl FinalStatus {
    /// The JSON name of the status.
    pub const fn as_str(self) -> &'static str {
        match self {
            FinalStatus::Approved => "approved",
            FinalStatus::ChangesRequested => "changes_requested",
            FinalStatus::Blocked => "blocked",
            FinalStatus::Answered => "answered",
            FinalStatus::ReadOnly => "read_only",
            FinalStatus::NeedsClarification => "needs_clarification",
            FinalStatus::Failed => "failed",
            FinalStatus::Aborted => "aborted",
            FinalStatus::BudgetExceeded => "budget_exceeded",
        }
    }

    /// Process exit code for `braincode run` (documented in the README).
    pub const fn exit_code(self) -> i32 {
        match self {
            FinalStatus::Approved | FinalStatus::Answered | FinalStatus::ReadOnly => 0,
            FinalStatus::Failed => 1,
            FinalStatus::ChangesRequested => 3,
            FinalStatus::Blocked => 4,
            FinalStatus::NeedsClarification => 5,
            FinalStatus::Aborted => 130,
            FinalStatus::BudgetExceeded => 7,
        }
    }
}

/// The brain a run used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrainRef {
    /// Brain id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Mode the run used.
    pub mode: Mode,
}

/// One worker as listed in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportWorker {
    /// Role.
    pub role: Role,
    /// Where it ran.
    pub phase: WorkerPhase,
    /// Outcome (`completed`, `failed`, `blocked`, or a review verdict).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Model that answered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// How the run was routed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportRouting {
    /// Plan source.
    pub source: RoutingSource,
    /// Primary role.
    pub primary_role: Role,
    /// Every worker.
    pub workers: Vec<ReportWorker>,
    /// Router confidence, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why this plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the router was wanted but the heuristic was used: what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

/// The one machine-readable summary of a run (`braincode run --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalReport {
    /// Schema version (always 1).
    pub version: u32,
    /// Outcome.
    pub status: FinalStatus,
    /// The user's request.
    pub task: String,
    /// Session the run was journaled in.
    pub session_id: String,
    /// Brain and mode.
    pub brain: BrainRef,
    /// Routing.
    pub routing: ReportRouting,
    /// Todos with their final state.
    #[serde(default)]
    pub todos: Vec<Todo>,
    /// What changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchSummary>,
    /// Checks gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckSummary>,
    /// Pre-execution plan review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_review: Option<PlanReview>,
    /// Review gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewDecision>,
    /// The question, when the run stopped to ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarification: Option<Clarification>,
    /// Tokens and tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// The one answer given to the user.
    pub model_summary: String,
    /// Fix-loop passes made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iterations: Option<u32>,
    /// Things the user should know.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The error, when the status is `failed` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The MCP servers of the run and how each ended up (the last `mcp_connect`), when any
    /// is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<crate::McpConnectReport>,
    /// Each parallel writer's merge back into the project, in merge order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merges: Vec<crate::WriterMerge>,
}

/// The exit code of `braincode run` when the run answered but its review was inconclusive
/// (documented in the README): a script can tell "nobody judged this change" from "fine".
pub const REVIEW_INCONCLUSIVE_EXIT_CODE: i32 = 6;

impl FinalReport {
    /// The process exit code of this run: its status's code, or
    /// [`REVIEW_INCONCLUSIVE_EXIT_CODE`] when it answered with an inconclusive review.
    pub fn exit_code(&self) -> i32 {
        match (&self.status, &self.review) {
            (FinalStatus::Answered, Some(review))
                if review.decision == ReviewVerdict::Inconclusive =>
            {
                REVIEW_INCONCLUSIVE_EXIT_CODE
            }
            (status, _) => status.exit_code(),
        }
    }
}

impl FinalReport {
    /// The current schema version.
    pub const VERSION: u32 = 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_match_the_documented_table() {
        assert_eq!(FinalStatus::Answered.exit_code(), 0);
        assert_eq!(FinalStatus::Approved.exit_code(), 0);
        assert_eq!(FinalStatus::ReadOnly.exit_code(), 0);
        assert_eq!(FinalStatus::Failed.exit_code(), 1);
        assert_eq!(FinalStatus::ChangesRequested.exit_code(), 3);
        assert_eq!(FinalStatus::Blocked.exit_code(), 4);
        assert_eq!(FinalStatus::NeedsClarification.exit_code(), 5);
    }

    #[test]
    fn status_names_are_snake_case() {
        let json = serde_json::to_string(&FinalStatus::NeedsClarification).unwrap();
        assert_eq!(json, "\"needs_clarification\"");
        assert_eq!(
            serde_json::to_string(&RoutingSource::RouterBrain).unwrap(),
            "\"router-brain\""
        );
    }
}
