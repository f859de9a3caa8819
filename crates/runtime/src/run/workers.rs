//! Isolated workers: one handoff packet in, one typed result out; and the dependency-aware
//! pool that runs the support workers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan, is_read_only_support_role};
use braincode_context::{
    HandoffPacket, HandoffPacketExt, WorkerResult, WorkerResultExt, handoff_message,
    normalize_review_decision, normalize_worker_result, result_message, review_result_schema,
    worker_result_schema,
};
use braincode_llm::{Candidate, ChatMessage, ContentPart, ResponseSchema};
use braincode_protocol::{
    AgentMessageRecord, ContextId, Phase, Record, ReviewDecision, Role, TaskStatus, WorkerEnd,
    WorkerError, WorkerPhase, WorkerStart,
};
use braincode_tools::{SharedTool, ToolMode, builtin_tools};
use serde_json::json;
use tokio::task::JoinSet;

use crate::agent::{AgentError, AgentSetup, run_agent};
use crate::hooks::HookEvent;
use crate::run::fallback::{Fallback, StopRule, each_candidate};
use crate::run::prompts::{ForwardedResult, worker_prompt};
use crate::run::state::{AgentIdentity, RunShared};
use crate::writers::{WriterPlace, Writers};

/// Tool turns a support worker may take.
const WORKER_MAX_TURNS: u32 = 12;
/// Output cap of one worker reply.
const WORKER_MAX_TOKENS: u32 = 1_500;

/// What one worker produced.
#[derive(Debug, Clone)]
pub(crate) struct WorkerRun {
    pub role: Role,
    pub phase: WorkerPhase,
    pub result: WorkerResult,
    pub review: Option<ReviewDecision>,
    pub model: Option<String>,
    /// Why the worker produced no result of its own (failed or blocked).
    pub failure: Option<WorkerFailure>,
}

/// Why a worker did not run to a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerFailure {
    /// The last model tried (none when no model could be tried).
    pub model: Option<String>,
    /// What went wrong, without the model id (e.g. `rate_limit (HTTP 429): slow down`).
    pub reason: String,
}

/// What an agent error says, without the model id the caller shows next to it.
pub(crate) fn failure_reason(error: &AgentError) -> String {
    match error {
        AgentError::Model(err) => match err.status {
            Some(status) => format!("{} (HTTP {status}): {}", err.kind, err.message),
            None => format!("{}: {}", err.kind, err.message),
        },
        other => other.to_string(),
    }
}

impl WorkerRun {
    pub fn status(&self) -> TaskStatus {
        self.result.progress.status
    }

    pub fn forwarded(&self) -> ForwardedResult {
        ForwardedResult {
            role: self.role,
            result: self.result.clone(),
            verdict: self
                .review
                .as_ref()
                .map(|r| r.decision.as_str().to_string()),
            merge_note: None,
        }
    }
}

/// Builds a whole prompt from the worker's handoff (the reviewer's prompt).
pub(crate) type PromptBuilder = Box<dyn Fn(&HandoffPacket) -> String + Send + Sync>;

/// How a worker is asked: its plan entry, its upstream results and extra prompt parts.
pub(crate) struct WorkerJob {
    pub plan: RuntimeWorkerPlan,
    /// The brain context the worker reports to.
    pub parent: ContextId,
    pub upstream: Vec<ForwardedResult>,
    /// For the reviewer: a fully built prompt replaces the worker prompt.
    pub prompt_override: Option<PromptBuilder>,
    /// A parallel writer's worktree, sandbox and gate (none: the worker reads the project).
    pub place: Option<WriterPlace>,
}

fn blocked_result(handoff: &HandoffPacket, reason: &str) -> WorkerResult {
    let mut result = WorkerResult::failed(handoff, reason);
    result.progress.status = TaskStatus::Blocked;
    result
}

fn worker_tools(
    shared: &RunShared,
    role: Role,
    supports_tools: bool,
    place: Option<&WriterPlace>,
) -> (Vec<SharedTool>, String) {
    if !supports_tools {
        return (
            Vec::new(),
            "No tools: answer from the handoff and the results above.".into(),
        );
    }
    if place.is_some() {
        let tools = builtin_tools(
            crate::run::primary::tool_mode(shared.permission),
            &shared.tools_config,
            shared.exec_sessions.clone(),
        );
        return (
            tools,
            "You are a writer: make your change yourself with your tools, in your own copy of the project (a git worktree; paths are the project's). Other writers work in parallel on their parts; your change is merged back into the project after you finish, so change only what your goal needs.".into(),
        );
    }
    if is_read_only_support_role(role) {
        let tools = builtin_tools(
            ToolMode::ReadOnly,
            &shared.tools_config,
            shared.exec_sessions.clone(),
        );
        return (
            tools,
            "Read-only tools (list_files, read_file, search_files, git_diff, get_changed_files). You cannot change files or run commands.".into(),
        );
    }
    (
        Vec::new(),
        "No local tools for this role: reason from the handoff and the results above.".into(),
    )
}

/// Runs one worker, trying each model candidate in turn. Never fails: every failure becomes a
/// failed (or blocked) result, except cancellation.
pub(crate) async fn run_worker(
    shared: &RunShared,
    job: WorkerJob,
) -> Result<WorkerRun, AgentError> {
    let plan = &job.plan;
    let role = plan.role;
    let phase = plan.phase;
    let handoff = HandoffPacket::for_worker(
        &job.parent,
        plan.context_id.clone(),
        role,
        phase,
        &plan.goal,
        shared.support_refs.clone(),
    );
    shared.sink.record(Record::AgentMessage(AgentMessageRecord {
        phase,
        worker: role,
        message: handoff_message(&handoff),
        attempt: None,
    }));
    let done =
        |result: WorkerResult, review: Option<ReviewDecision>, model: Option<String>| WorkerRun {
            role,
            phase,
            result,
            review,
            model,
            failure: None,
        };
    let failed = |result: WorkerResult, model: Option<String>, reason: String| WorkerRun {
        role,
        phase,
        result,
        review: None,
        model: None,
        failure: Some(WorkerFailure { model, reason }),
    };

    let selection = shared
        .factory
        .candidates(&plan.model_chain, !shared.images.is_empty());
    if selection.is_empty() {
        let reason = selection.error_message(role.as_str());
        shared.sink.record(Record::WorkerError(WorkerError {
            phase,
            worker: role,
            error: Some(format!("{role} worker failed: {reason}")),
            handoff: Some(handoff.clone()),
            attempt: None,
            will_fallback: Some(false),
        }));
        return Ok(failed(
            WorkerResult::failed(&handoff, &reason),
            None,
            reason,
        ));
    }

    // SubagentStart hooks may add context or stop this worker (a block is enforced).
    let start = shared
        .hook(
            HookEvent::SubagentStart,
            role.as_str(),
            Some(role.as_str()),
            json!({"agent_id": plan.context_id.as_str(), "agent_type": role.as_str(), "permission_mode": shared.permission.as_str()}),
        )
        .await;
    for problem in start.problems() {
        shared.sink.warning(problem);
    }
    if let Some(reason) = &start.blocked_reason {
        let message = format!("{role} worker blocked by a SubagentStart hook: {reason}");
        let result = blocked_result(&handoff, &message);
        shared.sink.record(Record::WorkerEnd(WorkerEnd {
            phase,
            worker: role,
            result: Some(result.clone()),
            attempt: None,
        }));
        return Ok(failed(
            result,
            None,
            format!("SubagentStart hook: {reason}"),
        ));
    }

    let job = &job;
    let handoff_ref = &handoff;
    let context = &start.additional_context;
    let outcome = each_candidate(
        &selection.usable,
        StopRule::Run,
        |candidate, attempt| attempt_worker(shared, job, handoff_ref, context, candidate, attempt),
        |failure| {
            shared.sink.record(Record::WorkerError(WorkerError {
                phase,
                worker: role,
                error: Some(failure.error.to_string()),
                handoff: None,
                attempt: Some(failure.attempt),
                will_fallback: Some(failure.will_fallback),
            }));
            if failure.will_fallback {
                shared.sink.warning(format!(
                    "{role} worker: {} failed ({}); trying the next model",
                    failure.model, failure.error
                ));
            }
        },
    )
    .await;
    let (outcome, model_id, attempt) = match outcome {
        Fallback::Done(done) => done,
        Fallback::Cancelled => return Err(AgentError::Cancelled),
        Fallback::Exhausted(failures) => {
            let last = failures.last();
            let error = last.map(|f| f.error.to_string()).unwrap_or_default();
            // `WorkerResult::failed` says "<role> worker failed: …" itself.
            return Ok(failed(
                WorkerResult::failed(&handoff, &error),
                last.map(|f| f.model.clone()),
                last.map(|f| failure_reason(&f.error)).unwrap_or_default(),
            ));
        }
    };
    let (result, review) = if phase == WorkerPhase::Review {
        let normalized = normalize_review_decision(&outcome.text, &handoff);
        (normalized.result, Some(normalized.decision))
    } else {
        (normalize_worker_result(&outcome.text, &handoff), None)
    };
    shared.sink.record(Record::AgentMessage(AgentMessageRecord {
        phase,
        worker: role,
        message: result_message(&result),
        attempt: Some(attempt),
    }));
    shared.sink.record(Record::WorkerEnd(WorkerEnd {
        phase,
        worker: role,
        result: Some(result.clone()),
        attempt: Some(attempt),
    }));
    shared
        .hook(
            HookEvent::SubagentStop,
            role.as_str(),
            Some(role.as_str()),
            json!({
                "agent_id": plan.context_id.as_str(),
                "agent_type": role.as_str(),
                "agent_transcript_path": null,
                "stop_hook_active": false,
                "last_assistant_message": result.summary,
            }),
        )
        .await;
    Ok(done(result, review, Some(model_id)))
}

/// One attempt of a worker on one model: its `worker_start`, its prompt, its agent loop.
async fn attempt_worker(
    shared: &RunShared,
    job: &WorkerJob,
    handoff: &HandoffPacket,
    hook_context: &[String],
    candidate: Candidate,
    attempt: u32,
) -> Result<(crate::agent::AgentOutcome, String, u32), AgentError> {
    let candidate = &candidate;
    let plan = &job.plan;
    let (role, phase) = (plan.role, plan.phase);
    let model_id = candidate.definition.id.clone();
    let agent_session_id = format!("{}-{attempt}", plan.context_id);
    shared.sink.record(Record::WorkerStart(WorkerStart {
        phase,
        worker: role,
        goal: plan.goal.clone(),
        handoff: Some(handoff.clone()),
        model: Some(model_id.clone()),
        agent_session_id: Some(agent_session_id.clone()),
        attempt: Some(attempt),
        worktree: (job.place.as_ref()).map(|place| place.root.display().to_string()),
    }));
    let kind = match job.place {
        Some(_) => "writer",
        None => phase.as_str(),
    };
    shared
        .sink
        .status(format!("{role} ({kind}) running on {model_id}"));
    let client = shared
        .factory
        .client(candidate)
        .await
        .map_err(AgentError::Model)?;
    let (mut tools, mut tool_note) = worker_tools(
        shared,
        role,
        candidate.definition.supports_tools,
        job.place.as_ref(),
    );
    let mut resolver = None;
    if candidate.definition.supports_tools {
        // MCP tools: reads for the read-only roles, what the run's permission mode allows for
        // the others (the gate asks a person for anything that may change things).
        let mode = if is_read_only_support_role(role) {
            ToolMode::ReadOnly
        } else {
            crate::run::primary::tool_mode(shared.permission)
        };
        let (mcp_tools, mcp_resolver) = shared.mcp.agent_tools(role, mode).await;
        if mcp_resolver.is_some() {
            tool_note.push(' ');
            tool_note.push_str(&shared.mcp.usage_note(role));
        }
        tools.extend(mcp_tools);
        resolver = mcp_resolver;
    }
    let prompt = match &job.prompt_override {
        Some(build) => build(handoff),
        None => worker_prompt(
            &shared.sections,
            &shared.request,
            &job.upstream,
            handoff,
            &tool_note,
            hook_context,
        ),
    };
    let mut content = vec![ContentPart::Text { text: prompt }];
    content.extend(shared.images.iter().cloned());
    let review = phase == WorkerPhase::Review;
    let identity = AgentIdentity {
        role,
        phase: Phase::from(phase),
        task_id: Some(plan.context_id.as_str()),
        parent_id: Some(handoff.task.parent_id.as_str()),
        agent_session_id,
        attempt,
    };
    let setup = AgentSetup {
        tools,
        resolver,
        max_turns: WORKER_MAX_TURNS,
        thinking: plan.thinking_level,
        max_tokens: Some(WORKER_MAX_TOKENS),
        response_schema: Some(ResponseSchema {
            name: if review {
                "review_result"
            } else {
                "worker_result"
            }
            .into(),
            schema: if review {
                review_result_schema()
            } else {
                worker_result_schema()
            },
        }),
        ..shared.agent_setup(identity, candidate)
    };
    let services = match &job.place {
        Some(place) => shared.services_in(client, place),
        None => shared.services(client),
    };
    let outcome = run_agent(&setup, &services, vec![ChatMessage::User { content }]).await?;
    // A reply that only repeats the template it was shown is no result: the next model.
    if !review && braincode_context::echoes_template(&outcome.text) {
        return Err(AgentError::Model(
            braincode_llm::ModelError::new(
                braincode_llm::ErrorKind::InvalidResponse,
                "the reply only repeats the result template (no finding in it)",
            )
            .with_model(model_id),
        ));
    }
    Ok((outcome, model_id, attempt))
}

/// The support workers' upstream workers: the owners of every todo that one of the worker's
/// todos depends on.
pub(crate) fn upstream_of(plan: &RuntimePlan, worker: usize) -> BTreeSet<usize> {
    let mine: BTreeSet<&str> = plan.workers[worker]
        .todo_ids
        .iter()
        .map(String::as_str)
        .collect();
    let owner = |todo: &str| {
        plan.workers
            .iter()
            .position(|w| w.todo_ids.iter().any(|t| t == todo))
    };
    plan.dependencies
        .iter()
        .filter(|edge| mine.contains(edge.to.as_str()))
        .filter_map(|edge| owner(&edge.from))
        .filter(|&upstream| upstream != worker)
        .collect()
}

/// Runs the support workers in a continuous pool of at most `limit`, starting each as soon as
/// every upstream worker completed. A worker whose upstream failed or was blocked is blocked.
pub(crate) async fn run_support_pool(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    limit: usize,
    writers: Option<&Writers>,
) -> Result<BTreeMap<usize, WorkerRun>, AgentError> {
    let support: Vec<usize> = plan
        .workers
        .iter()
        .enumerate()
        .filter(|(_, w)| w.phase == WorkerPhase::Support)
        .map(|(i, _)| i)
        .collect();
    let limit = limit.max(1);
    let mut pending: Vec<usize> = support.clone();
    let mut finished: BTreeMap<usize, WorkerRun> = BTreeMap::new();
    let mut running: JoinSet<(usize, Result<WorkerRun, AgentError>)> = JoinSet::new();

    loop {
        let mut still_pending = Vec::new();
        for index in pending {
            let upstream = upstream_of(plan, index);
            let support_upstream: Vec<usize> = upstream
                .into_iter()
                .filter(|u| support.contains(u))
                .collect();
            if let Some(bad) = support_upstream.iter().find(|u| {
                finished
                    .get(u)
                    .is_some_and(|r| r.status() != TaskStatus::Completed)
            }) {
                let upstream_role = plan.workers[*bad].role;
                let reason = format!("blocked: upstream {upstream_role} worker did not complete");
                finished.insert(index, blocked_run(shared, plan, index, &reason));
                continue;
            }
            let ready = support_upstream.iter().all(|u| finished.contains_key(u));
            if ready && running.len() < limit {
                if let Some(writers) = writers {
                    writers
                        .start_from_upstream(shared, plan, index, &support_upstream)
                        .await;
                }
                let job = WorkerJob {
                    plan: plan.workers[index].clone(),
                    parent: plan.brain_context.id.clone(),
                    upstream: support_upstream
                        .iter()
                        .filter_map(|u| finished.get(u))
                        .map(WorkerRun::forwarded)
                        .collect(),
                    prompt_override: None,
                    place: writers.and_then(|w| w.place(index)),
                };
                let shared = Arc::clone(shared);
                let token = shared.sink.task_token();
                running.spawn(async move {
                    let _running = token;
                    (index, run_worker(&shared, job).await)
                });
            } else {
                still_pending.push(index);
            }
        }
        pending = still_pending;
        let Some(joined) = running.join_next().await else {
            // Nothing runs and nothing can start: whatever is left waits on a cycle.
            for index in pending {
                let reason = "blocked: dependency graph blocked or cyclic";
                finished.insert(index, blocked_run(shared, plan, index, reason));
            }
            break;
        };
        match joined {
            Ok((index, Ok(run))) => {
                if let Some(writers) = writers.filter(|_| run.status() == TaskStatus::Completed) {
                    let worker = &plan.workers[index];
                    writers.completed(shared, index, worker.role, worker.context_id.as_str());
                }
                finished.insert(index, run);
            }
            Ok((_, Err(err))) => {
                running.abort_all();
                return Err(err);
            }
            Err(join_error) => {
                running.abort_all();
                if join_error.is_cancelled() {
                    return Err(AgentError::Cancelled);
                }
                return Err(AgentError::Model(braincode_llm::ModelError::new(
                    braincode_llm::ErrorKind::InvalidResponse,
                    format!("a worker stopped unexpectedly: {join_error}"),
                )));
            }
        }
    }
    Ok(finished)
}

fn blocked_run(shared: &RunShared, plan: &RuntimePlan, index: usize, reason: &str) -> WorkerRun {
    let worker = &plan.workers[index];
    let handoff = HandoffPacket::for_worker(
        &plan.brain_context.id,
        worker.context_id.clone(),
        worker.role,
        worker.phase,
        &worker.goal,
        Vec::new(),
    );
    let result = blocked_result(&handoff, reason);
    shared.sink.record(Record::WorkerEnd(WorkerEnd {
        phase: worker.phase,
        worker: worker.role,
        result: Some(result.clone()),
        attempt: None,
    }));
    WorkerRun {
        role: worker.role,
        phase: worker.phase,
        result,
        review: None,
        model: None,
        failure: Some(WorkerFailure {
            model: None,
            reason: reason
                .strip_prefix("blocked: ")
                .unwrap_or(reason)
                .to_string(),
        }),
    }
}
