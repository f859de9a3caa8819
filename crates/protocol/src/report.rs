//! Plans, gates and the FinalReport (v1) that every run ends with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Mode, Role, TaskStatus, Usage, WorkerPhase};

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

/// A changed file as git reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Path relative to the project root.
    pub path: String,
    /// Two-letter `git status --short` code (e.g. ` M`, `??`).
    pub status: String,
    /// Lines added, from the patch ledger's diffs (none when no tool write was journaled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<u64>,
    /// Lines removed, from the patch ledger's diffs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<u64>,
}

/// Line statistics of the working-tree change.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiffStats {
    /// Files changed (tracked, staged or not).
    pub files: u64,
    /// Lines added.
    pub insertions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// Untracked files.
    pub untracked: u64,
}

/// What a run changed in the project.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchSummary {
    /// Files changed by this run.
    pub changed_files: Vec<ChangedFile>,
    /// Files that were already changed before the run (and still are).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_existing_changed_files: Vec<ChangedFile>,
    /// Line statistics of the whole working tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_stats: Option<DiffStats>,
    /// Whether this run changed anything.
    pub has_patch_activity: bool,
}

/// Overall outcome of the project checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Every selected check passed.
    Passed,
    /// At least one check failed or timed out: the code's doing.
    Failed,
    /// Checks were not run, with a reason.
    Skipped,
    /// No check failed on the code, but at least one could not run because of its
    /// environment (the network is off, a dependency or a toolchain is missing, a lockfile is
    /// out of date): said with the reason and the fix, never sent to the fix loop.
    CouldNotRun,
}

impl CheckStatus {
    /// The outcome of checks that ran: failed when one failed on the code, else could not
    /// run when one could not run, else passed.
    pub fn of_results(results: &[CheckResult]) -> CheckStatus {
        if results.iter().any(|r| !r.passed && r.environment.is_none()) {
            CheckStatus::Failed
        } else if results.iter().any(|r| !r.passed) {
            CheckStatus::CouldNotRun
        } else {
            CheckStatus::Passed
        }
    }

    /// The status as shown to a person.
    pub fn label(self) -> &'static str {
        match self {
            CheckStatus::Passed => "passed",
            CheckStatus::Failed => "failed",
            CheckStatus::Skipped => "skipped",
            CheckStatus::CouldNotRun => "could not run",
        }
    }
}

/// One check command's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// Script or check name.
    pub name: String,
    /// The command that ran.
    pub command: String,
    /// Whether it passed (exit 0, no timeout).
    pub passed: bool,
    /// Exit code, if the process exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether it was killed on timeout.
    #[serde(default)]
    pub timed_out: bool,
    /// Wall time.
    pub duration_ms: u64,
    /// The end of its output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
    /// Why it could not run, when its environment is to blame rather than the code (with
    /// the fix, one line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

/// The checks gate's summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckSummary {
    /// Overall outcome.
    pub status: CheckStatus,
    /// Why (skips, failures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Patch kind the selection was based on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_kind: Option<String>,
    /// Risk tier of the patch (`low`, `medium`, `high`, `critical`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_tier: Option<String>,
    /// Scripts selected to run.
    #[serde(default)]
    pub selected_scripts: Vec<String>,
    /// Whether the patch kind requires an independent review.
    #[serde(default)]
    pub review_required: bool,
    /// Per-script outcomes.
    #[serde(default)]
    pub results: Vec<CheckResult>,
    /// Project files the checks themselves wrote (a `Cargo.lock`, a coverage file): theirs,
    /// not the agent's, so they count neither in the run's patch nor in its patch kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written_files: Vec<String>,
    /// The dependency steps run before the checks (`deps: cargo fetch`), up-to-date ones
    /// included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<CheckResult>,
    /// Every connection those steps asked the network allowlist for (`allowed pypi.org:443`,
    /// `refused 10.0.0.1:80: …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
}

/// A reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewVerdict {
    /// The result is acceptable.
    Approved,
    /// The result needs changes.
    ChangesRequested,
    /// The result must not ship.
    Blocked,
    /// No review model gave a decision (prose, a cut or empty reply): nobody judged the
    /// result, so it is neither approved nor sent back for changes.
    Inconclusive,
}

impl ReviewVerdict {
    /// The JSON name of the verdict.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReviewVerdict::Approved => "approved",
            ReviewVerdict::ChangesRequested => "changes_requested",
            ReviewVerdict::Blocked => "blocked",
            ReviewVerdict::Inconclusive => "inconclusive",
        }
    }
}

/// Severity of a review finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Minor.
    Low,
    /// Should be fixed.
    #[default]
    Medium,
    /// Must be fixed.
    High,
}

/// One review finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// How bad it is.
    #[serde(default)]
    pub severity: Severity,
    /// What is wrong.
    pub issue: String,
    /// Where (path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Line number (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// What shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// How to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// A normalized review decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewDecision {
    /// The verdict.
    pub decision: ReviewVerdict,
    /// Reviewer confidence, 0..=1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<String>,
    /// Findings, most severe first.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// Changes the primary must make.
    #[serde(default)]
    pub required_changes: Vec<String>,
    /// Issues that block shipping.
    #[serde(default)]
    pub blocking_issues: Vec<String>,
    /// Risks that remain even if approved.
    #[serde(default)]
    pub residual_risks: Vec<String>,
}

/// A side effect the run may have, declared before execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SideEffect {
    /// `file_edit`, `patch`, `command`, `script`, `artifact`, `mcp`.
    pub kind: String,
    /// Tool or server that causes it.
    pub target: String,
    /// `low`, `medium` or `high`.
    pub risk: String,
}

/// The pre-execution plan review as shown in the final report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanReview {
    /// `approved` or `auto_approved`.
    pub status: String,
    /// Who approved it.
    pub approver: String,
    /// Whether an independent review is required.
    pub required_review: bool,
    /// Declared side effects.
    pub proposed_side_effects: Vec<SideEffect>,
    /// How the result will be validated.
    #[serde(default)]
    pub validation_checks: Vec<String>,
    /// What made the plan risky.
    #[serde(default)]
    pub risk_triggers: Vec<String>,
    /// Risks known before execution.
    #[serde(default)]
    pub residual_pre_execution_risks: Vec<String>,
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
