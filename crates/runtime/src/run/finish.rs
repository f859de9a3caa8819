//! The end of every run: one FinalReport, its records and the one `Final` event.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_protocol::{
    BrainRef, Clarification, ExecutionPlanReview, FinalReport, FinalReportRecord, FinalStatus,
    JournalEntry, Mode, PatchSummary, PatchSummaryRecord, PlanReview, Record, ReportRouting,
    ReportWorker, ReviewDecision, ReviewVerdict, RoutingSource, RunEnd, RunError, RunEvent,
    SessionId, TaskStatus, Todo, ToolCallCount, WorkerPhase,
};

use crate::agent::{AgentError, ToolStats};
use crate::report::{StatusInputs, final_status, metrics};
use crate::run::workers::WorkerRun;
use crate::sink::{EventSubscriber, RunSink};

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

    pub fn record_worker(&mut self, index: usize, run: &WorkerRun) {
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

    pub fn record_review(&mut self, plan: &RuntimePlan, run: WorkerRun) {
        let index = plan
            .workers
            .iter()
            .position(|w| w.phase == WorkerPhase::Review);
        let decision = run.review.clone().unwrap_or_else(|| ReviewDecision {
            // A review that could not run is never an approval.
            decision: ReviewVerdict::ChangesRequested,
            confidence: None,
            rationale: Some(run.result.summary.clone()),
            findings: Vec::new(),
            required_changes: vec![format!("the review could not run: {}", run.result.summary)],
            blocking_issues: Vec::new(),
            residual_risks: Vec::new(),
        });
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
            status: Some(run.review.as_ref().map_or_else(
                || run.status().as_str().to_string(),
                |r| r.decision.as_str().to_string(),
            )),
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
pub(crate) fn finish(
    sink: &RunSink,
    mut draft: Draft,
    outcome: Result<(), Stop>,
    usage: &UsageCollector,
    stats: &ToolStats,
    started: Instant,
) -> FinalReport {
    let tool_counts = stats.counts();
    let (status, error) = match &outcome {
        Ok(()) => {
            let status = final_status(StatusInputs {
                needs_clarification: draft.clarification.as_ref().is_some_and(|c| c.required),
                review: draft.review.as_ref(),
                checks: None,
                patch: draft.patch.as_ref(),
                tool_calls: tool_counts.total,
            });
            (status, None)
        }
        Err(Stop::Cancelled) => (
            FinalStatus::Aborted,
            Some("the run was cancelled".to_string()),
        ),
        Err(Stop::Failed(message)) => (FinalStatus::Failed, Some(message.clone())),
        Err(Stop::Blocked(message)) => (FinalStatus::Blocked, Some(message.clone())),
    };
    let summary = match (&outcome, &draft.clarification) {
        (Ok(()), Some(clarification)) if clarification.required => clarification.question.clone(),
        (Ok(()), _) => draft.summary.clone(),
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
        reason: Some("the run stopped before planning".into()),
        fallback_reason: None,
    });
    let duration_ms = started.elapsed().as_millis() as u64;
    let report = FinalReport {
        version: FinalReport::VERSION,
        status,
        task: draft.task.clone(),
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
        model_summary: summary.clone(),
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
    sink.record(Record::FinalReport(FinalReportRecord {
        final_report: Box::new(report.clone()),
        attempt: None,
    }));
    match &outcome {
        Ok(()) => sink.record(Record::RunEnd(RunEnd {
            summary,
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
            sink.record(Record::RunError(RunError {
                error: error.unwrap_or_default(),
                kind: Some(kind.into()),
                attempt: None,
                will_fallback: Some(false),
            }));
        }
    }
    sink.emit(RunEvent::Final {
        report: Box::new(report.clone()),
    });
    report
}
