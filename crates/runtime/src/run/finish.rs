//! The end of every run: the last decisions (status, closing warnings), the closing records
//! and the one `Final` event. The report itself is the fold of the run's records
//! ([`RunState`](crate::fold::RunState)); nothing here keeps a second copy of it.

use std::time::Instant;

use braincode_config::journal::now_ms;
use braincode_config::journal::{MAX_RECORD_BYTES, clip_text, extend_handoff, report_turns};
use braincode_protocol::{
    CheckStatus, FinalReport, FinalReportRecord, FinalStatus, Handoff, HandoffTrigger,
    JournalEntry, Record, ReviewVerdict, RunEnd, RunError as RunErrorRecord, ToolCallCount,
};

use crate::agent::{AgentError, ToolStats};
use crate::config::ConfigError;
use crate::fold::{CANCELLED_SUMMARY, LiveState};
use crate::report::{StatusInputs, final_status};
use crate::sink::RunSink;

/// The most of the user's prompt a record carries (`run_start`, the report's task): a
/// quarter of a journal line. The whole prompt still reaches the models and `--json`.
pub(crate) const JOURNALED_PROMPT_BYTES: usize = MAX_RECORD_BYTES / 4;
/// The most of the final answer a record carries (`run_end`, the report's answer): half a
/// journal line. The whole answer is still printed.
pub(crate) const JOURNALED_ANSWER_BYTES: usize = MAX_RECORD_BYTES / 2;

/// Why a run could not start: journaled as its error, after its `run_start`.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Its configuration did not load (the file and line are in the message).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Its caller found it cannot run: the embedded model it needs is missing and could not
    /// be fetched; or a replayed run that could not start when it first ran.
    #[error("{0}")]
    Refused(String),
}

/// Why a run ended without an answer.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Ctrl-C, Esc, a signal or an HTTP cancel.
    #[error("the run was cancelled")]
    Cancelled,
    /// The run could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// A hook blocked the run.
    #[error("the {event} hook blocked this run: {reason}")]
    HookBlocked {
        /// The hook event (`SessionStart`, `UserPromptSubmit`).
        event: &'static str,
        /// What the hook said.
        reason: String,
    },
    /// The run could not be planned.
    #[error("{0}")]
    Planning(String),
    /// The plan had no primary worker.
    #[error("the plan has no primary worker")]
    NoPrimary,
    /// Every primary model failed (one line per attempt).
    #[error("{0}")]
    Primary(String),
    /// A worker or the review stopped the run.
    #[error("{0}")]
    Agent(String),
}

impl RunError {
    /// A run error from an agent error (cancellation stays cancellation).
    pub(crate) fn from_agent(err: AgentError) -> RunError {
        match err {
            AgentError::Cancelled => RunError::Cancelled,
            other => RunError::Agent(other.to_string()),
        }
    }

    /// The report status of a run that ended with this error.
    pub fn status(&self) -> FinalStatus {
        match self {
            RunError::Cancelled => FinalStatus::Aborted,
            RunError::HookBlocked { .. } => FinalStatus::Blocked,
            RunError::Start(_)
            | RunError::Planning(_)
            | RunError::NoPrimary
            | RunError::Primary(_)
            | RunError::Agent(_) => FinalStatus::Failed,
        }
    }

    /// The `kind` of its `run_error` record.
    pub fn kind(&self) -> &'static str {
        match self.status() {
            FinalStatus::Aborted => "aborted",
            FinalStatus::Blocked => "blocked",
            _ => "failed",
        }
    }
}

/// What a run that got this far gives the user.
pub(crate) struct Answer {
    /// The answer text (or the clarification question).
    pub text: String,
}

/// The `handoff` record a run ends with.
pub(crate) enum HandoffPlan {
    /// The session's handoff so far (empty for a new session), to extend with this run.
    Extend(String),
    /// A replay: the replayed run's own (none when it wrote none).
    Replayed(Option<Handoff>),
}

/// Decides the status, writes the closing warnings and records, and emits the one final
/// answer. The report is the fold of the run's records; the caller gets it with the whole
/// prompt and answer (the journal has them clipped to fit a line).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    sink: &RunSink,
    live: &LiveState,
    outcome: Result<Answer, RunError>,
    stats: &ToolStats,
    started: Instant,
    full_task: &str,
    cancel_reason: Option<&str>,
    handoff: HandoffPlan,
) -> FinalReport {
    let (status, answer, error) = match outcome {
        Ok(answer) => {
            let status = live.with(|state| {
                final_status(StatusInputs {
                    needs_clarification: state.clarification().is_some_and(|c| c.required),
                    review: state.review(),
                    review_skipped: state.review_skipped(),
                    checks: state.checks(),
                    patch: state.patch(),
                    tool_calls: state.tool_calls().total,
                })
            });
            (status, answer.text, None)
        }
        Err(RunError::Cancelled)
            if cancel_reason.is_some_and(|r| r.starts_with(super::BUDGET_REACHED)) =>
        {
            // The watch journaled the stop's warning right after the call that crossed it.
            let reason = cancel_reason.unwrap_or_default();
            (
                FinalStatus::BudgetExceeded,
                live.with(|state| budget_answer(state, reason)),
                None,
            )
        }
        Err(RunError::Cancelled)
            if cancel_reason.is_some_and(|r| r.starts_with(crate::protect::PROTECTED_CHANGED)) =>
        {
            // The watch journaled the one warning that says what changed and was undone.
            let reason = cancel_reason.unwrap_or_default();
            (
                FinalStatus::Blocked,
                format!(
                    "The run was stopped: {reason}. Check what the commands did before running again."
                ),
                Some((reason.to_string(), "blocked")),
            )
        }
        Err(RunError::Cancelled) => {
            let error = match cancel_reason {
                Some(reason) => format!("the run was cancelled ({reason})"),
                None => "the run was cancelled".to_string(),
            };
            (
                FinalStatus::Aborted,
                CANCELLED_SUMMARY.to_string(),
                Some((error, "aborted")),
            )
        }
        Err(err) => {
            let kind = err.kind();
            (err.status(), String::new(), Some((err.to_string(), kind)))
        }
    };
    for warning in closing_warnings(live, status, sink.journal_failed()) {
        sink.warning(warning);
    }
    let counts = stats.counts();
    sink.record(Record::ToolCallCount(ToolCallCount {
        total: counts.total,
        failed: counts.failed,
        by_phase: stats.by_phase(),
        attempt: None,
    }));
    let duration_ms = Some(started.elapsed().as_millis() as u64);
    let journaled_answer = clip_text(&answer, JOURNALED_ANSWER_BYTES).into_owned();
    let terminal = match &error {
        None => Record::RunEnd(RunEnd {
            summary: journaled_answer,
            worker_results: None,
            patch: live.with(|s| s.patch().cloned()),
            checks: live.with(|s| s.checks().cloned()),
            review_decision: live.with(|s| s.review().cloned()),
            status: Some(status),
            fix_iterations: live.with(crate::fold::RunState::fix_iterations),
            attempt: None,
            duration_ms,
        }),
        // A failed primary already journaled each attempt's error; this closing record marks
        // the whole run as ended, so the session reads as finished-with-error.
        Some((message, kind)) => Record::RunError(RunErrorRecord {
            error: message.clone(),
            kind: Some((*kind).into()),
            attempt: None,
            will_fallback: Some(false),
            duration_ms,
            status: Some(status),
        }),
    };
    // The report is the fold with the terminal record applied; the `final_report` record
    // carries it (the fold ignores that record, so live and file folds agree).
    let mut report = live.with(|state| {
        let mut closing = state.clone();
        closing.apply(&JournalEntry::new(now_ms(), terminal.clone()));
        closing.report()
    });
    sink.record(Record::FinalReport(FinalReportRecord {
        final_report: Box::new(report.clone()),
        attempt: None,
    }));
    // The session's summary so far, for later runs (`@@id`, `--session`): written before the
    // terminal record, after which nothing is appended.
    let handoff = match handoff {
        HandoffPlan::Extend(previous) => Some(Handoff {
            summary: extend_handoff(&previous, &report.task, &report_turns(&report)),
            focus: None,
            trigger: Some(HandoffTrigger::RunEnd),
            estimated_bytes: None,
            limit_bytes: None,
            summarizer: None,
            summarizer_fallback: None,
        }),
        HandoffPlan::Replayed(handoff) => handoff,
    };
    if let Some(handoff) = handoff {
        sink.record(Record::Handoff(handoff));
    }
    sink.record_terminal(terminal);
    // The user gets the whole prompt and answer.
    report.task = full_task.to_string();
    if error.is_none() {
        report.model_summary = answer;
    }
    sink.emit_final(report)
}

/// The one answer of a run stopped at its budget: why, and what was done before it stopped
/// (the workers that finished, with their summaries' first line; the files changed).
fn budget_answer(state: &crate::fold::RunState, reason: &str) -> String {
    let mut text = format!("The run stopped: {reason}.");
    let finished: Vec<String> = state
        .workers()
        .iter()
        // The workers the report lists with an outcome, as it lists them.
        .filter(|w| w.outcome.is_some() && !state.is_skipped(w))
        .map(|w| {
            let outcome = w.outcome.as_deref().unwrap_or_default();
            let said = w
                .result
                .as_ref()
                .map_or(w.goal.as_str(), |r| r.summary.as_str());
            let said = braincode_context::clip_chars(said.lines().next().unwrap_or(""), 200);
            format!("- {} ({outcome}): {said}", w.role)
        })
        .collect();
    if finished.is_empty() {
        text.push_str("\nNo worker had finished.");
    } else {
        text.push_str("\nDone before it stopped:\n");
        text.push_str(&finished.join("\n"));
    }
    let not_done: Vec<&str> = state
        .todos()
        .iter()
        .filter(|t| !matches!(t.status, braincode_protocol::TaskStatus::Completed))
        .map(|t| t.title.as_str())
        .collect();
    if !not_done.is_empty() {
        text.push_str(&format!("\nNot done: {}.", not_done.join("; ")));
    }
    if let Some(patch) = state.patch().filter(|p| p.has_patch_activity) {
        let files: Vec<&str> = patch
            .changed_files
            .iter()
            .map(|f| f.path.as_str())
            .collect();
        text.push_str(&format!("\nFiles changed: {}.", files.join(", ")));
    }
    text.push_str("\nRaise --max-tokens or --max-cost, or narrow the task, and run it again.");
    text
}

/// Warnings decided at the end, from the records so far.
fn closing_warnings(live: &LiveState, status: FinalStatus, journal_failed: bool) -> Vec<String> {
    live.with(|state| {
        let mut warnings = Vec::new();
        let changed = state.patch().is_some_and(|p| p.has_patch_activity);
        if status == FinalStatus::Answered && state.review().is_none() && changed {
            warnings.push(
                "files changed without an independent review: the run answered, nobody approved the change"
                    .to_string(),
            );
        }
        if state
            .review()
            .is_some_and(|r| r.decision == ReviewVerdict::Inconclusive)
        {
            warnings.push(
                "review inconclusive: no review model gave a decision, so nobody judged the change (exit 6)"
                    .to_string(),
            );
        }
        if state.patch().is_some_and(|p| !p.has_patch_activity) && state.review().is_some() {
            warnings.push("no patch activity detected".to_string());
        }
        if let Some(checks) = state.checks()
            && !checks.written_files.is_empty()
        {
            warnings.push(format!(
                "the checks wrote {}: theirs, not counted as the agent's change",
                checks.written_files.join(", ")
            ));
        }
        // The embedded model is tiny: its answer is said to be its own, with the way out.
        let primary_on_embedded = state.workers().iter().any(|w| {
            w.phase == braincode_protocol::WorkerPhase::Primary
                && w.result_model.as_deref().or(w.model.as_deref())
                    == Some(braincode_brain::LOCAL_MODEL_ID)
        });
        if primary_on_embedded {
            warnings.push(format!(
                "answered by the embedded model ({}, 135M parameters): small, often wrong about code; add a key (`braincode auth set openai|anthropic`) or start a local model server (Ollama, llama-server, LM Studio, vLLM) for better answers",
                braincode_brain::LOCAL_MODEL_ID
            ));
        }
        if let Some(checks) = state.checks()
            && checks.status == CheckStatus::Skipped
        {
            let reason = checks.reason.as_deref().unwrap_or("no reason given");
            warnings.push(format!("checks skipped: {reason}"));
        }
        if let Some(checks) = state.checks() {
            for step in checks.setup.iter().filter(|s| !s.passed) {
                warnings.push(format!(
                    "{} failed: the checks ran without the dependencies it sets up",
                    step.name
                ));
            }
            for line in checks.network.iter().filter(|l| l.starts_with("refused")) {
                warnings.push(format!("network allowlist {line}"));
            }
            for result in &checks.results {
                if let Some(cause) = &result.environment {
                    warnings.push(format!("check {} could not run: {cause}", result.name));
                }
            }
        }
        if state
            .review()
            .is_some_and(|r| r.decision == ReviewVerdict::Blocked)
        {
            warnings.push("the review blocked final approval".to_string());
        }
        if state.clarification().is_some_and(|c| c.required) {
            warnings.push("execution paused for clarification".to_string());
        }
        if journal_failed {
            warnings.push("the session journal could not be fully written".to_string());
        }
        warnings
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::{
        Clarification, PatchSummary, PatchSummaryRecord, ReviewDecision, ReviewDecisionRecord,
        ReviewVerdict, RunStart,
    };

    use crate::sink::{EventSubscriber, MemoryJournal};

    fn sink_with(live: &std::sync::Arc<LiveState>, journal: &MemoryJournal) -> RunSink {
        let subscriber: std::sync::Arc<dyn EventSubscriber> = live.clone();
        RunSink::new("s", Some(Box::new(journal.clone())), vec![subscriber])
    }

    fn start(sink: &RunSink) {
        sink.record(Record::RunStart(RunStart {
            prompt: "task".into(),
            project_support: None,
            model: None,
            attempt: None,
            run_id: Some("r".into()),
            brain: None,
            permission: None,
            routing_choice: None,
            resume_of: None,
            ..RunStart::default()
        }));
    }

    fn patch(active: bool) -> Record {
        Record::PatchSummary(PatchSummaryRecord {
            patch: PatchSummary {
                has_patch_activity: active,
                ..Default::default()
            },
            attempt: None,
        })
    }

    /// A `review_decision` record with `verdict` and nothing else.
    fn review(verdict: ReviewVerdict) -> Record {
        Record::ReviewDecision(ReviewDecisionRecord {
            decision: ReviewDecision::of(verdict),
            model: None,
            attempt: None,
            fix_iteration: None,
        })
    }

    fn finish_ok(sink: &RunSink, live: &LiveState) -> FinalReport {
        finish(
            sink,
            live,
            Ok(Answer {
                text: "done".into(),
            }),
            &ToolStats::default(),
            Instant::now(),
            "task",
            None,
            HandoffPlan::Extend(String::new()),
        )
    }

    #[test]
    fn changed_files_without_review_are_answered_not_approved_with_a_warning() {
        let live = std::sync::Arc::new(LiveState::new("s"));
        let journal = MemoryJournal::default();
        let sink = sink_with(&live, &journal);
        start(&sink);
        sink.record(patch(true));
        let report = finish_ok(&sink, &live);
        assert_eq!(report.status, FinalStatus::Answered);
        assert_eq!(
            report.warnings,
            [
                "files changed without an independent review: the run answered, nobody approved the change"
            ]
        );
        assert_eq!(report.model_summary, "done");
        assert_eq!(report.exit_code(), 0);
    }

    #[test]
    fn an_inconclusive_review_answers_with_its_own_exit_code() {
        let live = std::sync::Arc::new(LiveState::new("s"));
        let journal = MemoryJournal::default();
        let sink = sink_with(&live, &journal);
        start(&sink);
        sink.record(patch(true));
        sink.record(review(ReviewVerdict::Inconclusive));
        let report = finish_ok(&sink, &live);
        assert_eq!(report.status, FinalStatus::Answered);
        assert_eq!(report.exit_code(), 6);
        assert!(
            report.warnings[0].starts_with("review inconclusive"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn a_review_without_patch_activity_is_flagged() {
        let live = std::sync::Arc::new(LiveState::new("s"));
        let journal = MemoryJournal::default();
        let sink = sink_with(&live, &journal);
        start(&sink);
        sink.record(patch(false));
        sink.record(review(ReviewVerdict::ChangesRequested));
        let report = finish_ok(&sink, &live);
        assert_eq!(report.status, FinalStatus::ChangesRequested);
        assert_eq!(report.warnings, ["no patch activity detected"]);
    }

    #[test]
    fn a_clarification_pauses_and_says_so() {
        let live = std::sync::Arc::new(LiveState::new("s"));
        let journal = MemoryJournal::default();
        let sink = sink_with(&live, &journal);
        start(&sink);
        sink.record(Record::ClarificationRequest(
            braincode_protocol::ClarificationRequest {
                clarification: Clarification {
                    required: true,
                    question: "which file?".into(),
                    ..Default::default()
                },
                attempt: None,
            },
        ));
        let report = finish(
            &sink,
            &live,
            Ok(Answer {
                text: "which file?".into(),
            }),
            &ToolStats::default(),
            Instant::now(),
            "task",
            None,
            HandoffPlan::Extend(String::new()),
        );
        assert_eq!(report.status, FinalStatus::NeedsClarification);
        assert_eq!(report.warnings, ["execution paused for clarification"]);
    }

    #[test]
    fn errors_end_with_one_terminal_record_and_the_fold_agrees_with_the_file() {
        for (error, status) in [
            (RunError::Cancelled, FinalStatus::Aborted),
            (RunError::NoPrimary, FinalStatus::Failed),
            (
                RunError::HookBlocked {
                    event: "UserPromptSubmit",
                    reason: "no".into(),
                },
                FinalStatus::Blocked,
            ),
        ] {
            let live = std::sync::Arc::new(LiveState::new("s"));
            let journal = MemoryJournal::default();
            let sink = sink_with(&live, &journal);
            start(&sink);
            let shown = format!("{error:?}");
            let report = finish(
                &sink,
                &live,
                Err(error),
                &ToolStats::default(),
                Instant::now(),
                "task",
                Some("SIGTERM received"),
                HandoffPlan::Extend(String::new()),
            );
            assert_eq!(report.status, status, "{shown}");
            let entries = journal.entries();
            assert!(matches!(
                entries.last().map(|e| &e.record),
                Some(Record::RunError(_))
            ));
            let mut from_file = crate::fold::RunState::new("s");
            for entry in &entries {
                from_file.apply(entry);
            }
            assert_eq!(from_file.report(), report, "{shown}");
        }
    }
}
