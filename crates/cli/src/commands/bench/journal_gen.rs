//! A synthetic session journal shaped like the runtime's own: typed records, in the order a
//! run writes them, serialized by [`JournalEntry`]'s serializer (what `JournalWriter` writes).
//!
//! Each run: `run_start`, the router's `model_reply` and `token_usage`, `routing` with its
//! workers, `context_plan`, `todo_plan`; four support workers (handoff `agent_message`,
//! `worker_start` with its `HandoffPacket`, three tool turns of `model_reply` + `token_usage` +
//! `tool_execution_summary` start/end, a final reply, result `agent_message`, `worker_end` with
//! its `WorkerResult`, `todo_update`); the primary (six tool turns, edits with their
//! `tool_approval_decision`, a long answer); a `warning`; the reviewer's `review_decision`;
//! `tool_call_count`; `final_report`; `run_end` (`run_error` each 10th run; each 25th cut off).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use braincode_context::{handoff_message, result_message_from};
use braincode_protocol::{
    AgentLayer, AgentMessageRecord, AgentTaskContext, ApprovalDecision, Approver, BrainLayer,
    BrainRef, BrainTaskContext, ContextId, ContextPlan, ContextRef, ContextRefKind,
    FinalReportRecord, FinalStatus, HandoffPacket, JournalEntry, Mode, ModelReply, Phase,
    PlannedWorker, ProjectSupportSummary, Record, RecordedToolCall, ReviewDecision,
    ReviewDecisionRecord, ReviewVerdict, Role, RoutingRecord, RoutingSource, RunEnd, RunError,
    RunStart, TaskProgress, TaskStatus, Todo, TodoPlan, TodoUpdate, TokenUsage,
    ToolApprovalDecision, ToolCallCount, ToolCallOrigin, ToolExecutionSummary, ToolStage, Warning,
    WorkerEnd, WorkerPhase, WorkerResult, WorkerStart,
};
use braincode_session::fold::RunState;

use super::filler::{Filler, usage};
use braincode_tools::summarize_json;
use serde_json::json;

const MODEL: &str = "anthropic/claude-sonnet-4-6";
const SUPPORT: [Role; 4] = [Role::Librarian, Role::Security, Role::Qa, Role::Dba];
const PRIMARY: Role = Role::Backend;
const BRAIN_ID: &str = "brain";

/// What was written.
#[derive(Debug, Clone, Copy)]
pub(super) struct Written {
    pub bytes: u64,
    pub records: u64,
    pub runs: u64,
}

/// The records of one run, in the order the runtime writes them.
struct RunBuilder {
    f: Filler,
    run: u64,
    run_id: String,
    brain_context: ContextId,
    records: Vec<Record>,
    tool_calls: u64,
}

impl RunBuilder {
    fn context(&self, n: usize) -> ContextId {
        ContextId(format!("{}-{n:02}", self.run_id))
    }

    fn origin(&self, phase: Phase, role: Role, context: &ContextId) -> ToolCallOrigin {
        ToolCallOrigin {
            phase: Some(phase),
            role: Some(role),
            agent_session_id: Some(format!("{context}-1")),
            task_id: Some(context.to_string()),
            parent_id: Some(self.brain_context.to_string()),
            attempt: Some(1),
            brain_id: Some(BRAIN_ID.into()),
        }
    }

    fn token_usage(&mut self, phase: Phase, role: Role, session: &str, turn: u32, input: u64) {
        let usage = usage(&mut self.f, input);
        let context = (phase != Phase::Router)
            .then(|| session.rsplit_once('-').map(|(c, _)| c.to_string()))
            .flatten();
        self.records.push(Record::TokenUsage(TokenUsage {
            role: Some(role),
            phase: Some(phase),
            brain_id: Some(BRAIN_ID.into()),
            model_id: Some(MODEL.into()),
            provider: Some("anthropic".into()),
            agent_session_id: Some(session.to_string()),
            task_id: context.clone(),
            parent_id: Some(self.brain_context.to_string()),
            turn_id: Some(format!("{session}:{turn}:0")),
            attempt: Some(1),
            usage,
            ..TokenUsage::default()
        }));
    }

    /// One model call that asks for a tool, the tool's start and end records.
    fn tool_turn(&mut self, phase: Phase, role: Role, context: &ContextId, call: u32) {
        let session = format!("{context}-1");
        let id = format!("toolu_{}_{call}", context.as_str().replace('-', ""));
        let (tool, arguments, path) = match (phase, call % 3) {
            (Phase::Primary, 1) => (
                "edit_file",
                json!({"path": "src/auth/token.rs", "oldText": self.f.code("x", 300), "newText": self.f.code("y", 360)}),
                "src/auth/token.rs",
            ),
            (_, 2) => (
                "search_files",
                json!({"pattern": format!("fn {}_", self.f.word()), "path": "src"}),
                "src",
            ),
            _ => (
                "read_file",
                json!({"path": "src/auth/session.rs"}),
                "src/auth/session.rs",
            ),
        };
        let text = {
            let len = self.f.between(240, 640);
            self.f.prose(len)
        };
        self.records.push(Record::ModelReply(ModelReply {
            agent_session_id: session.clone(),
            call,
            model: MODEL.into(),
            text,
            tool_calls: vec![RecordedToolCall {
                id: id.clone(),
                name: tool.into(),
                arguments: arguments.to_string(),
                signature: None,
            }],
            usage: Some(usage(&mut self.f, 12_000 + u64::from(call) * 3000)),
            clipped: false,
            cut: false,
            error: None,
        }));
        self.token_usage(phase, role, &session, call * 2 + 1, 12_000);
        let origin = self.origin(phase, role, context);
        if tool == "edit_file" {
            self.records
                .push(Record::ToolApprovalDecision(ToolApprovalDecision {
                    tool_call_id: id.clone(),
                    tool_name: tool.into(),
                    decision: ApprovalDecision::Approved,
                    approver: Approver::Human,
                    origin: origin.clone(),
                    reason: Some("approved in the terminal".into()),
                    args_summary: summarize_json(&arguments),
                    permission_policy: None,
                }));
        }
        self.records
            .push(Record::ToolExecutionSummary(ToolExecutionSummary {
                tool_call_id: id.clone(),
                tool_name: tool.into(),
                stage: ToolStage::Start,
                origin: origin.clone(),
                args_summary: Some(summarize_json(&arguments)),
                is_error: false,
                result_summary: None,
                output: None,
                duration_ms: None,
            }));
        let output = if tool == "edit_file" {
            format!("Edited {path}: 1 replacement.\n{}", self.f.code(path, 600))
        } else {
            let len = self.f.between(2_000, 9_000);
            self.f.code(path, len)
        };
        self.tool_calls += 1;
        self.records
            .push(Record::ToolExecutionSummary(ToolExecutionSummary {
                tool_call_id: id,
                tool_name: tool.into(),
                stage: ToolStage::End,
                origin,
                args_summary: None,
                is_error: false,
                result_summary: Some(summarize_json(&serde_json::Value::String(output.clone()))),
                output: Some(output),
                duration_ms: Some(3 + self.f.next() % 200),
            }));
    }

    fn handoff(&mut self, role: Role, context: &ContextId, goal: &str) -> HandoffPacket {
        HandoffPacket {
            from_layer: BrainLayer,
            to_layer: AgentLayer,
            id: format!("{context}:handoff"),
            task: AgentTaskContext {
                id: context.clone(),
                parent_id: self.brain_context.clone(),
                layer: AgentLayer,
                agent_role: role,
                goal: goal.to_string(),
                progress: TaskProgress {
                    status: TaskStatus::Pending,
                    summary: Some(format!("{role} support task is queued")),
                    ..TaskProgress::default()
                },
                context_refs: vec![ContextRef {
                    kind: ContextRefKind::File,
                    uri: "src/auth/token.rs".into(),
                    label: Some("token validation".into()),
                }],
            },
            constraints: braincode_context::HANDOFF_CONSTRAINTS
                .iter()
                .map(ToString::to_string)
                .collect(),
            expected_result: self.f.prose(700),
        }
    }

    fn result(&mut self, handoff: &HandoffPacket) -> WorkerResult {
        WorkerResult {
            from_layer: AgentLayer,
            to_layer: BrainLayer,
            handoff_id: handoff.id.clone(),
            task_id: handoff.task.id.clone(),
            parent_id: handoff.task.parent_id.clone(),
            progress: TaskProgress {
                status: TaskStatus::Completed,
                summary: Some(self.f.prose(80)),
                ..TaskProgress::default()
            },
            summary: self.f.prose(900),
            artifacts: vec![ContextRef {
                kind: ContextRefKind::File,
                uri: "src/auth/session.rs".into(),
                label: None,
            }],
            risks: vec![self.f.prose(160), self.f.prose(120)],
            next_questions: vec![self.f.prose(100)],
        }
    }

    fn todos(&self, done: usize) -> Vec<Todo> {
        SUPPORT
            .iter()
            .chain(std::iter::once(&PRIMARY))
            .enumerate()
            .map(|(i, role)| Todo {
                id: format!("todo-{:02}-{role}", i + 1),
                title: format!("{role} part of run {}", self.run),
                role: *role,
                status: if i < done {
                    TaskStatus::Completed
                } else {
                    TaskStatus::Pending
                },
                reason: None,
                summary: (i < done).then(|| format!("{role} finished")),
                error: None,
            })
            .collect()
    }

    fn support_worker(&mut self, index: usize, role: Role) {
        let context = self.context(index + 2);
        let session = format!("{context}-1");
        let goal = self.f.prose(180);
        let handoff = self.handoff(role, &context, &goal);
        self.records.push(Record::AgentMessage(AgentMessageRecord {
            phase: WorkerPhase::Support,
            worker: role,
            message: handoff_message(&handoff),
            attempt: Some(1),
        }));
        self.records.push(Record::WorkerStart(WorkerStart {
            phase: WorkerPhase::Support,
            worker: role,
            goal,
            handoff: Some(handoff.clone()),
            model: Some(MODEL.into()),
            agent_session_id: Some(session.clone()),
            attempt: Some(1),
            worktree: None,
        }));
        for call in 0..3 {
            self.tool_turn(Phase::Support, role, &context, call);
        }
        let result = self.result(&handoff);
        self.records.push(Record::ModelReply(ModelReply {
            agent_session_id: session.clone(),
            call: 3,
            model: MODEL.into(),
            text: serde_json::to_string(&result).unwrap_or_default(),
            tool_calls: Vec::new(),
            usage: Some(usage(&mut self.f, 20_000)),
            clipped: false,
            cut: false,
            error: None,
        }));
        self.token_usage(Phase::Support, role, &session, 7, 20_000);
        self.records.push(Record::AgentMessage(AgentMessageRecord {
            phase: WorkerPhase::Support,
            worker: role,
            message: result_message_from(role, &result),
            attempt: Some(1),
        }));
        let todo_id = format!("todo-{:02}-{role}", index + 1);
        self.records.push(Record::WorkerEnd(WorkerEnd {
            phase: WorkerPhase::Support,
            worker: role,
            result: Some(result),
            attempt: Some(1),
        }));
        let todos = self.todos(index + 1);
        self.records.push(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Support,
            role: Some(role),
            status: TaskStatus::Completed,
            todo_ids: vec![todo_id],
            todos,
            summary: Some(self.f.prose(120)),
            error: None,
        }));
    }

    fn build(mut self) -> Vec<Record> {
        let prompt = {
            let len = self.f.between(300, 900);
            self.f.prose(len)
        };
        self.records.push(Record::RunStart(RunStart {
            prompt: prompt.clone(),
            project_support: Some(ProjectSupportSummary {
                root: "/home/dev/project".into(),
                agents_md: true,
                hooks: 1,
                ..ProjectSupportSummary::default()
            }),
            run_id: Some(self.run_id.clone()),
            brain: Some(BrainRef {
                id: BRAIN_ID.into(),
                name: "Brain".into(),
                mode: Mode::Auto,
            }),
            permission: Some("default".into()),
            routing_choice: Some("auto".into()),
            ..RunStart::default()
        }));
        let workers: Vec<PlannedWorker> = SUPPORT
            .iter()
            .chain([PRIMARY, Role::Review].iter())
            .enumerate()
            .map(|(i, role)| PlannedWorker {
                role: *role,
                phase: match i {
                    0..=3 => WorkerPhase::Support,
                    4 => WorkerPhase::Primary,
                    _ => WorkerPhase::Review,
                },
                goal: format!("{role}: {}", self.f.prose(120)),
                context_id: self.context(i + 2).to_string(),
                todo_ids: if i < 5 {
                    vec![format!("todo-{:02}-{role}", i + 1)]
                } else {
                    Vec::new()
                },
                model_chain: vec![MODEL.into(), "openai/gpt-5.5".into()],
            })
            .collect();
        let decision = json!({"role": "backend", "workers": workers.iter().map(|w| json!({"role": w.role, "goal": w.goal})).collect::<Vec<_>>(),
            "todos": self.todos(0), "dependencies": [], "confidence": 0.86, "reason": self.f.prose(200)});
        self.records.push(Record::ModelReply(ModelReply {
            agent_session_id: "router-1".into(),
            call: 0,
            model: MODEL.into(),
            text: decision.to_string(),
            tool_calls: Vec::new(),
            usage: Some(usage(&mut self.f, 3_200)),
            clipped: false,
            cut: false,
            error: None,
        }));
        self.token_usage(Phase::Router, Role::RouteBrain, "router-1", 1, 3_200);
        self.records.push(Record::Routing(RoutingRecord {
            source: RoutingSource::RouterBrain,
            primary_role: PRIMARY,
            reason: self.f.prose(200),
            confidence: Some(0.86),
            model: Some(MODEL.into()),
            fallback_reason: None,
            workers: workers.clone(),
            requires_review: true,
        }));
        self.records.push(Record::ContextPlan(ContextPlan {
            context: BrainTaskContext {
                id: self.brain_context.clone(),
                layer: BrainLayer,
                goal: prompt,
                progress: TaskProgress {
                    status: TaskStatus::Pending,
                    summary: Some("6 worker(s) planned; backend is primary".into()),
                    ..TaskProgress::default()
                },
                child_context_ids: (2..8).map(|n| self.context(n)).collect(),
                context_refs: Vec::new(),
            },
        }));
        self.records.push(Record::TodoPlan(TodoPlan {
            todos: self.todos(0),
            dependencies: Vec::new(),
            reason: Some(self.f.prose(120)),
        }));
        for (index, role) in SUPPORT.iter().enumerate() {
            self.support_worker(index, *role);
        }

        // The primary: tool turns (reads, edits, searches), then the answer.
        let primary = self.context(6);
        let session = format!("{primary}-1");
        self.records.push(Record::WorkerStart(WorkerStart {
            phase: WorkerPhase::Primary,
            worker: PRIMARY,
            goal: workers[4].goal.clone(),
            handoff: None,
            model: Some(MODEL.into()),
            agent_session_id: Some(session.clone()),
            attempt: Some(1),
            worktree: None,
        }));
        for call in 0..6 {
            self.tool_turn(Phase::Primary, PRIMARY, &primary, call);
        }
        let answer = {
            let len = self.f.between(1_500, 4_000);
            self.f.prose(len)
        };
        self.records.push(Record::ModelReply(ModelReply {
            agent_session_id: session.clone(),
            call: 6,
            model: MODEL.into(),
            text: answer.clone(),
            tool_calls: Vec::new(),
            usage: Some(usage(&mut self.f, 40_000)),
            clipped: false,
            cut: false,
            error: None,
        }));
        self.token_usage(Phase::Primary, PRIMARY, &session, 13, 40_000);
        self.records.push(Record::WorkerEnd(WorkerEnd {
            phase: WorkerPhase::Primary,
            worker: PRIMARY,
            result: None,
            attempt: Some(1),
        }));
        let todos = self.todos(5);
        self.records.push(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Primary,
            role: Some(PRIMARY),
            status: TaskStatus::Completed,
            todo_ids: vec![format!("todo-05-{PRIMARY}")],
            todos,
            summary: Some(self.f.prose(120)),
            error: None,
        }));
        self.records.push(Record::Warning(Warning {
            message: format!("checks skipped: {}", self.f.prose(60)),
        }));

        // The reviewer.
        let review = self.context(7);
        let review_session = format!("{review}-1");
        let goal = self.f.prose(160);
        let handoff = self.handoff(Role::Review, &review, &goal);
        self.records.push(Record::WorkerStart(WorkerStart {
            phase: WorkerPhase::Review,
            worker: Role::Review,
            goal,
            handoff: Some(handoff.clone()),
            model: Some("openai/gpt-5.5".into()),
            agent_session_id: Some(review_session.clone()),
            attempt: Some(1),
            worktree: None,
        }));
        let decision = ReviewDecision {
            confidence: Some(0.82),
            rationale: Some(self.f.prose(400)),
            residual_risks: vec![self.f.prose(120)],
            ..ReviewDecision::of(ReviewVerdict::Approved)
        };
        self.records.push(Record::ModelReply(ModelReply {
            agent_session_id: review_session.clone(),
            call: 0,
            model: "openai/gpt-5.5".into(),
            text: serde_json::to_string(&decision).unwrap_or_default(),
            tool_calls: Vec::new(),
            usage: Some(usage(&mut self.f, 30_000)),
            clipped: false,
            cut: false,
            error: None,
        }));
        self.token_usage(Phase::Review, Role::Review, &review_session, 1, 30_000);
        let result = self.result(&handoff);
        self.records.push(Record::WorkerEnd(WorkerEnd {
            phase: WorkerPhase::Review,
            worker: Role::Review,
            result: Some(result),
            attempt: Some(1),
        }));
        self.records
            .push(Record::ReviewDecision(ReviewDecisionRecord {
                decision: decision.clone(),
                model: Some("openai/gpt-5.5".into()),
                attempt: Some(1),
                fix_iteration: None,
            }));
        self.records.push(Record::ToolCallCount(ToolCallCount {
            total: self.tool_calls,
            failed: 0,
            by_phase: Default::default(),
            attempt: Some(1),
        }));

        match self.run % 25 {
            24 => {} // interrupted: the process died before the run answered
            n if n % 10 == 9 => self.records.push(Record::RunError(RunError {
                error: format!("network error: {}", self.f.prose(120)),
                kind: Some("network".into()),
                attempt: Some(1),
                will_fallback: Some(false),
                duration_ms: Some(95_000),
                status: Some(FinalStatus::Failed),
            })),
            _ => {
                // The runtime journals the report it folded, then the answer.
                let mut state = RunState::new("bench-fold");
                for record in &self.records {
                    state.apply(&JournalEntry::new(0, record.clone()));
                }
                self.records.push(Record::FinalReport(FinalReportRecord {
                    final_report: Box::new(state.report()),
                    attempt: Some(1),
                }));
                self.records.push(Record::RunEnd(RunEnd {
                    summary: answer,
                    review_decision: Some(decision),
                    status: Some(FinalStatus::Approved),
                    attempt: Some(1),
                    duration_ms: Some(95_000),
                    ..RunEnd::default()
                }));
            }
        }
        self.records
    }
}

/// The records of run `run` of the synthetic session.
pub(super) fn run_records(run: u64) -> Vec<Record> {
    let run_id = format!("{:08x}", run.wrapping_mul(2654435761) & 0xffff_ffff);
    RunBuilder {
        f: Filler::new(run),
        run,
        brain_context: ContextId(format!("{run_id}-01")),
        run_id,
        records: Vec::new(),
        tool_calls: 0,
    }
    .build()
}

/// Writes runs to `path` until it holds at least `target` bytes.
pub(super) fn write_journal(path: &Path, target: u64) -> anyhow::Result<Written> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut written = Written {
        bytes: 0,
        records: 0,
        runs: 0,
    };
    let mut timestamp = 1_780_000_000_000i64;
    let mut line = Vec::with_capacity(64 * 1024);
    while written.bytes < target {
        for record in run_records(written.runs) {
            timestamp += 40;
            line.clear();
            serde_json::to_writer(&mut line, &JournalEntry::new(timestamp, record))?;
            anyhow::ensure!(
                line.len() < braincode_config::journal::MAX_RECORD_BYTES,
                "a synthetic record is longer than a journal line may be"
            );
            line.push(b'\n');
            out.write_all(&line)?;
            written.bytes += line.len() as u64;
            written.records += 1;
        }
        written.runs += 1;
        timestamp += 60_000;
    }
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
#[path = "journal_gen_tests.rs"]
mod tests;
