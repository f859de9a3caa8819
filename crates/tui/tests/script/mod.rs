//! Scripted runs: `RunEvent` sequences built from the real record types, the way a run emits
//! them (records with timestamps, live tool and text events, one final report folded from
//! the records by the runtime's own fold).

#![allow(dead_code, clippy::too_many_arguments)]

use braincode_protocol::{
    AgentLayer, AgentRef, AgentTaskContext, BrainLayer, BrainRef, ContextId, FinalStatus,
    HandoffPacket, JournalEntry, Mode, Phase, PlannedWorker, Record, Role, RoutingRecord,
    RoutingSource, RunEnd, RunEvent, RunStart, TaskProgress, TaskStatus, Todo, TodoPlan,
    TodoUpdate, TokenUsage, ToolCallOrigin, ToolExecutionSummary, ToolStage, Usage, Warning,
    WorkerEnd, WorkerError, WorkerPhase, WorkerResult, WorkerStart,
};
use braincode_session::fold::RunState;
use serde_json::Value;

/// Epoch milliseconds every script starts at.
pub const T0: i64 = 1_750_000_000_000;
/// The session of every script.
pub const SESSION: &str = "3f2a9c1b-7d4e-4b8a-9c1d-2e3f4a5b6c7d";

/// A run being scripted.
pub struct Script {
    now: i64,
    events: Vec<RunEvent>,
    state: RunState,
}

fn phase_of(phase: WorkerPhase) -> Phase {
    match phase {
        WorkerPhase::Support => Phase::Support,
        WorkerPhase::Primary => Phase::Primary,
        WorkerPhase::Review => Phase::Review,
    }
}

fn handoff(context: &str, role: Role, goal: &str) -> HandoffPacket {
    HandoffPacket {
        from_layer: BrainLayer,
        to_layer: AgentLayer,
        id: format!("{context}:handoff"),
        task: AgentTaskContext {
            id: ContextId::from(context.to_string()),
            parent_id: ContextId::from(SESSION.to_string()),
            layer: AgentLayer,
            agent_role: role,
            goal: goal.to_string(),
            progress: TaskProgress::default(),
            context_refs: Vec::new(),
        },
        constraints: Vec::new(),
        expected_result: "WorkerResult JSON".into(),
    }
}

impl Script {
    /// A run of `prompt` on the `team` Brain, started at [`T0`].
    pub fn start(prompt: &str) -> Self {
        let mut script = Script {
            now: T0,
            events: Vec::new(),
            state: RunState::new(SESSION),
        };
        script.record(Record::RunStart(RunStart {
            prompt: prompt.to_string(),
            model: Some("openai/gpt-4.1".into()),
            attempt: Some(1),
            run_id: Some("run-1".into()),
            brain: Some(BrainRef {
                id: "team".into(),
                name: "team".into(),
                mode: Mode::Auto,
            }),
            permission: Some("default".into()),
            ..RunStart::default()
        }));
        script
    }

    /// Moves the clock to `T0 + ms`.
    pub fn at(&mut self, ms: i64) -> &mut Self {
        self.now = T0 + ms;
        self
    }

    /// The events so far.
    pub fn events(&self) -> &[RunEvent] {
        &self.events
    }

    /// A durable record, at the current time.
    pub fn record(&mut self, record: Record) -> &mut Self {
        let entry = JournalEntry::new(self.now, record);
        self.state.apply(&entry);
        self.events.push(RunEvent::Record {
            session_id: SESSION.into(),
            entry: Box::new(entry),
        });
        self
    }

    /// A live event.
    pub fn event(&mut self, event: RunEvent) -> &mut Self {
        self.events.push(event);
        self
    }

    /// The plan: `workers` are `(role, phase, context id, goal)`.
    pub fn routing(
        &mut self,
        source: RoutingSource,
        confidence: Option<f64>,
        reason: &str,
        workers: &[(Role, WorkerPhase, &str, &str)],
    ) -> &mut Self {
        let primary = workers
            .iter()
            .find(|w| w.1 == WorkerPhase::Primary)
            .map_or(Role::Rush, |w| w.0);
        self.record(Record::Routing(RoutingRecord {
            source,
            primary_role: primary,
            reason: reason.into(),
            confidence,
            model: Some("local/smollm2".into()),
            fallback_reason: None,
            workers: workers
                .iter()
                .map(|(role, phase, context, goal)| PlannedWorker {
                    role: *role,
                    phase: *phase,
                    goal: (*goal).into(),
                    context_id: (*context).into(),
                    todo_ids: Vec::new(),
                    model_chain: Vec::new(),
                })
                .collect(),
            requires_review: workers.iter().any(|w| w.1 == WorkerPhase::Review),
        }))
    }

    /// The plan's todos: `(id, title, role)`, all pending.
    pub fn todos(&mut self, todos: &[(&str, &str, Role)]) -> &mut Self {
        self.record(Record::TodoPlan(TodoPlan {
            todos: todos
                .iter()
                .map(|(id, title, role)| Todo {
                    id: (*id).into(),
                    title: (*title).into(),
                    role: *role,
                    status: TaskStatus::Pending,
                    reason: None,
                    summary: None,
                    error: None,
                })
                .collect(),
            dependencies: Vec::new(),
            reason: None,
        }))
    }

    /// Todos `ids` move to `status`.
    pub fn todo(&mut self, ids: &[&str], status: TaskStatus) -> &mut Self {
        let ids: Vec<String> = ids.iter().map(|s| (*s).to_string()).collect();
        let todos = self.state.todos_after(&ids, status, None, None);
        self.record(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Support,
            role: None,
            status,
            todo_ids: ids,
            todos,
            summary: None,
            error: None,
        }))
    }

    /// A worker's attempt starts.
    pub fn worker_start(
        &mut self,
        role: Role,
        phase: WorkerPhase,
        context: &str,
        goal: &str,
        model: &str,
    ) -> &mut Self {
        self.record(Record::WorkerStart(WorkerStart {
            phase,
            worker: role,
            goal: goal.into(),
            handoff: (phase != WorkerPhase::Primary).then(|| handoff(context, role, goal)),
            model: Some(model.into()),
            agent_session_id: Some(format!("{context}-1")),
            attempt: Some(1),
            worktree: None,
        }))
    }

    /// A worker's tokens.
    pub fn tokens(
        &mut self,
        role: Role,
        phase: WorkerPhase,
        context: &str,
        total: u64,
    ) -> &mut Self {
        let input = total * 4 / 5;
        self.record(Record::TokenUsage(TokenUsage {
            role: Some(role),
            phase: Some(phase_of(phase)),
            brain_id: Some("team".into()),
            model_id: None,
            provider: None,
            agent_session_id: Some(format!("{context}-1")),
            task_id: Some(context.into()),
            parent_id: Some(SESSION.into()),
            turn_id: None,
            attempt: Some(1),
            usage: Usage::new(input, total - input, 0, 0),
            cost_micro_usd: None,
            duration_ms: None,
        }))
    }

    /// A worker ends with a result.
    pub fn worker_end(
        &mut self,
        role: Role,
        phase: WorkerPhase,
        context: &str,
        status: TaskStatus,
        summary: &str,
        risks: &[&str],
        questions: &[&str],
    ) -> &mut Self {
        let result = (phase != WorkerPhase::Primary).then(|| WorkerResult {
            from_layer: AgentLayer,
            to_layer: BrainLayer,
            handoff_id: format!("{context}:handoff"),
            task_id: ContextId::from(context.to_string()),
            parent_id: ContextId::from(SESSION.to_string()),
            progress: TaskProgress {
                status,
                ..TaskProgress::default()
            },
            summary: summary.into(),
            artifacts: Vec::new(),
            risks: risks.iter().map(|s| (*s).to_string()).collect(),
            next_questions: questions.iter().map(|s| (*s).to_string()).collect(),
        });
        self.record(Record::WorkerEnd(WorkerEnd {
            phase,
            worker: role,
            result,
            attempt: Some(1),
        }))
    }

    /// A worker fails with no fallback left.
    pub fn worker_error(
        &mut self,
        role: Role,
        phase: WorkerPhase,
        context: &str,
        goal: &str,
        error: &str,
    ) -> &mut Self {
        self.record(Record::WorkerError(WorkerError {
            phase,
            worker: role,
            error: Some(error.into()),
            handoff: Some(handoff(context, role, goal)),
            attempt: Some(1),
            will_fallback: Some(false),
        }))
    }

    fn agent(role: Role, phase: WorkerPhase, context: &str) -> AgentRef {
        AgentRef {
            role,
            phase: phase_of(phase),
            context_id: context.into(),
            model: None,
        }
    }

    fn origin(role: Role, phase: WorkerPhase, context: &str) -> ToolCallOrigin {
        ToolCallOrigin {
            phase: Some(phase_of(phase)),
            role: Some(role),
            agent_session_id: Some(format!("{context}-1")),
            task_id: Some(context.into()),
            parent_id: Some(SESSION.into()),
            attempt: Some(1),
            brain_id: Some("team".into()),
        }
    }

    /// A tool call starts: the live event, then its start record.
    pub fn tool_start(
        &mut self,
        (role, phase, context): (Role, WorkerPhase, &str),
        call_id: &str,
        tool: &str,
        args: Value,
    ) -> &mut Self {
        self.event(RunEvent::ToolStarted {
            agent: Self::agent(role, phase, context),
            call_id: call_id.into(),
            tool_name: tool.into(),
            summary: args.to_string(),
        });
        self.record(Record::ToolExecutionSummary(ToolExecutionSummary {
            tool_call_id: call_id.into(),
            tool_name: tool.into(),
            stage: ToolStage::Start,
            origin: Self::origin(role, phase, context),
            args_summary: Some(braincode_tools::summarize_json(&args)),
            is_error: false,
            result_summary: None,
            output: None,
            duration_ms: None,
        }))
    }

    /// A tool call ends: its end record, then the live event.
    pub fn tool_end(
        &mut self,
        (role, phase, context): (Role, WorkerPhase, &str),
        call_id: &str,
        tool: &str,
        output: &str,
        is_error: bool,
        duration_ms: u64,
    ) -> &mut Self {
        self.record(Record::ToolExecutionSummary(ToolExecutionSummary {
            tool_call_id: call_id.into(),
            tool_name: tool.into(),
            stage: ToolStage::End,
            origin: Self::origin(role, phase, context),
            args_summary: None,
            is_error,
            result_summary: None,
            output: Some(output.into()),
            duration_ms: Some(duration_ms),
        }));
        self.event(RunEvent::ToolFinished {
            agent: Self::agent(role, phase, context),
            call_id: call_id.into(),
            tool_name: tool.into(),
            is_error,
            duration_ms,
        })
    }

    /// Answer text streamed by the primary.
    pub fn text(&mut self, text: &str) -> &mut Self {
        self.event(RunEvent::TextDelta {
            agent: Self::agent(Role::Backend, WorkerPhase::Primary, "ctx-primary"),
            text: text.into(),
        })
    }

    /// A live status line.
    pub fn status(&mut self, message: &str) -> &mut Self {
        self.event(RunEvent::Status {
            message: message.into(),
        })
    }

    /// A warning record (journaled, in the report).
    pub fn warning(&mut self, message: &str) -> &mut Self {
        self.record(Record::Warning(Warning {
            message: message.into(),
        }))
    }

    /// A live notice (not journaled).
    pub fn notice(&mut self, message: &str) -> &mut Self {
        self.event(RunEvent::Warning {
            message: message.into(),
        })
    }

    /// The run answers: `run_end`, then the one final report, folded from the records.
    pub fn finish(&mut self, summary: &str, status: FinalStatus) -> &mut Self {
        let duration = u64::try_from(self.now - T0).unwrap_or(0);
        self.record(Record::RunEnd(RunEnd {
            summary: summary.into(),
            status: Some(status),
            attempt: Some(1),
            duration_ms: Some(duration),
            ..RunEnd::default()
        }));
        let report = self.state.report();
        self.event(RunEvent::Final {
            report: Box::new(report),
        })
    }
}
