//! One turn of the transcript: a request and everything its run said.

use std::collections::BTreeSet;

use braincode_protocol::{
    ApprovalDecision, FinalReport, JournalEntry, Phase, Record, Role, RunEvent, ToolStage,
};
use braincode_session::fold::{RunState, WorkerState};
use serde_json::Value;

/// Something in a turn the user can select and expand.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemKey {
    /// A worker, by task context id.
    Worker(String),
    /// A tool call, by call id.
    Tool(String),
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolState {
    /// Started, not finished.
    Running,
    /// Finished without error.
    Done,
    /// Finished with an error.
    Failed,
    /// Never ran: blocked by a person or denied by a rule.
    Blocked,
    /// Still going when its run ended (cancelled, or the run failed around it).
    Interrupted,
}

/// One tool call as the events and records show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Provider call id.
    pub call_id: String,
    /// Tool name.
    pub tool_name: String,
    /// Task context id of the agent that called it.
    pub context_id: Option<String>,
    /// Role of the agent that called it.
    pub role: Option<Role>,
    /// One-line summary of the arguments (from the live event).
    pub summary: String,
    /// Bounded arguments (from the `tool_execution_summary` start record).
    pub args: Option<Value>,
    /// Where it stands.
    pub state: ToolState,
    /// When it started (epoch ms of its start record), for a running clock.
    pub started_at: Option<i64>,
    /// Wall time, once finished.
    pub duration_ms: Option<u64>,
    /// The output as the model saw it (clipped by the journal), once finished.
    pub output: Option<String>,
    /// Why it was blocked or denied.
    pub reason: Option<String>,
}

impl ToolCall {
    fn new(call_id: &str, tool_name: &str) -> Self {
        Self {
            call_id: call_id.to_string(),
            tool_name: tool_name.to_string(),
            context_id: None,
            role: None,
            summary: String::new(),
            args: None,
            state: ToolState::Running,
            started_at: None,
            duration_ms: None,
            output: None,
            reason: None,
        }
    }

    /// Whether this call edits a file (its expansion is a diff).
    pub fn is_edit(&self) -> bool {
        matches!(
            self.tool_name.as_str(),
            "edit_file" | "apply_patch" | "write_file"
        )
    }
}

/// How a worker row reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    /// Planned, not started.
    Waiting,
    /// An attempt is running.
    Running,
    /// Finished with a result.
    Done,
    /// Failed.
    Failed,
    /// Blocked (by a hook, a rule or its own verdict).
    Blocked,
    /// Not run, or a review that gave no decision.
    Skipped,
    /// Still going when its run ended (cancelled, or the run failed around it).
    Interrupted,
}

/// One worker row: the fold's worker and how it reads.
#[derive(Debug, Clone, Copy)]
pub struct WorkerRow<'a> {
    /// The worker as the fold has it.
    pub worker: &'a WorkerState,
    /// Its state.
    pub status: WorkerStatus,
    /// A verdict worth naming (`changes requested`), when the state alone does not say it.
    pub verdict: Option<&'a str>,
}

/// One row of a turn's agent section, in display (and selection) order.
#[derive(Debug, Clone, Copy)]
pub enum Item<'a> {
    /// A worker.
    Worker(WorkerRow<'a>),
    /// A tool call; `nested` when it sits under its worker's row.
    Tool {
        /// The call.
        call: &'a ToolCall,
        /// Whether it is listed under the worker that made it.
        nested: bool,
    },
}

impl Item<'_> {
    /// The item's key.
    pub fn key(&self) -> ItemKey {
        match self {
            Item::Worker(row) => ItemKey::Worker(row.worker.context_id.clone()),
            Item::Tool { call, .. } => ItemKey::Tool(call.call_id.clone()),
        }
    }
}

/// Change counters of a turn's three parts, so a view can cache each part's lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Revisions {
    /// Request, plan and todos.
    pub head: u64,
    /// Workers and tool calls.
    pub agents: u64,
    /// Warnings.
    pub notes: u64,
    /// The answer and the report.
    pub answer: u64,
}

/// One request and its run.
#[derive(Debug, Clone)]
pub struct Turn {
    id: u64,
    has_run: bool,
    request: String,
    state: RunState,
    tools: Vec<ToolCall>,
    streamed: String,
    /// The primary called a tool since its last text: the next text starts a paragraph.
    stream_break: bool,
    report: Option<Box<FinalReport>>,
    notices: Vec<String>,
    status: Option<String>,
    expanded: BTreeSet<ItemKey>,
    revisions: Revisions,
}

impl Turn {
    /// A turn for `request`; `id` is unique within the session (it keys view caches).
    pub fn new(id: u64, session_id: &str, request: impl Into<String>) -> Self {
        Self {
            id,
            has_run: false,
            request: request.into(),
            state: RunState::new(session_id),
            tools: Vec::new(),
            streamed: String::new(),
            stream_break: false,
            report: None,
            notices: Vec::new(),
            status: None,
            expanded: BTreeSet::new(),
            revisions: Revisions::default(),
        }
    }

    /// The turn's unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether its run's `run_start` arrived.
    pub fn has_run(&self) -> bool {
        self.has_run
    }

    /// The request as typed.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The run's fold.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// The tool calls, in start order.
    pub fn tools(&self) -> &[ToolCall] {
        &self.tools
    }

    /// The final report, once the run answered.
    pub fn report(&self) -> Option<&FinalReport> {
        self.report.as_deref()
    }

    /// The answer to show: the report's, else the primary's text streamed so far.
    pub fn answer(&self) -> &str {
        match &self.report {
            Some(report) => &report.model_summary,
            None => &self.streamed,
        }
    }

    /// Live warnings that are not records (transport notices).
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    /// The latest live status line, while the run is going.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref().filter(|_| self.is_running())
    }

    /// Whether the run has not answered yet.
    pub fn is_running(&self) -> bool {
        self.report.is_none() && !self.state.is_finished()
    }

    /// Change counters (see [`Revisions`]).
    pub fn revisions(&self) -> Revisions {
        self.revisions
    }

    /// Whether `key` is expanded.
    pub fn is_expanded(&self, key: &ItemKey) -> bool {
        self.expanded.contains(key)
    }

    /// Whether any worker or tool call is running (rows with a clock or a spinner).
    pub fn has_live_rows(&self) -> bool {
        self.state.workers().iter().any(|w| w.running)
            || self.tools.iter().any(|t| t.state == ToolState::Running)
    }

    /// Expands or collapses `key`.
    pub(crate) fn toggle(&mut self, key: &ItemKey) {
        if !self.expanded.remove(key) {
            self.expanded.insert(key.clone());
        }
        self.revisions.agents += 1;
    }

    /// Marks the agent section changed (selection moved in or out of it).
    pub(crate) fn touch_agents(&mut self) {
        self.revisions.agents += 1;
    }

    /// The worker rows, in plan order.
    pub fn workers(&self) -> impl Iterator<Item = WorkerRow<'_>> {
        self.state.workers().iter().map(|worker| {
            let (status, verdict) = if self.state.is_skipped(worker) {
                (WorkerStatus::Skipped, None)
            } else if worker.running {
                (WorkerStatus::Running, None)
            } else {
                match worker.outcome.as_deref() {
                    None if self.is_running() => (WorkerStatus::Waiting, None),
                    None => (WorkerStatus::Skipped, None),
                    Some("completed" | "approved") => (WorkerStatus::Done, None),
                    Some("failed") => (WorkerStatus::Failed, None),
                    Some("blocked") => (WorkerStatus::Blocked, None),
                    Some(braincode_session::fold::INTERRUPTED) => (WorkerStatus::Interrupted, None),
                    Some("changes_requested") => (WorkerStatus::Done, Some("changes requested")),
                    Some(other) => (WorkerStatus::Done, Some(other)),
                }
            };
            WorkerRow {
                worker,
                status,
                verdict,
            }
        })
    }

    /// The agent section's rows: each worker followed by its tool calls, then the calls of
    /// agents that are not workers. Selection follows this order.
    pub fn items(&self) -> Vec<Item<'_>> {
        let workers = self.state.workers();
        let mut items = Vec::with_capacity(workers.len() + self.tools.len());
        for row in self.workers() {
            let context = row.worker.context_id.as_str();
            items.push(Item::Worker(row));
            items.extend(
                self.tools
                    .iter()
                    .filter(|t| t.context_id.as_deref() == Some(context))
                    .map(|call| Item::Tool { call, nested: true }),
            );
        }
        items.extend(
            self.tools
                .iter()
                .filter(|t| {
                    !t.context_id
                        .as_deref()
                        .is_some_and(|c| workers.iter().any(|w| w.context_id == c))
                })
                .map(|call| Item::Tool {
                    call,
                    nested: false,
                }),
        );
        items
    }

    /// Takes one event of this turn's run.
    pub(crate) fn on_event(&mut self, event: &RunEvent) {
        match event {
            RunEvent::Record { entry, .. } => self.apply(entry),
            RunEvent::Status { message } => {
                self.status = Some(message.clone());
            }
            RunEvent::TextDelta { agent, text } => {
                if agent.phase == Phase::Primary && self.report.is_none() {
                    // Text after a tool call is a new reply: its own paragraph, not glued
                    // to the last sentence ("green.Running").
                    if std::mem::take(&mut self.stream_break)
                        && !self.streamed.trim_end().is_empty()
                    {
                        let kept = self.streamed.trim_end().len();
                        self.streamed.truncate(kept);
                        self.streamed.push_str("\n\n");
                    }
                    self.streamed.push_str(text);
                    self.revisions.answer += 1;
                }
            }
            RunEvent::ReasoningDelta { .. } => {}
            RunEvent::ToolStarted {
                agent,
                call_id,
                tool_name,
                summary,
            } => {
                if agent.phase == Phase::Primary {
                    self.stream_break = true;
                }
                let call = self.tool(call_id, tool_name);
                call.summary = summary.clone();
                if !agent.context_id.is_empty() {
                    call.context_id = Some(agent.context_id.clone());
                }
                call.role = Some(agent.role);
                self.revisions.agents += 1;
            }
            RunEvent::ToolFinished {
                call_id,
                tool_name,
                is_error,
                duration_ms,
                ..
            } => {
                let call = self.tool(call_id, tool_name);
                call.state = finished(*is_error);
                call.duration_ms = Some(*duration_ms);
                self.revisions.agents += 1;
            }
            RunEvent::Warning { message } => {
                self.notices.push(message.clone());
                self.revisions.notes += 1;
            }
            RunEvent::Final { report } => {
                self.report = Some(report.clone());
                self.stop_tools();
                self.revisions.answer += 1;
                self.revisions.agents += 1;
            }
        }
    }

    fn apply(&mut self, entry: &JournalEntry) {
        self.state.apply(entry);
        let revisions = &mut self.revisions;
        match &entry.record {
            Record::RunStart(start) => {
                self.has_run = true;
                if self.request.is_empty() {
                    self.request = start.prompt.clone();
                }
                revisions.head += 1;
            }
            Record::Routing(_) | Record::TodoPlan(_) | Record::TodoUpdate(_) => {
                revisions.head += 1;
                revisions.agents += 1;
            }
            Record::ToolExecutionSummary(summary) => {
                let call = self.tool(&summary.tool_call_id, &summary.tool_name);
                if call.context_id.is_none() {
                    call.context_id = summary.origin.task_id.clone();
                }
                call.role = call.role.or(summary.origin.role);
                match summary.stage {
                    ToolStage::Start => {
                        call.started_at = Some(entry.timestamp);
                        if summary.args_summary.is_some() {
                            call.args = summary.args_summary.clone();
                        }
                    }
                    ToolStage::End => {
                        call.state = finished(summary.is_error);
                        call.duration_ms = summary.duration_ms.or(call.duration_ms);
                        call.output = summary.output.clone();
                    }
                }
                self.revisions.agents += 1;
            }
            Record::ToolApprovalDecision(decision)
                if matches!(
                    decision.decision,
                    ApprovalDecision::Blocked | ApprovalDecision::Denied
                ) =>
            {
                let call = self.tool(&decision.tool_call_id, &decision.tool_name);
                call.state = ToolState::Blocked;
                call.context_id = decision.origin.task_id.clone();
                call.role = decision.origin.role;
                call.args = Some(decision.args_summary.clone());
                call.reason = decision.reason.clone();
                self.revisions.agents += 1;
            }
            Record::WorkerStart(_)
            | Record::WorkerEnd(_)
            | Record::WorkerError(_)
            | Record::DynamicDispatch(_)
            | Record::TokenUsage(_) => revisions.agents += 1,
            Record::ReviewDecision(_) => {
                revisions.agents += 1;
                revisions.answer += 1;
            }
            Record::RunEnd(_) | Record::RunError(_) => {
                revisions.agents += 1;
                revisions.answer += 1;
                if self.state.is_finished() {
                    self.stop_tools();
                }
            }
            Record::Warning(_) => revisions.notes += 1,
            _ => {}
        }
    }

    /// The run ended: a call still running was stopped with it.
    fn stop_tools(&mut self) {
        for call in self
            .tools
            .iter_mut()
            .filter(|c| c.state == ToolState::Running)
        {
            call.state = ToolState::Interrupted;
        }
        self.revisions.agents += 1;
    }

    /// The call `call_id`, created when new.
    fn tool(&mut self, call_id: &str, tool_name: &str) -> &mut ToolCall {
        let index = match self.tools.iter().rposition(|t| t.call_id == call_id) {
            Some(index) => index,
            None => {
                self.tools.push(ToolCall::new(call_id, tool_name));
                self.tools.len() - 1
            }
        };
        &mut self.tools[index]
    }
}

fn finished(is_error: bool) -> ToolState {
    if is_error {
        ToolState::Failed
    } else {
        ToolState::Done
    }
}
