//! What a run's work is checked by: the patch git reports, the project's checks, and the
//! review's decision (and the plan review before execution).

use serde::{Deserialize, Serialize};

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

impl ReviewDecision {
    /// A bare verdict: no confidence, rationale, findings or lists.
    pub fn of(decision: ReviewVerdict) -> Self {
        Self {
            decision,
            confidence: None,
            rationale: None,
            findings: Vec::new(),
            required_changes: Vec::new(),
            blocking_issues: Vec::new(),
            residual_risks: Vec::new(),
        }
    }
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
