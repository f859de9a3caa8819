//! The end of every run: one FinalReport, its records and the one `Final` event.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_config::journal::{MAX_RECORD_BYTES, clip_text};
use braincode_protocol::{
    BrainRef, Clarification, ExecutionPlanReview, FinalReport, FinalReportRecord, FinalStatus,
    JournalEntry, Mode, PatchSummary, PatchSummaryRecord, PlanReview, Record, ReportRouting,
    ReportWorker, ReviewDecision, RoutingSource, RunEnd, RunError, RunEvent, SessionId, TaskStatus,
    Todo, ToolCallCount, WorkerPhase,
};

use crate::agent::{AgentError, ToolStats};
use crate::report::{REVIEW_SKIPPED_PREFIX, StatusInputs, final_status, metrics};
use crate::run::workers::WorkerRun;
use crate::sink::{EventSubscriber, RunSink};

/// The most of the user's prompt a record carries (`run_start`, the report's task): a
/// quarter of a journal line. The whole prompt still reaches the models and `--json`.
pub(crate) const JOURNALED_PROMPT_BYTES: usize = MAX_RECORD_BYTES / 4;
/// The most of the final answer a record carries (`run_end`, the report's answer): half a
/// journal line. The whole answer is still printed.
pub(crate) const JOURNALED_ANSWER_BYTES: usize = MAX_RECORD_BYTES / 2;

/// The routing reason of a report whose run stopped before it had a plan.
const NOT_PLANNED_REASON: &str = "the run stopped before planning";

/// Why a run ended early.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Ctrl-C / Esc / cancel.
    Cancelled,
    /// Something failed.
    Failed(String),
    /// A hook blocked the run.
    Blocked(String),
}

impl Stop {
    pub fn failed(message: impl Into<String>) -> Stop {
        Stop::Failed(message.into())
    }

    pub fn from_agent(err: AgentError) -> Stop {
        match err {
            AgentError::Cancelled => Stop::Cancelled,
            other => Stop::failed(other.to_string()),
        }
    }
}

/// Collects token usage records for the report's metrics.
#[derive(Default)]
pub(crate) struct UsageCollector {
    entries: Mutex<Vec<JournalEntry>>,
}

impl EventSubscriber for UsageCollector {
    fn on_event(&self, event: &RunEvent) {
        if let RunEvent::Record { entry, .. } = event
            && matches!(entry.record, Record::TokenUsage(_))
        {
            match self.entries.lock() {
                Ok(mut entries) => entries.push((**entry).clone()),
                Err(poisoned) => poisoned.into_inner().push((**entry).clone()),
            }
        }
    }
}

impl UsageCollector {
    fn entries(&self) -> Vec<JournalEntry> {
        match self.entries.lock() {
            Ok(entries) => entries.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// What the report will say, filled in as the run goes.
pub(crate) struct Draft {
    pub task: String,
    pub session_id: String,
    pub brain: BrainRef,
    pub plan: Option<RuntimePlan>,
    pub todos: Vec<Todo>,
    pub worker_status: BTreeMap<usize, (String, Option<String>)>,
    pub dispatched: Vec<WorkerRun>,
    pub patch: Option<PatchSummary>,
    pub review: Option<ReviewDecision>,
    pub clarification: Option<Clarification>,
    pub plan_review: Option<PlanReview>,
    /// The review was needed but could not run (its models were unavailable): neither an
    /// approval nor a request for changes.
    pub review_skipped: bool,
    pub warnings: Vec<String>,
    pub summary: String,
}

impl Draft {
    pub fn new(task: &str, session_id: &SessionId) -> Self {
        Self {
            task: task.to_string(),
            session_id: session_id.to_string(),
            brain: BrainRef {
                id: String::new(),
                name: String::new(),
                mode: Mode::Auto,
            },
            plan: None,
            todos: Vec::new(),
            worker_status: BTreeMap::new(),
            dispatched: Vec::new(),
            patch: None,
            review: None,
            clarification: None,
            plan_review: None,
            review_skipped: false,
            warnings: Vec::new(),
            summary: String::new(),
        }
    }

    pub fn set_brain(&mut self, id: &str, name: &str, mode: Mode) {
        self.brain = BrainRef {
            id: id.to_string(),
            name: name.to_string(),
            mode,
        };
    }

    pub fn set_plan(&mut self, plan: &RuntimePlan) {
        self.todos = plan.todos.clone();
        self.plan = Some(plan.clone());
        if let Some(reason) = &plan.fallback_reason {
            self.warnings
                .push(format!("router brain not used: {reason}"));
        }
    }

    fn set_todos(
        &mut self,
        ids: &[String],
        status: TaskStatus,
        summary: Option<&str>,
        error: Option<&str>,
    ) {
        for todo in self.todos.iter_mut().filter(|t| ids.contains(&t.id)) {
            todo.status = status;
            if let Some(summary) = summary {
                todo.summary = Some(braincode_context::clip_chars(summary, 600));
            }
            if let Some(error) = error {
                todo.error = Some(braincode_context::clip_chars(error, 600));
            }
        }
    }

    pub fn block_todos(&mut self, reason: &str) {
        let ids: Vec<String> = self.todos.iter().map(|t| t.id.clone()).collect();
        self.set_todos(&ids, TaskStatus::Blocked, None, Some(reason));
    }

    pub fn fail_todos(&mut self, ids: &[String], reason: &str) {
        self.set_todos(ids, TaskStatus::Failed, None, Some(reason));
    }

    /// Records a worker's outcome; for a support worker that failed or was blocked, also the
    /// warning that says why (returned, so the caller can show it live).
    pub fn record_worker(&mut self, index: usize, run: &WorkerRun) -> Option<String> {
        let ids = self
            .plan
            .as_ref()
            .map(|p| p.workers[index].todo_ids.clone())
            .unwrap_or_default();
        let status = run.status();
        let error = (status != TaskStatus::Completed).then_some(run.result.summary.as_str());
        self.set_todos(&ids, status, Some(&run.result.summary), error);
        let label = run.review.as_ref().map_or_else(
            || status.as_str().to_string(),
            |r| r.decision.as_str().to_string(),
        );
        self.worker_status.insert(index, (label, run.model.clone()));
        let failure = run.failure.as_ref()?;
        if run.phase != WorkerPhase::Support || status == TaskStatus::Completed {
            return None;
        }
        let on = failure
            .model
            .as_deref()
            .map(|model| format!(" on {model}"))
            .unwrap_or_default();
        let warning = format!(
            "{} worker {}{on}: {}; the answer was made without its result",
            run.role,
            status.as_str(),
            failure.reason
        );
        self.warnings.push(warning.clone());
        Some(warning)
    }

    pub fn record_primary(&mut self, worker: &RuntimeWorkerPlan, answer: &str, model: &str) {
        self.set_todos(&worker.todo_ids, TaskStatus::Completed, Some(answer), None);
        if let Some(index) = self.plan.as_ref().and_then(|p| {
            p.workers
                .iter()
                .position(|w| w.context_id == worker.context_id)
        }) {
            self.worker_status
                .insert(index, ("completed".into(), Some(model.to_string())));
        }
    }

    /// Records the review. A review that could not run at all (every review model failed,
    /// none is usable, or a hook blocked it) is a review *not done*: no decision, a warning
    /// (returned, to show it live) and no influence on the status beyond "not approved". A
    /// review that ran but gave no usable decision is `changes_requested` (the normalizer
    /// decides that), never approved.
    pub fn record_review(&mut self, plan: &RuntimePlan, run: WorkerRun) -> Option<String> {
        let index = plan
            .workers
            .iter()
            .position(|w| w.phase == WorkerPhase::Review);
        let Some(decision) = run.review.clone() else {
            let reason = run
                .failure
                .as_ref()
                .map_or_else(|| run.result.summary.clone(), |f| f.reason.clone());
            let warning = match run.failure.as_ref().and_then(|f| f.model.as_deref()) {
                Some(model) => format!("{REVIEW_SKIPPED_PREFIX}{model} unavailable ({reason})"),
                None => format!("{REVIEW_SKIPPED_PREFIX}no review model could run ({reason})"),
            };
            if let Some(index) = index {
                self.record_worker(index, &run);
                self.worker_status.insert(index, ("skipped".into(), None));
            } else {
                self.dispatched.push(run);
            }
            self.review_skipped = true;
            self.warnings.push(warning.clone());
            return Some(warning);
        };
        if let Some(index) = index {
            self.record_worker(index, &run);
            self.worker_status.insert(
                index,
                (decision.decision.as_str().to_string(), run.model.clone()),
            );
        } else {
            self.dispatched.push(run);
        }
        self.review = Some(decision);
        None
    }

    fn routing(&self) -> Option<ReportRouting> {
        let plan = self.plan.as_ref()?;
        let mut workers: Vec<ReportWorker> = plan
            .workers
            .iter()
            .enumerate()
            .map(|(index, w)| {
                let (status, model) = self
                    .worker_status
                    .get(&index)
                    .cloned()
                    .map_or((None, None), |(s, m)| (Some(s), m));
                ReportWorker {
                    role: w.role,
                    phase: w.phase,
                    status,
                    model,
                }
            })
            .collect();
        workers.extend(self.dispatched.iter().map(|run| ReportWorker {
            role: run.role,
            phase: run.phase,
            status: Some(match &run.review {
                Some(review) => review.decision.as_str().to_string(),
                None if run.phase == WorkerPhase::Review => "skipped".to_string(),
                None => run.status().as_str().to_string(),
            }),
            model: run.model.clone(),
        }));
        Some(ReportRouting {
            source: plan.source,
            primary_role: plan.primary,
            workers,
            confidence: plan.confidence,
            reason: Some(plan.reason.clone()),
            fallback_reason: plan.fallback_reason.clone(),
        })
    }
}

/// The report form of the execution plan review.
pub(crate) fn plan_review_for_report(review: &ExecutionPlanReview) -> PlanReview {
    PlanReview {
        status: review.status.clone(),
        approver: review.approver.clone(),
        required_review: review.required_review,
        proposed_side_effects: review.proposed_side_effects.clone(),
        validation_checks: review.validation_plan.checks.clone(),
        risk_triggers: review.risk_triggers.clone(),
        residual_pre_execution_risks: review.residual_pre_execution_risks.clone(),
    }
}

/// Builds the report, writes the closing records and emits the one final answer.
/// `cancel_reason` says why a cancelled run was cancelled (e.g. `SIGTERM received`).
pub(crate) fn finish(
    sink: &RunSink,
    mut draft: Draft,
    outcome: Result<(), Stop>,
    usage: &UsageCollector,
    stats: &ToolStats,
    started: Instant,
    cancel_reason: Option<&str>,
) -> FinalReport {
    let tool_counts = stats.counts();
    let (status, error) = match &outcome {
        Ok(()) => {
            let status = final_status(StatusInputs {
                needs_clarification: draft.clarification.as_ref().is_some_and(|c| c.required),
                review: draft.review.as_ref(),
                review_skipped: draft.review_skipped,
                checks: None,
                patch: draft.patch.as_ref(),
                tool_calls: tool_counts.total,
            });
            (status, None)
        }
        Err(Stop::Cancelled) => (
            FinalStatus::Aborted,
            Some(match cancel_reason {
                Some(reason) => format!("the run was cancelled ({reason})"),
                None => "the run was cancelled".to_string(),
            }),
        ),
        Err(Stop::Failed(message)) => (FinalStatus::Failed, Some(message.clone())),
        Err(Stop::Blocked(message)) => (FinalStatus::Blocked, Some(message.clone())),
    };
    let summary = match (&outcome, &draft.clarification) {
        (Ok(()), Some(clarification)) if clarification.required => clarification.question.clone(),
        // The answer is moved, not copied: it can be very large.
        (Ok(()), _) => std::mem::take(&mut draft.summary),
        (Err(Stop::Cancelled), _) => {
            "Run cancelled before it finished; nothing more will happen.".to_string()
        }
        (Err(Stop::Failed(message) | Stop::Blocked(message)), _) => {
            format!("The run did not complete: {message}")
        }
    };
    if status == FinalStatus::Approved
        && draft.review.is_none()
        && draft.patch.as_ref().is_some_and(|p| p.has_patch_activity)
    {
        draft
            .warnings
            .push("files changed without an independent review".into());
    }
    if draft.patch.as_ref().is_some_and(|p| !p.has_patch_activity) && draft.review.is_some() {
        draft.warnings.push("no patch activity detected".into());
    }
    if draft.clarification.as_ref().is_some_and(|c| c.required) {
        draft
            .warnings
            .push("execution paused for clarification".into());
    }
    if sink.journal_failed() {
        draft
            .warnings
            .push("the session journal could not be fully written".into());
    }
    let routing = draft.routing().unwrap_or(ReportRouting {
        source: RoutingSource::Heuristic,
        primary_role: braincode_protocol::Role::Rush,
        workers: Vec::new(),
        confidence: None,
        reason: Some(NOT_PLANNED_REASON.into()),
        fallback_reason: None,
    });
    let duration_ms = started.elapsed().as_millis() as u64;
    let mut report = FinalReport {
        version: FinalReport::VERSION,
        status,
        task: std::mem::take(&mut draft.task),
        session_id: draft.session_id.clone(),
        brain: draft.brain.clone(),
        routing,
        todos: draft.todos.clone(),
        patch: draft.patch.clone(),
        checks: None,
        plan_review: draft.plan_review.clone(),
        review: draft.review.clone(),
        clarification: draft.clarification.clone().filter(|c| c.required),
        metrics: Some(metrics(&usage.entries(), tool_counts.clone(), duration_ms)),
        model_summary: summary,
        fix_iterations: None,
        warnings: draft.warnings.clone(),
        error: error.clone(),
    };

    if let Some(patch) = &draft.patch {
        sink.record(Record::PatchSummary(PatchSummaryRecord {
            patch: patch.clone(),
            attempt: None,
        }));
    }
    sink.record(Record::ToolCallCount(ToolCallCount {
        total: tool_counts.total,
        failed: tool_counts.failed,
        by_phase: stats.by_phase(),
        attempt: None,
    }));
    // The journal gets the report with its two big texts clipped to fit a line; the caller
    // gets the whole report. The big texts are swapped out, not copied.
    let task = std::mem::take(&mut report.task);
    let answer = std::mem::take(&mut report.model_summary);
    report.task = clip_text(&task, JOURNALED_PROMPT_BYTES).into_owned();
    report.model_summary = clip_text(&answer, JOURNALED_ANSWER_BYTES).into_owned();
    let journaled_answer = report.model_summary.clone();
    sink.record(Record::FinalReport(FinalReportRecord {
        final_report: Box::new(report.clone()),
        attempt: None,
    }));
    report.task = task;
    report.model_summary = answer;
    match &outcome {
        Ok(()) => sink.record_terminal(Record::RunEnd(RunEnd {
            summary: journaled_answer,
            worker_results: None,
            patch: draft.patch.clone(),
            checks: None,
            review_decision: draft.review.clone(),
            status: Some(status),
            fix_iterations: None,
            attempt: None,
        })),
        Err(stop) => {
            // A failed primary already journaled each attempt's error; this closing record
            // marks the whole run as ended, so the session reads as finished-with-error.
            let kind = match stop {
                Stop::Cancelled => "aborted",
                Stop::Failed(_) => "failed",
                Stop::Blocked(_) => "blocked",
            };
            sink.record_terminal(Record::RunError(RunError {
                error: error.unwrap_or_default(),
                kind: Some(kind.into()),
                attempt: None,
                will_fallback: Some(false),
            }));
        }
    }
    sink.emit_final(report)
}
