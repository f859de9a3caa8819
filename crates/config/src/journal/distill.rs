//! Distilling journal records into the one-line entries of a session snapshot, with the
//! per-field caps of the snapshot budget.

use braincode_protocol::{JournalEntry, Record};
use serde::Serialize;

use crate::budgets::SNAPSHOT_FIELD_MAX_CHARS;
use crate::text::{clip, one_line};

/// Run prompt in a record line.
const RUN_PROMPT_CHARS: usize = 600;
/// Worker summary.
const WORKER_SUMMARY_CHARS: usize = 2_000;
/// Any error text.
const ERROR_CHARS: usize = 1_200;
/// One todo title.
const TODO_TITLE_CHARS: usize = 600;
/// Todo summary.
const TODO_SUMMARY_CHARS: usize = 1_200;
/// Check reason.
const CHECK_REASON_CHARS: usize = 800;
/// Review rationale, required changes, blocking issues (each).
const REVIEW_CHARS: usize = 1_200;
/// Handoff focus.
const HANDOFF_FOCUS_CHARS: usize = 400;
/// What a distilled record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// Run start / end / clarification.
    Run,
    /// A worker result.
    Worker,
    /// Todo plan or update.
    Todo,
    /// Checks gate.
    Check,
    /// Review gate.
    Review,
    /// A handoff summary.
    Handoff,
    /// A run or worker failure.
    Error,
}

/// One distilled record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotEntry {
    /// Record time, epoch milliseconds.
    pub timestamp: i64,
    /// Kind.
    pub kind: EntryKind,
    /// The record type.
    #[serde(rename = "type")]
    pub record_type: String,
    /// The distilled text (fields already clipped).
    pub text: String,
}

/// Distills one record; `None` for records a snapshot does not show. `latest_summary` marks
/// the record whose summary is already shown in the "Latest summary" section.
pub(crate) fn distill(entry: &JournalEntry, is_latest_summary: bool) -> Option<SnapshotEntry> {
    let (kind, text) = match &entry.record {
        Record::RunStart(start) => {
            let attempt = match start.attempt {
                Some(n) if n > 1 => format!(" (attempt {n})"),
                _ => String::new(),
            };
            (
                EntryKind::Run,
                format!(
                    "run started{attempt}: {}",
                    clip(&one_line(&start.prompt), RUN_PROMPT_CHARS)
                ),
            )
        }
        Record::RunEnd(end) => {
            let status = end
                .status
                .map(|s| format!(" ({})", s.as_str()))
                .unwrap_or_default();
            let summary = if is_latest_summary {
                "see latest summary above".to_string()
            } else {
                clip(end.summary.trim(), SNAPSHOT_FIELD_MAX_CHARS)
            };
            (EntryKind::Run, format!("run completed{status}: {summary}"))
        }
        Record::RunError(err) => {
            let next = if err.will_fallback == Some(true) {
                " (trying the next model)"
            } else {
                ""
            };
            (
                EntryKind::Error,
                format!("run failed{next}: {}", clip(err.error.trim(), ERROR_CHARS)),
            )
        }
        Record::WorkerEnd(end) => {
            let result = end.result.as_ref();
            let status = result.map_or("completed", |r| r.progress.status.as_str());
            let summary = result
                .and_then(|r| r.display_summary())
                .unwrap_or("(no summary)");
            (
                EntryKind::Worker,
                format!(
                    "worker {} ({}) {status}: {}",
                    end.worker,
                    end.phase.as_str(),
                    clip(summary.trim(), WORKER_SUMMARY_CHARS)
                ),
            )
        }
        Record::WorkerError(err) => (
            EntryKind::Error,
            format!(
                "worker {} ({}) failed: {}",
                err.worker,
                err.phase.as_str(),
                clip(
                    err.error.as_deref().unwrap_or("unknown error").trim(),
                    ERROR_CHARS
                )
            ),
        ),
        Record::TodoPlan(plan) => {
            let titles: Vec<String> = plan
                .todos
                .iter()
                .map(|t| {
                    format!(
                        "{} [{}] {}",
                        t.id,
                        t.role,
                        clip(&one_line(&t.title), TODO_TITLE_CHARS)
                    )
                })
                .collect();
            (
                EntryKind::Todo,
                clip(
                    &format!("todo plan: {}", titles.join("; ")),
                    WORKER_SUMMARY_CHARS,
                ),
            )
        }
        Record::TodoUpdate(update) => {
            let titles: Vec<String> = update
                .todos
                .iter()
                .filter(|t| update.todo_ids.contains(&t.id))
                .map(|t| clip(&one_line(&t.title), TODO_TITLE_CHARS))
                .collect();
            let mut text = format!(
                "todo {} → {}",
                update.todo_ids.join(", "),
                update.status.as_str()
            );
            if !titles.is_empty() {
                text.push_str(&format!(" ({})", titles.join("; ")));
            }
            if let Some(summary) = update.summary.as_deref().filter(|s| !s.trim().is_empty()) {
                text.push_str(&format!(": {}", clip(summary.trim(), TODO_SUMMARY_CHARS)));
            }
            if let Some(error) = update.error.as_deref().filter(|s| !s.trim().is_empty()) {
                text.push_str(&format!("; error: {}", clip(error.trim(), ERROR_CHARS)));
            }
            (EntryKind::Todo, text)
        }
        Record::CheckSummary(check) => {
            let summary = &check.summary;
            let status = serde_json::to_value(summary.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let mut text = format!("checks {status}");
            if let Some(reason) = summary.reason.as_deref().filter(|s| !s.trim().is_empty()) {
                text.push_str(&format!(": {}", clip(reason.trim(), CHECK_REASON_CHARS)));
            }
            if !summary.results.is_empty() {
                let results: Vec<String> = summary
                    .results
                    .iter()
                    .map(|r| {
                        let outcome = if r.timed_out {
                            "timed_out"
                        } else if r.passed {
                            "passed"
                        } else {
                            "failed"
                        };
                        let exit = r.exit_code.map_or("-".to_string(), |c| c.to_string());
                        format!("{}:{outcome}:{exit}", r.name)
                    })
                    .collect();
                text.push_str(&format!(" [{}]", results.join(", ")));
            }
            (EntryKind::Check, text)
        }
        Record::ReviewDecision(review) => {
            let decision = &review.decision;
            let mut text = format!("review {}", decision.decision.as_str());
            if let Some(rationale) = decision
                .rationale
                .as_deref()
                .filter(|s| !s.trim().is_empty())
            {
                text.push_str(&format!(": {}", clip(rationale.trim(), REVIEW_CHARS)));
            }
            if !decision.required_changes.is_empty() {
                text.push_str(&format!(
                    "; required: {}",
                    clip(&decision.required_changes.join("; "), REVIEW_CHARS)
                ));
            }
            if !decision.blocking_issues.is_empty() {
                text.push_str(&format!(
                    "; blocking: {}",
                    clip(&decision.blocking_issues.join("; "), REVIEW_CHARS)
                ));
            }
            (EntryKind::Review, text)
        }
        Record::Handoff(handoff) => {
            let mut text = "handoff".to_string();
            if let Some(trigger) = handoff.trigger {
                text.push_str(match trigger {
                    braincode_protocol::HandoffTrigger::Manual => " (manual)",
                    braincode_protocol::HandoffTrigger::Auto => " (auto)",
                    braincode_protocol::HandoffTrigger::RunEnd => " (end of run)",
                });
            }
            if let Some(focus) = handoff.focus.as_deref().filter(|s| !s.trim().is_empty()) {
                text.push_str(&format!(
                    "; focus: {}",
                    clip(&one_line(focus), HANDOFF_FOCUS_CHARS)
                ));
            }
            if is_latest_summary {
                text.push_str("; summary: see latest summary above");
            } else {
                text.push_str(&format!(
                    "; summary: {}",
                    clip(handoff.summary.trim(), SNAPSHOT_FIELD_MAX_CHARS)
                ));
            }
            (EntryKind::Handoff, text)
        }
        Record::ClarificationRequest(request) => (
            EntryKind::Run,
            format!(
                "clarification requested: {}",
                clip(&one_line(&request.clarification.question), RUN_PROMPT_CHARS)
            ),
        ),
        Record::DynamicDispatch(dispatch) => {
            let detail = dispatch
                .summary
                .as_deref()
                .or(dispatch.goal.as_deref())
                .unwrap_or("");
            (
                EntryKind::Worker,
                format!(
                    "specialist {} {}: {}",
                    dispatch.role,
                    match dispatch.phase {
                        braincode_protocol::DispatchPhase::Request => "requested",
                        braincode_protocol::DispatchPhase::Result => "answered",
                    },
                    clip(detail.trim(), WORKER_SUMMARY_CHARS)
                ),
            )
        }
        // Records a snapshot does not show (listed, so a new record type is a decision here).
        Record::WorkerStart(_)
        | Record::AgentMessage(_)
        | Record::ContextPlan(_)
        | Record::Routing(_)
        | Record::ReviewArtifactsSummary(_)
        | Record::FixIteration(_)
        | Record::PatchSummary(_)
        | Record::FinalReport(_)
        | Record::McpConnect(_)
        | Record::ToolCallCount(_)
        | Record::ModelRetry(_)
        | Record::NetworkAccess(_)
        | Record::RepoFacts(_)
        | Record::ModelReply(_)
        | Record::Warning(_)
        | Record::ExecutionPlanReview(_)
        | Record::ToolApprovalDecision(_)
        | Record::ToolExecutionSummary(_)
        | Record::HookSessionStart(_)
        | Record::HookUserPromptSubmit(_)
        | Record::HookSubagentStart(_)
        | Record::HookSubagentStop(_)
        | Record::HookStop(_)
        | Record::HookPreToolUse(_)
        | Record::HookPermissionRequest(_)
        | Record::HookPostToolUse(_)
        | Record::HookPreCompact(_)
        | Record::HookPostCompact(_)
        | Record::TokenUsage(_)
        | Record::FileChange(_)
        | Record::PatchBaseline(_)
        | Record::Undo(_)
        | Record::WriterMerge(_)
        | Record::Compaction(_)
        | Record::Unknown(_) => return None,
    };
    Some(SnapshotEntry {
        timestamp: entry.timestamp,
        kind,
        record_type: entry.record.type_name().to_string(),
        text,
    })
}

pub(crate) fn latest_summary_of(record: &Record) -> Option<&str> {
    match record {
        Record::RunEnd(end) if !end.summary.trim().is_empty() => Some(&end.summary),
        Record::Handoff(handoff) if !handoff.summary.trim().is_empty() => Some(&handoff.summary),
        _ => None,
    }
}
