//! The payloads of the patch ledger: what each write changed (`file_change`), the dirty tree a
//! run started from (`patch_baseline`) and what `braincode undo` put back (`undo`).

use serde::{Deserialize, Serialize};

fn is_false(value: &bool) -> bool {
    !*value
}

fn yes() -> bool {
    true
}

/// `file_change`: one file a write changed, with the hashes that let `braincode undo` check
/// and restore it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Path relative to the project root.
    pub path: String,
    /// The tool call that made the change (none: found by reconciling the patch summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The tool that made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The agent session of the call (replay serves the record back by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// SHA-256 (hex) of the content before; `null` when the file did not exist.
    #[serde(default)]
    pub before_hash: Option<String>,
    /// SHA-256 (hex) of the content after; `null` when the change deleted the file.
    #[serde(default)]
    pub after_hash: Option<String>,
    /// Unix permission bits before (none when the file did not exist).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// The unified diff of the change (none for binary or unreadable content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Whether the diff was clipped.
    #[serde(default, skip_serializing_if = "is_false")]
    pub diff_truncated: bool,
    /// Whether either side is binary (no diff then).
    #[serde(default, skip_serializing_if = "is_false")]
    pub binary: bool,
    /// Lines added.
    #[serde(default)]
    pub added: u64,
    /// Lines removed.
    #[serde(default)]
    pub removed: u64,
    /// Whether `braincode undo` can restore the before state.
    #[serde(default = "yes")]
    pub undoable: bool,
    /// Why not, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One dirty path of the working tree before a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BaselineEntry {
    /// Path relative to the project root.
    pub path: String,
    /// Two-letter `git status --porcelain` code.
    pub status: String,
    /// Git blob hash of the content (none when the path is not a file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
}

/// `patch_baseline`: the dirty state of the working tree when the run started (a resumed
/// run measures its changes from it).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PatchBaselineRecord {
    /// Every dirty path.
    #[serde(default)]
    pub entries: Vec<BaselineEntry>,
}

/// One file `braincode undo` put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoneFile {
    /// Path relative to the project root.
    pub path: String,
    /// `restored`, `deleted` (the run created it) or `recreated` (the run deleted it).
    pub action: String,
}

/// `undo`: the changes of run `run_id` were taken back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoRecord {
    /// The run whose changes were undone.
    pub run_id: String,
    /// The parallel writer (its task context) whose merge alone was undone; none: the run's
    /// every change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<String>,
    /// The files put back.
    #[serde(default)]
    pub files: Vec<UndoneFile>,
}

/// How a writer's change came back into the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeOutcome {
    /// Every file merged without a conflict and was written.
    Clean,
    /// The writer changed nothing.
    Empty,
    /// A file changed on both sides in the same place: nothing of this writer was written;
    /// the conflict goes to the primary, which resolves it with its tools.
    Conflict,
    /// A file the writer changed was changed in the project during the run by someone else:
    /// nothing of this writer was written (never a lost edit).
    Refused,
    /// The writer failed or was stopped: it contributes nothing.
    Failed,
}

impl MergeOutcome {
    /// Its journal spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeOutcome::Clean => "clean",
            MergeOutcome::Empty => "empty",
            MergeOutcome::Conflict => "conflict",
            MergeOutcome::Refused => "refused",
            MergeOutcome::Failed => "failed",
        }
    }
}

/// One file of a writer's merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MergedFile {
    /// Project-relative path.
    pub path: String,
    /// What happened to it: `written`, `deleted`, `unchanged`, `conflict`, `changed_in_project`,
    /// `binary_conflict`, `deleted_on_one_side` (renamed or deleted by one writer, edited by
    /// the other).
    pub status: String,
}

/// `writer_merge`: a parallel writer's change, merged back (or not) into the project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriterMerge {
    /// The writer's role.
    pub role: crate::Role,
    /// Its task context.
    pub context_id: String,
    /// Where it worked (its git worktree).
    pub worktree: String,
    /// The outcome.
    pub outcome: MergeOutcome,
    /// Its files.
    #[serde(default)]
    pub files: Vec<MergedFile>,
    /// Why, for an outcome that is not clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where its patch was saved when it was not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_path: Option<String>,
    /// The checks its changed files selected, run in its worktree when it completed, before
    /// its merge (none: it changed nothing, or the run's checks are off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<crate::CheckSummary>,
}

impl WriterMerge {
    /// How its checks went, for a line about this merge: `checks passed (cargo test)`,
    /// `checks failed: cargo test`, `checks skipped (why)`; `None` when none ran or were
    /// selected.
    pub fn checks_phrase(&self) -> Option<String> {
        let checks = self.checks.as_ref()?;
        let names = |passed: bool| {
            (checks.results.iter())
                .filter(|r| r.passed == passed)
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(match checks.status {
            crate::CheckStatus::Passed => format!("checks passed ({})", names(true)),
            crate::CheckStatus::Failed => format!("checks failed: {}", names(false)),
            crate::CheckStatus::CouldNotRun => format!(
                "checks could not run here: {}",
                (checks.results.iter())
                    .filter(|r| !r.passed)
                    .map(|r| match &r.environment {
                        Some(why) => format!("{} ({why})", r.name),
                        None => r.name.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            crate::CheckStatus::Skipped => match checks.reason.as_deref() {
                Some(reason) => format!("checks skipped ({reason})"),
                None => "checks skipped".to_string(),
            },
        })
    }
}
