//! The stages of a run after its configuration is loaded: trust and sandbox notices, the
//! SessionStart and UserPromptSubmit hooks, the request as agents see it, the plan and the
//! clarification gate, support workers, the primary, review and the Stop hook.

use std::collections::BTreeMap;
use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan, mode_policy, routing_limits};
use braincode_config::{ExpandedPrompt, ReferenceContext, expand_references};
use braincode_llm::ContentPart;
use braincode_protocol::{
    ClarificationRequest, ContextPlan, Record, Role, RoutingRecord, TaskStatus, TodoPlan,
    WorkerPhase,
};
use serde_json::json;

use super::finish::{Answer, RunError};
use super::opening::History;
use super::plan_review::plan_review;
use super::prompts::ForwardedResult;
use super::record_parts::planned_workers;
use super::setup::environment_section;
use super::todos::{NO_CHANGE_MADE, READ_ONLY_UNDONE, todo_update};
use super::{RunRequest, RunServices, dispatch, facts, plan, primary, state, verify, workers};
use crate::approval::PermissionMode;
use crate::git::PatchBaseline;
use crate::hooks::HookEvent;
use crate::sink::RunSink;
use crate::tape::Tape;

/// The stages of a run: prepare the request, plan, support workers, primary, review, stop.
/// Each stage decides and emits records; the report is the fold of those records.
pub(super) async fn pipeline(
    request: &RunRequest,
    services: &RunServices,
    sink: &RunSink,
    base: state::RunBase,
    history: History,
) -> Result<Answer, RunError> {
    let prepared = prepare(request, services, sink, &base, history).await?;
    let shared = Arc::new(state::RunShared::new(base, prepared));
    // The writers' snapshot is taken while the plan is made (not for a reply that only talks).
    let writers = (!shared.conversational)
        .then(|| crate::writers::open(&shared))
        .flatten();
    let (plan, baseline) = plan_stage(&shared, request).await?;
    if plan.clarification.required {
        return Ok(clarify(&shared, &plan));
    }
    let (results, worktrees_removal) = support_stage(&shared, &plan, writers).await?;
    let acted = async {
        let (mut answer, primary_plan) = primary_stage(&shared, &plan, &results, request).await?;
        verify::verify_stage(
            &shared,
            verify::Verify {
                plan: &plan,
                primary_plan: &primary_plan,
                results: &results,
                baseline: baseline.as_ref(),
            },
            &mut answer,
        )
        .await?;
        Ok::<_, RunError>(answer)
    }
    .await;
    // The writers' worktrees are gone before the run ends, however it ends (their removal
    // ran meanwhile).
    if let Some(removal) = worktrees_removal {
        let _ = removal.await;
    }
    let mut answer = acted?;
    // What runs in the background (an exec session, an MCP server) may still have acted.
    shared.check_protected("the run's commands").await?;
    facts::with_repo_facts(&shared, &mut answer);
    Ok(stop_stage(&shared, answer).await)
}

/// Says so when Braincode's own git cannot run here (it runs only inside the OS sandbox).
fn warn_without_git_sandbox(shared: &state::RunBase) {
    if let Err(error) = braincode_sandbox::helper_sandbox(&shared.project_root) {
        shared.sink.warning(format!(
            "Braincode runs its own git only inside the OS sandbox, and none is available ({error}): this run has no patch summary, no checks selected by the change and no diff for the review"
        ));
    }
}

/// Stage 1: notices, the SessionStart and UserPromptSubmit hooks, and the request as agents
/// see it (hook context, references, continuity, images).
async fn prepare(
    request: &RunRequest,
    services: &RunServices,
    sink: &RunSink,
    shared: &state::RunBase,
    history: History,
) -> Result<state::PreparedRequest, RunError> {
    let home = &services.home;
    let (brain_id, mode) = (shared.brain_id.clone(), shared.mode);
    for notice in &shared.trust_notices {
        sink.warning(notice.clone());
    }
    if let Some(problem) = &shared.checks.problem {
        sink.warning(problem.clone());
    }
    if let Ok(sandbox) = &shared.sandbox
        && !sandbox.gaps().is_empty()
    {
        // Used with its gaps only because the user opted in, or because a person approves
        // each command.
        sink.warning(format!(
            "commands run in the {} sandbox, which does not enforce everything: {}",
            sandbox.kind(),
            sandbox.gaps().join("; ")
        ));
    }
    if let (Err(reason), PermissionMode::Yes | PermissionMode::AllowEdits) =
        (&shared.sandbox, request.permission)
    {
        // Said the same with or without someone to ask (a replay must say it alike): without
        // a person, a command that needs one is refused.
        sink.warning(format!(
            "commands cannot be sandboxed ({reason}): each command needs a person's approval (refused when nobody can give it)"
        ));
    }

    // A greeting takes the conversational fast path and uses no tool: nothing of the
    // repository is looked at before its one request (no git process delays it). The same
    // test the planner makes, on the same words: no hooks to add context, no references, no
    // earlier conversation.
    let conversational = request.routing == super::RoutingChoice::Auto
        && shared.hooks.is_empty()
        && history.block.is_none()
        && !request.prompt.contains('@')
        && {
            let plan = braincode_brain::heuristic_route(&request.prompt, &shared.brain, mode);
            braincode_brain::is_fast_path_eligible(&request.prompt, &plan, 0)
        };
    // Nor does it probe the OS sandbox for Braincode's own git (a bubblewrap run, milliseconds
    // before the request): it runs no git.
    if !conversational {
        warn_without_git_sandbox(shared);
    }

    // Hooks before anything else sees the prompt; the read-only environment probe overlaps them.
    let source = if history.continuing {
        "resume"
    } else {
        "startup"
    };
    let hooks = async {
        let start = shared
            .hook(
                HookEvent::SessionStart,
                source,
                Some(source),
                json!({"source": source}),
            )
            .await;
        let submit = shared
            .hook(
                HookEvent::UserPromptSubmit,
                "",
                None,
                json!({"prompt": request.prompt}),
            )
            .await;
        (start, submit)
    };
    // The environment lines only reach prompts, which a replay never sends: it skips them
    // (and the git process they start).
    let replaying = shared.tape.as_deref().is_some_and(Tape::is_strict);
    // One git status gives both the environment's repository line and the patch baseline.
    let environment = async {
        if replaying {
            (String::new(), None)
        } else if conversational {
            let lines = environment_section(
                &request.project_root,
                &brain_id,
                mode,
                "not looked at (a conversational reply)",
            );
            (lines, None)
        } else {
            let probe = crate::git::probe_repository(&request.project_root).await;
            let lines =
                environment_section(&request.project_root, &brain_id, mode, &probe.description);
            (lines, probe.baseline)
        }
    };
    let ((start, submit), (environment, baseline)) = tokio::join!(hooks, environment);
    // A hook that ran may have changed files while the tree was looked at: the plan stage
    // then takes the baseline again, after it.
    let baseline = baseline.filter(|_| start.runs.is_empty() && submit.runs.is_empty());
    for (event, result) in [
        (HookEvent::SessionStart, &start),
        (HookEvent::UserPromptSubmit, &submit),
    ] {
        for problem in result.problems() {
            sink.warning(problem);
        }
        if let Some(reason) = &result.blocked_reason {
            return Err(RunError::HookBlocked {
                event: event.name(),
                reason: reason.clone(),
            });
        }
    }

    let mut text = request.prompt.clone();
    let hook_context: Vec<&String> = start
        .additional_context
        .iter()
        .chain(&submit.additional_context)
        .collect();
    if !hook_context.is_empty() {
        let bullets: Vec<String> = hook_context
            .iter()
            .map(|c| format!("- {}", c.trim()))
            .collect();
        text = format!("Hook additional context:\n{}\n\n{text}", bullets.join("\n"));
    }
    let expanded: ExpandedPrompt = expand_references(
        &text,
        &ReferenceContext {
            project_root: &request.project_root,
            home,
            settings: &shared.settings,
        },
    );
    // A reference the models do not get (too big, binary, outside the project, unreadable)
    // is said to the person too, once each: the model alone knowing is not enough.
    for reference in &expanded.references {
        if let braincode_config::ReferenceOutcome::Failed(reason) = &reference.outcome {
            shared
                .sink
                .warning(format!("{} was not attached: {reason}", reference.token));
        }
    }
    let mut text = expanded.text;
    // What the request itself says (no inlined files, no earlier conversation): the heuristic
    // routes on this, so a follow-up is planned for what it asks, not for what came before.
    let routing_text = text
        .split_once(braincode_config::ATTACHMENTS_HEADING)
        .map_or(text.as_str(), |(own, _)| own)
        .to_string();
    let continued = history.block.is_some();
    if let Some(block) = history.block {
        text = format!("{block}\n\nCurrent request:\n{text}");
    }
    Ok(state::PreparedRequest {
        environment,
        baseline,
        conversational,
        text,
        routing_text,
        continued,
        images: expanded
            .images
            .into_iter()
            .chain(request.images.iter().cloned())
            .map(|image| ContentPart::Image {
                mime_type: image.mime_type,
                data: image.data_base64,
            })
            .collect(),
    })
}

/// Stage 2: the plan (its records: routing with the workers, context, todos, plan review)
/// and, meanwhile, the patch baseline (git) before any agent can act.
async fn plan_stage(
    shared: &Arc<state::RunShared>,
    request: &RunRequest,
) -> Result<(RuntimePlan, Option<PatchBaseline>), RunError> {
    let sink = &shared.sink;
    let mut new_id = || shared.ids.next();
    // A replay takes the patch summary from the journal: it starts no git process. A resume
    // measures from the baseline the interrupted run journaled, so its edits still count.
    let replaying = shared.tape.as_deref().is_some_and(Tape::is_strict);
    let journaled = shared.tape.as_deref().and_then(Tape::baseline);
    let baseline = async {
        match journaled {
            Some(journaled) => Some(journaled),
            None if replaying => None,
            None if shared.conversational => None,
            None => match shared.baseline.clone() {
                Some(probed) => Some(probed),
                None => PatchBaseline::capture(&request.project_root).await,
            },
        }
    };
    let (plan, mut baseline) = tokio::join!(
        plan::make_plan(shared, request.routing, &mut new_id),
        baseline
    );
    // Expected conversational but planned otherwise (it cannot happen with the same words,
    // but tools must never run without a baseline): look now.
    if baseline.is_none()
        && shared.conversational
        && !replaying
        && plan
            .as_ref()
            .is_ok_and(|planned| !planned.plan.conversational)
    {
        warn_without_git_sandbox(shared);
        baseline = PatchBaseline::capture(&request.project_root).await;
    }
    if let Some(record) = baseline.as_ref().and_then(PatchBaseline::to_record) {
        sink.record(Record::PatchBaseline(record));
    }
    let baseline = baseline.filter(|_| !replaying);
    let plan::Planned { plan, router_model } = plan.map_err(|f| match f {
        plan::PlanFailure::Cancelled => RunError::Cancelled,
        plan::PlanFailure::ImageRouting(message) => RunError::Planning(message),
    })?;
    sink.record(Record::Routing(RoutingRecord {
        source: plan.source,
        primary_role: plan.primary,
        reason: plan.reason.clone(),
        confidence: plan.confidence,
        model: router_model,
        fallback_reason: plan.fallback_reason.clone(),
        workers: planned_workers(&plan),
        requires_review: plan.requires_review,
    }));
    sink.record(Record::ContextPlan(ContextPlan {
        context: plan.brain_context.clone(),
    }));
    sink.record(Record::TodoPlan(TodoPlan {
        todos: plan.todos.clone(),
        dependencies: plan.dependencies.clone(),
        reason: Some(plan.reason.clone()),
    }));
    for warning in &plan.warnings {
        sink.warning(warning.clone());
    }
    if !plan.clarification.required
        && let Some(review) = plan_review(shared, &plan)
    {
        sink.record(Record::ExecutionPlanReview(review));
    }
    Ok((plan, baseline))
}

/// The clarification gate: the run stops before any worker or tool, and asks.
fn clarify(shared: &state::RunShared, plan: &RuntimePlan) -> Answer {
    shared
        .sink
        .record(Record::ClarificationRequest(ClarificationRequest {
            clarification: plan.clarification.clone(),
            attempt: None,
        }));
    let todo_ids: Vec<String> = plan.todos.iter().map(|t| t.id.clone()).collect();
    todo_update(
        shared,
        WorkerPhase::Primary,
        plan.primary,
        &todo_ids,
        TaskStatus::Blocked,
        None,
        Some("waiting for clarification"),
    );
    Answer {
        text: plan.clarification.question.clone(),
    }
}

/// Stage 3: the support workers (dependency-aware pool); their todos and failures; with
/// parallel writers, the removal of their worktrees, under way.
async fn support_stage(
    shared: &Arc<state::RunShared>,
    plan: &RuntimePlan,
    writers: Option<crate::writers::Opening>,
) -> Result<(Vec<ForwardedResult>, Option<tokio::task::JoinHandle<()>>), RunError> {
    let limits = routing_limits(&shared.brain.routing, shared.mode);
    let writers = crate::writers::prepare(shared, plan, writers).await;
    let pool = workers::run_support_pool(
        shared,
        plan,
        limits.max_parallel_agents as usize,
        writers.as_ref(),
    )
    .await;
    let (runs, notes, removal) = match (pool, writers) {
        (Ok(runs), Some(writers)) => {
            let (notes, removal) = crate::writers::merge_back(shared, plan, writers, &runs).await;
            (runs, notes, Some(removal))
        }
        (Ok(runs), None) => (runs, BTreeMap::new(), None),
        (Err(err), writers) => {
            // Stopped: the worktrees go, nothing of the writers is merged.
            if let Some(writers) = writers {
                writers.discard().await;
            }
            return Err(RunError::from_agent(err));
        }
    };
    for (index, run) in &runs {
        let status = run.status();
        let error = (status != TaskStatus::Completed).then_some(run.result.summary.as_str());
        if let Some(warning) = support_failure_warning(run) {
            shared.sink.warning(warning);
        }
        todo_update(
            shared,
            WorkerPhase::Support,
            run.role,
            &plan.workers[*index].todo_ids,
            status,
            Some(&run.result.summary),
            error,
        );
    }
    Ok((
        runs.iter()
            .map(|(index, run)| {
                let mut forwarded = run.forwarded();
                forwarded.merge_note = notes.get(index).cloned();
                forwarded
            })
            .collect(),
        removal,
    ))
}

/// What the user is told about a support worker that did not complete.
fn support_failure_warning(run: &workers::WorkerRun) -> Option<String> {
    let failure = run.failure.as_ref()?;
    if run.phase != WorkerPhase::Support || run.status() == TaskStatus::Completed {
        return None;
    }
    let on = failure
        .model
        .as_deref()
        .map(|model| format!(" on {model}"))
        .unwrap_or_default();
    Some(format!(
        "{} worker {}{on}: {}; the answer was made without its result",
        run.role,
        run.status().as_str(),
        failure.reason
    ))
}

/// Stage 4: the primary (candidate fallback, tools, dynamic dispatch).
async fn primary_stage(
    shared: &Arc<state::RunShared>,
    plan: &RuntimePlan,
    results: &[ForwardedResult],
    request: &RunRequest,
) -> Result<(primary::PrimaryAnswer, RuntimeWorkerPlan), RunError> {
    let Some(primary_plan) = primary::primary_worker(plan).cloned() else {
        return Err(RunError::NoPrimary);
    };
    let policy = mode_policy(shared.mode);
    let dispatch = (shared.settings.features.dynamic_dispatch
        && policy.max_dynamic_dispatches > 0
        && !matches!(primary_plan.role, Role::Review | Role::ImageMaker))
    .then(|| {
        Arc::new(dispatch::DispatchTool::new(
            shared.clone(),
            plan.brain_context.id.clone(),
            primary_plan.role,
            policy.max_dynamic_dispatches,
        ))
    });
    match primary::run_primary(shared, plan, &primary_plan, results, dispatch).await {
        Ok(answer) => {
            // Asked for a change and none was made: its todo is not done, and says why.
            let unchanged = braincode_brain::Signals::detect(&request.prompt).file_edit
                && !shared.live.with(crate::fold::RunState::changed_files);
            let (status, error) = match (unchanged, shared.permission) {
                (false, _) => (TaskStatus::Completed, None),
                (true, crate::approval::PermissionMode::ReadOnly) => {
                    (TaskStatus::Blocked, Some(READ_ONLY_UNDONE))
                }
                (true, _) => (TaskStatus::Blocked, Some(NO_CHANGE_MADE)),
            };
            todo_update(
                shared,
                WorkerPhase::Primary,
                primary_plan.role,
                &primary_plan.todo_ids,
                status,
                Some(&answer.text),
                error,
            );
            Ok((answer, primary_plan))
        }
        Err(primary::PrimaryFailure::Cancelled) => Err(RunError::Cancelled),
        Err(primary::PrimaryFailure::Failed(message)) => {
            todo_update(
                shared,
                WorkerPhase::Primary,
                primary_plan.role,
                &primary_plan.todo_ids,
                TaskStatus::Failed,
                None,
                Some(&message),
            );
            Err(RunError::Primary(message))
        }
    }
}

/// Stage 6: the Stop hook, the last word before the answer (its payload, a copy of the
/// answer, is only built when a Stop hook exists).
async fn stop_stage(shared: &state::RunShared, answer: primary::PrimaryAnswer) -> Answer {
    let stop = if shared.hooks.iter().any(|h| h.event == HookEvent::Stop) {
        shared
            .hook(
                HookEvent::Stop,
                "",
                None,
                json!({"stop_hook_active": false, "last_assistant_message": answer.text}),
            )
            .await
    } else {
        crate::hooks::HookResult::default()
    };
    let mut text = trimmed(answer.text);
    let feedback: Vec<String> = stop
        .blocked_reason
        .iter()
        .chain(&stop.additional_context)
        .cloned()
        .collect();
    if !feedback.is_empty() {
        text.push_str("\n\nHook feedback:\n");
        text.push_str(
            &feedback
                .iter()
                .map(|f| format!("- {}", f.trim()))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    for problem in stop.problems() {
        shared.sink.warning(problem);
    }
    Answer { text }
}

/// `text` without its leading and trailing whitespace, reusing its buffer.
fn trimmed(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    let leading = text.len() - text.trim_start().len();
    text.drain(..leading);
    text
}
