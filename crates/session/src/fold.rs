//! The run's state as a fold of its records.
//!
//! [`RunState::apply`] is a pure function of the record stream: the live run keeps one as a
//! subscriber of its sink and builds its [`FinalReport`] from it, `braincode sessions` and the
//! replay build the same report from a journal file, and the TUI and the web panel will show
//! the same state. Nothing else keeps a second copy of what the report says.

mod changes;
mod live;
mod plan;
mod read;
mod runs;
#[cfg(test)]
mod tests;

use braincode_protocol::{
    BrainRef, CheckSummary, Clarification, FinalReport, FinalStatus, JournalEntry,
    McpConnectReport, Metrics, Mode, PatchSummary, PlanReview, PlannedWorker, Record,
    ReportRouting, ReportWorker, ReviewDecision, Role, RoutingRecord, TaskStatus, Todo,
    TodoDependency, ToolCallCounts, ToolStage, Usage, WorkerPhase, WorkerResult, WriterMerge,
};

pub use live::LiveState;
pub use runs::{fold_runs, split_runs};

use crate::report::TokenTally;

/// The routing reason of a report whose run stopped before it had a plan.
pub const NOT_PLANNED_REASON: &str = "the run stopped before planning";
/// The answer of a cancelled run.
pub const CANCELLED_SUMMARY: &str = "Run cancelled before it finished; nothing more will happen.";
/// The error of a run whose journal has no terminal record (killed, crashed).
pub const INTERRUPTED_ERROR: &str = "the run was interrupted before it answered";

/// One worker as the records show it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerState {
    /// Role.
    pub role: Role,
    /// Phase.
    pub phase: WorkerPhase,
    /// Its task context id.
    pub context_id: String,
    /// Whether the plan had it (otherwise it was dispatched, or added for a required review).
    pub planned: bool,
    /// The model of its latest attempt.
    pub model: Option<String>,
    /// Whether an attempt is running.
    pub running: bool,
    /// How it ended: `completed`, `failed`, `blocked`, a review verdict, or `skipped`.
    pub outcome: Option<String>,
    /// The model that produced its result.
    pub result_model: Option<String>,
    /// Its goal (the plan's, then its latest `worker_start`'s).
    pub goal: String,
    /// When its latest attempt started (epoch ms of its `worker_start`).
    pub started_at: Option<i64>,
    /// When it ended (epoch ms of its `worker_end`, or of its last `worker_error`).
    pub ended_at: Option<i64>,
    /// Tokens its attempts used: the `token_usage` records of its task context.
    pub tokens: Usage,
    /// Its result packet, once it ended with one.
    pub result: Option<Box<WorkerResult>>,
    /// Why it failed, from a `worker_error` with no fallback left.
    pub error: Option<String>,
    /// The git worktree it wrote in, when it was a parallel writer.
    pub worktree: Option<String>,
    /// How its change came back into the project, when it was a parallel writer.
    pub merge: Option<braincode_protocol::MergeOutcome>,
    /// How the checks it ran in its worktree went, when it was a parallel writer that ran
    /// some.
    pub checks: Option<braincode_protocol::CheckStatus>,
}

/// The outcome of a worker the end of its run stopped.
pub const INTERRUPTED: &str = "interrupted";

/// Everything the records of one run say so far.
#[derive(Debug, Clone, Default)]
pub struct RunState {
    session_id: String,
    started: bool,
    started_at: Option<i64>,
    last_at: Option<i64>,
    run_id: Option<String>,
    task: String,
    brain: Option<BrainRef>,
    routing: Option<RoutingRecord>,
    workers: Vec<WorkerState>,
    todos: Vec<Todo>,
    /// The plan's edges between todos (`todo_plan`).
    dependencies: Vec<TodoDependency>,
    patch: Option<PatchSummary>,
    changes: changes::FileTally,
    checks: Option<CheckSummary>,
    plan_review: Option<PlanReview>,
    review: Option<ReviewDecision>,
    clarification: Option<Clarification>,
    fix_iterations: Option<u32>,
    tokens: TokenTally,
    tool_calls: ToolCallCounts,
    tool_call_record: Option<ToolCallCounts>,
    warnings: Vec<String>,
    mcp: Option<McpConnectReport>,
    merges: Vec<WriterMerge>,
    terminal: Option<Terminal>,
}

#[derive(Debug, Clone, PartialEq)]
struct Terminal {
    status: FinalStatus,
    summary: String,
    error: Option<String>,
    duration_ms: Option<u64>,
}

impl RunState {
    /// An empty state for a run of `session_id`.
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            ..Self::default()
        }
    }

    /// Folds one record in. Records of a second run (a second `run_start`) are ignored: split
    /// a session's records with [`split_runs`] first.
    pub fn apply(&mut self, entry: &JournalEntry) {
        if matches!(entry.record, Record::RunStart(_)) && self.started {
            return;
        }
        if entry.timestamp > 0 {
            self.last_at = Some(entry.timestamp);
        }
        match &entry.record {
            Record::RunStart(start) => {
                self.started = true;
                self.started_at = (entry.timestamp > 0).then_some(entry.timestamp);
                self.task = start.prompt.clone();
                self.brain = start.brain.clone();
                self.run_id = start.run_id.clone();
            }
            Record::Routing(routing) => {
                for worker in &routing.workers {
                    self.plan_worker(worker);
                }
                self.routing = Some(routing.clone());
            }
            Record::TodoPlan(plan) => {
                self.todos = plan.todos.clone();
                self.dependencies = plan.dependencies.clone();
            }
            Record::TodoUpdate(update) => {
                if update.todos.is_empty() {
                    for todo in self.todos.iter_mut() {
                        if update.todo_ids.contains(&todo.id) {
                            todo.status = update.status;
                        }
                    }
                } else {
                    self.todos = update.todos.clone();
                }
            }
            Record::WorkerStart(start) => {
                let context = start
                    .handoff
                    .as_ref()
                    .map(|h| h.task.id.to_string())
                    .or_else(|| start.agent_session_id.as_deref().map(context_of));
                if let Some(context) = context {
                    let slot = self.slot(start.worker, start.phase, &context);
                    slot.model = start.model.clone();
                    slot.worktree = start.worktree.clone();
                    slot.running = true;
                    slot.goal = start.goal.clone();
                    slot.started_at = Some(entry.timestamp);
                    slot.ended_at = None;
                }
            }
            Record::WorkerEnd(end) => {
                let context = end.result.as_ref().map(|r| r.task_id.to_string());
                let slot = match context {
                    Some(context) => self.slot(end.worker, end.phase, &context),
                    None => self.slot_by_role(end.worker, end.phase),
                };
                slot.running = false;
                let status = end
                    .result
                    .as_ref()
                    .map_or(TaskStatus::Completed, |r| r.progress.status);
                slot.outcome = Some(status.as_str().to_string());
                // A worker that never ran a model (blocked before it started) has no model.
                slot.result_model = end.attempt.and(slot.model.clone());
                slot.ended_at = Some(entry.timestamp);
                slot.result = end.result.clone().map(Box::new);
            }
            Record::WorkerError(error) => {
                if error.will_fallback != Some(true) {
                    let slot = match &error.handoff {
                        Some(handoff) => {
                            self.slot(error.worker, error.phase, &handoff.task.id.to_string())
                        }
                        None => self.slot_by_role(error.worker, error.phase),
                    };
                    slot.running = false;
                    slot.outcome = Some(TaskStatus::Failed.as_str().to_string());
                    slot.result_model = None;
                    slot.ended_at = Some(entry.timestamp);
                    slot.error = error.error.clone();
                }
            }
            Record::DynamicDispatch(dispatch) => {
                self.slot(dispatch.role, WorkerPhase::Support, &dispatch.context_id);
            }
            Record::ReviewDecision(decision) => {
                self.review = Some(decision.decision.clone());
                let slot = self.slot_by_role(Role::Review, WorkerPhase::Review);
                slot.outcome = Some(decision.decision.decision.as_str().to_string());
                slot.result_model = decision.model.clone().or_else(|| slot.model.clone());
            }
            Record::ClarificationRequest(request) => {
                self.clarification = Some(request.clarification.clone());
            }
            Record::ExecutionPlanReview(review) => {
                self.plan_review = Some(plan::plan_review(review));
            }
            Record::PatchSummary(patch) => self.patch = Some(patch.patch.clone()),
            Record::FileChange(change) => self.changes.add(change),
            Record::WriterMerge(merge) => {
                if let Some(writer) = (self.workers.iter_mut())
                    .find(|w| w.context_id == merge.context_id && w.role == merge.role)
                {
                    writer.merge = Some(merge.outcome);
                    writer.checks = merge.checks.as_ref().map(|c| c.status);
                }
                self.merges.push(merge.clone());
            }
            Record::CheckSummary(checks) => self.checks = Some(checks.summary.clone()),
            Record::FixIteration(fix) => {
                self.fix_iterations = Some(self.fix_iterations.unwrap_or(0).max(fix.iteration));
            }
            Record::TokenUsage(usage) => {
                self.tokens.add(usage);
                let context = (usage.task_id.clone())
                    .or_else(|| usage.agent_session_id.as_deref().map(context_of));
                if let Some(worker) =
                    context.and_then(|c| self.workers.iter_mut().find(|w| w.context_id == c))
                {
                    worker.tokens.add(&usage.usage);
                }
            }
            Record::ToolExecutionSummary(tool) if tool.stage == ToolStage::End => {
                let phase = tool.origin.phase.map_or("unknown", |p| p.as_str());
                self.tool_calls.total += 1;
                if tool.is_error {
                    self.tool_calls.failed += 1;
                }
                *self
                    .tool_calls
                    .by_phase
                    .entry(phase.to_string())
                    .or_default() += 1;
            }
            Record::ToolCallCount(count) => {
                self.tool_call_record = Some(ToolCallCounts {
                    total: count.total,
                    failed: count.failed,
                    by_phase: count
                        .by_phase
                        .iter()
                        .map(|(phase, calls)| (phase.clone(), calls.total))
                        .collect(),
                });
            }
            Record::Warning(warning) => self.warnings.push(warning.message.clone()),
            Record::RunEnd(end) => {
                self.stop_workers(entry.timestamp);
                if self.patch.is_none() {
                    self.patch = end.patch.clone();
                }
                if self.review.is_none() {
                    self.review = end.review_decision.clone();
                }
                self.terminal = Some(Terminal {
                    status: end.status.unwrap_or(FinalStatus::Answered),
                    summary: end.summary.clone(),
                    error: None,
                    duration_ms: end.duration_ms,
                });
            }
            Record::RunError(error) => {
                let legacy_terminal = error.attempt.is_none()
                    && matches!(
                        error.kind.as_deref(),
                        Some("aborted" | "failed" | "blocked")
                    );
                let status = error.status.or(match error.kind.as_deref() {
                    Some("aborted") if legacy_terminal => Some(FinalStatus::Aborted),
                    Some("blocked") if legacy_terminal => Some(FinalStatus::Blocked),
                    Some("failed") if legacy_terminal => Some(FinalStatus::Failed),
                    _ => None,
                });
                if let Some(status) = status {
                    self.stop_workers(entry.timestamp);
                    let summary = match status {
                        FinalStatus::Aborted => CANCELLED_SUMMARY.to_string(),
                        _ => format!("The run did not complete: {}", error.error),
                    };
                    self.terminal = Some(Terminal {
                        status,
                        summary,
                        error: Some(error.error.clone()),
                        duration_ms: error.duration_ms,
                    });
                }
            }
            Record::McpConnect(connect) => self.mcp = Some(connect.report.clone()),
            Record::ToolExecutionSummary(_)
            | Record::AgentMessage(_)
            | Record::ContextPlan(_)
            | Record::ReviewArtifactsSummary(_)
            | Record::FinalReport(_)
            | Record::ModelRetry(_)
            | Record::NetworkAccess(_)
            | Record::RepoFacts(_)
            | Record::ModelReply(_)
            | Record::Handoff(_)
            | Record::ToolApprovalDecision(_)
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
            | Record::PatchBaseline(_)
            | Record::Undo(_)
            | Record::Compaction(_)
            | Record::Unknown(_) => {}
        }
    }

    fn plan_worker(&mut self, worker: &PlannedWorker) {
        let slot = self.slot(worker.role, worker.phase, &worker.context_id);
        slot.planned = true;
        slot.goal = worker.goal.clone();
    }

    /// The worker of `context`, created (in order of first appearance) when new.
    /// The run ended: a worker still running was stopped with it (cancelled, or the run
    /// failed around it) and says so, instead of running forever.
    fn stop_workers(&mut self, at: i64) {
        for worker in self.workers.iter_mut().filter(|w| w.running) {
            worker.running = false;
            worker.outcome = Some(INTERRUPTED.to_string());
            worker.ended_at = Some(at);
        }
    }

    fn slot(&mut self, role: Role, phase: WorkerPhase, context: &str) -> &mut WorkerState {
        let index = match self.workers.iter().position(|w| w.context_id == context) {
            Some(index) => index,
            None => {
                self.workers.push(WorkerState {
                    role,
                    phase,
                    context_id: context.to_string(),
                    planned: false,
                    model: None,
                    running: false,
                    outcome: None,
                    result_model: None,
                    goal: String::new(),
                    started_at: None,
                    ended_at: None,
                    tokens: Usage::default(),
                    result: None,
                    error: None,
                    worktree: None,
                    merge: None,
                    checks: None,
                });
                self.workers.len() - 1
            }
        };
        &mut self.workers[index]
    }

    /// The latest worker of `role` in `phase` (records without a context id: old journals,
    /// the primary's end), created when there is none.
    fn slot_by_role(&mut self, role: Role, phase: WorkerPhase) -> &mut WorkerState {
        match self
            .workers
            .iter()
            .rposition(|w| w.role == role && w.phase == phase)
        {
            Some(index) => &mut self.workers[index],
            None => {
                let context = format!("{role}:{}", phase.as_str());
                self.slot(role, phase, &context)
            }
        }
    }

    /// The todos as they would be after `ids` change to `status` (for the `todo_update`
    /// record, which carries every todo after the change).
    pub fn todos_after(
        &self,
        ids: &[String],
        status: TaskStatus,
        summary: Option<&str>,
        error: Option<&str>,
    ) -> Vec<Todo> {
        let mut todos = self.todos.clone();
        for todo in todos.iter_mut().filter(|t| ids.contains(&t.id)) {
            todo.status = status;
            if let Some(summary) = summary {
                todo.summary = Some(braincode_protocol::clip_chars(summary, 600));
            }
            if let Some(error) = error {
                todo.error = Some(braincode_protocol::clip_chars(error, 600));
            }
        }
        todos
    }

    /// The plan's edges between todos, as planned.
    pub fn dependencies(&self) -> &[TodoDependency] {
        &self.dependencies
    }

    /// The report these records make. A run without a terminal record reads as aborted
    /// ([`INTERRUPTED_ERROR`]).
    pub fn report(&self) -> FinalReport {
        let review_skipped = self.review_skipped();
        let workers = self
            .workers
            .iter()
            .map(|w| {
                let skipped = review_skipped && is_unfinished_review(w);
                ReportWorker {
                    role: w.role,
                    phase: w.phase,
                    status: if skipped {
                        Some("skipped".into())
                    } else {
                        w.outcome.clone()
                    },
                    model: if skipped {
                        None
                    } else {
                        w.result_model.clone()
                    },
                }
            })
            .collect();
        let routing = match &self.routing {
            Some(routing) => ReportRouting {
                source: routing.source,
                primary_role: routing.primary_role,
                workers,
                confidence: routing.confidence,
                reason: Some(routing.reason.clone()),
                fallback_reason: routing.fallback_reason.clone(),
            },
            None => ReportRouting {
                source: braincode_protocol::RoutingSource::Heuristic,
                primary_role: Role::Rush,
                workers,
                confidence: None,
                reason: Some(NOT_PLANNED_REASON.into()),
                fallback_reason: None,
            },
        };
        let (status, summary, error, duration) = match &self.terminal {
            Some(t) => (t.status, t.summary.clone(), t.error.clone(), t.duration_ms),
            None => (
                FinalStatus::Aborted,
                format!("The run did not complete: {INTERRUPTED_ERROR}"),
                Some(INTERRUPTED_ERROR.to_string()),
                None,
            ),
        };
        let duration_ms = duration.unwrap_or_else(|| match (self.started_at, self.last_at) {
            (Some(start), Some(last)) if last >= start => (last - start) as u64,
            _ => 0,
        });
        FinalReport {
            version: FinalReport::VERSION,
            status,
            task: self.task.clone(),
            session_id: self.session_id.clone(),
            brain: self.brain.clone().unwrap_or(BrainRef {
                id: String::new(),
                name: String::new(),
                mode: Mode::Auto,
            }),
            routing,
            todos: self.todos.clone(),
            patch: self.changes.annotate(self.patch.clone()),
            checks: self.checks.clone(),
            plan_review: self.plan_review.clone(),
            review: self.review.clone(),
            clarification: self.clarification.clone().filter(|c| c.required),
            metrics: Some(Metrics {
                tokens: self.tokens.metrics(),
                tool_calls: self.tool_calls(),
                duration_ms,
            }),
            model_summary: summary,
            fix_iterations: self.fix_iterations,
            warnings: self.warnings.clone(),
            mcp: self.mcp.clone(),
            merges: self.merges.clone(),
            error,
        }
    }
}

/// A review worker that failed or was blocked (so gave no decision).
fn is_unfinished_review(worker: &WorkerState) -> bool {
    worker.phase == WorkerPhase::Review
        && (worker.outcome.as_deref()).is_some_and(|o| o == "failed" || o == "blocked")
}

/// The task context of an agent session id (`<context>-<attempt>`).
fn context_of(agent_session_id: &str) -> String {
    // A fix pass of the primary is `<context>-<attempt>-fix<n>`.
    let agent_session_id = match agent_session_id.rsplit_once("-fix") {
        Some((first_pass, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            first_pass
        }
        _ => agent_session_id,
    };
    match agent_session_id.rsplit_once('-') {
        Some((context, attempt)) if attempt.bytes().all(|b| b.is_ascii_digit()) => {
            context.to_string()
        }
        _ => agent_session_id.to_string(),
    }
}
