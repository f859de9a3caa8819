//! The stages of a run after its configuration is loaded: trust and sandbox notices, the
//! SessionStart and UserPromptSubmit hooks, the request as agents see it, the plan and the
//! clarification gate, support workers, the primary, review and the Stop hook.

use std::sync::Arc;

use braincode_brain::{mode_policy, routing_limits};
use braincode_config::{ExpandedPrompt, ReferenceContext, expand_references};
use braincode_llm::ContentPart;
use braincode_protocol::{
    ClarificationRequest, ContextPlan, Record, RoutingRecord, TaskStatus, TodoPlan, TodoUpdate,
    WorkerPhase,
};
use serde_json::json;

use super::finish::{Draft, Stop};
use super::opening::{History, new_context_id};
use super::plan_review::plan_review;
use super::prompts::ForwardedResult;
use super::setup::environment_section;
use super::{RunRequest, RunServices, dispatch, finish, plan, primary, review, state, workers};
use crate::approval::PermissionMode;
use crate::git::PatchBaseline;
use crate::hooks::{HookEvent, run_hooks};
use crate::sink::RunSink;

/// What an untrusted project had ignored, said once per run (and a trust store that could not
/// be read, which counts as "not trusted").
fn trust_notices(home: &braincode_config::Home, project_root: &std::path::Path) -> Vec<String> {
    let (trust, error) = braincode_config::check_trust(home, project_root);
    let mut notices: Vec<String> = error
        .map(|err| {
            format!("workspace trust could not be read ({err}); treating this project as untrusted")
        })
        .into_iter()
        .collect();
    notices.extend(trust.notice());
    notices
}

pub(super) async fn pipeline(
    request: &RunRequest,
    services: &RunServices,
    sink: &RunSink,
    mut shared: Box<state::RunShared>,
    history: History,
    draft: &mut Draft,
) -> Result<(), Stop> {
    let home = &services.home;
    let continuing = history.continuing;
    let (brain_id, mode) = (shared.brain_id.clone(), shared.mode);
    for notice in trust_notices(home, &request.project_root) {
        sink.warning(notice.clone());
        draft.warnings.push(notice);
    }
    if let (Err(reason), PermissionMode::Yes) = (&shared.sandbox, request.permission) {
        let notice = format!(
            "commands cannot be sandboxed ({reason}): each command needs a person's approval, so this run refuses them"
        );
        sink.warning(notice.clone());
        draft.warnings.push(notice);
    }

    // Hooks before anything else sees the prompt; the read-only environment probe overlaps them.
    let source = if continuing { "resume" } else { "startup" };
    let hooks = async {
        let start = run_hooks(
            &shared.hooks,
            HookEvent::SessionStart,
            source,
            &shared.hook_env,
            json!({"source": source}),
            &shared.cancel,
        )
        .await;
        let submit = run_hooks(
            &shared.hooks,
            HookEvent::UserPromptSubmit,
            "",
            &shared.hook_env,
            json!({"prompt": request.prompt}),
            &shared.cancel,
        )
        .await;
        (start, submit)
    };
    let ((start, submit), environment) = tokio::join!(
        hooks,
        environment_section(&request.project_root, &brain_id, mode)
    );
    shared.sections.environment = environment;
    for (event, result, matcher) in [
        (HookEvent::SessionStart, &start, Some(source)),
        (HookEvent::UserPromptSubmit, &submit, None),
    ] {
        if result.is_empty() {
            continue;
        }
        let record = result.to_record(event, matcher);
        sink.record(match event {
            HookEvent::SessionStart => Record::HookSessionStart(record),
            _ => Record::HookUserPromptSubmit(record),
        });
        for problem in result.problems() {
            sink.warning(problem.clone());
            draft.warnings.push(problem);
        }
        if let Some(reason) = &result.blocked_reason {
            return Err(Stop::Blocked(format!(
                "the {} hook blocked this run: {reason}",
                event.name()
            )));
        }
    }

    // The request as agents see it: hook context, references, continuity.
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
    let mut text = expanded.text;
    // What the request itself says (no inlined files, no earlier conversation): the heuristic
    // routes on this, so a follow-up is planned for what it asks, not for what came before.
    shared.routing_text = text
        .split_once(braincode_config::ATTACHMENTS_HEADING)
        .map_or(text.as_str(), |(own, _)| own)
        .to_string();
    if let Some(block) = history.block {
        text = format!("{block}\n\nCurrent request:\n{text}");
        shared.continued = true;
    }
    shared.request = text;
    shared.images = expanded
        .images
        .into_iter()
        .map(|image| ContentPart::Image {
            mime_type: image.mime_type,
            data: image.data_base64,
        })
        .collect();
    let shared = Arc::new(*shared);

    // Plan; the patch baseline (git) is taken meanwhile, before any agent can act.
    let mut new_id = new_context_id;
    let (plan, baseline) = tokio::join!(
        plan::make_plan(&shared, request.routing, &mut new_id),
        PatchBaseline::capture(&request.project_root)
    );
    let plan::Planned { plan, router_model } = plan.map_err(|f| match f {
        plan::PlanFailure::Cancelled => Stop::Cancelled,
        plan::PlanFailure::ImageRouting(message) => Stop::failed(message),
    })?;
    draft.set_plan(&plan);
    sink.record(Record::Routing(RoutingRecord {
        source: plan.source,
        primary_role: plan.primary,
        reason: plan.reason.clone(),
        confidence: plan.confidence,
        model: router_model,
        fallback_reason: plan.fallback_reason.clone(),
    }));
    sink.record(Record::ContextPlan(ContextPlan {
        context: serde_json::to_value(&plan.brain_context).unwrap_or_default(),
    }));
    sink.record(Record::TodoPlan(TodoPlan {
        todos: plan.todos.clone(),
        dependencies: plan.dependencies.clone(),
        reason: Some(plan.reason.clone()),
    }));
    for warning in &plan.warnings {
        draft.warnings.push(warning.clone());
    }

    // Clarification gate: stop before any worker or tool.
    if plan.clarification.required {
        sink.record(Record::ClarificationRequest(ClarificationRequest {
            clarification: plan.clarification.clone(),
            attempt: None,
        }));
        let todo_ids: Vec<String> = plan.todos.iter().map(|t| t.id.clone()).collect();
        draft.block_todos("waiting for clarification");
        sink.record(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Primary,
            role: Some(plan.primary),
            status: TaskStatus::Blocked,
            todo_ids,
            todos: draft.todos.clone(),
            summary: None,
            error: Some("waiting for clarification".into()),
        }));
        draft.clarification = Some(plan.clarification.clone());
        return Ok(());
    }

    if let Some(review) = plan_review(&shared, &plan) {
        draft.plan_review = Some(finish::plan_review_for_report(&review));
        sink.record(Record::ExecutionPlanReview(review));
    }

    // Support workers.
    let limits = routing_limits(&shared.brain.routing, shared.mode);
    let support_runs =
        workers::run_support_pool(&shared, &plan, limits.max_parallel_agents as usize)
            .await
            .map_err(Stop::from_agent)?;
    for (index, run) in &support_runs {
        if let Some(warning) = draft.record_worker(*index, run) {
            sink.warning(warning);
        }
        sink.record(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Support,
            role: Some(run.role),
            status: run.status(),
            todo_ids: plan.workers[*index].todo_ids.clone(),
            todos: draft.todos.clone(),
            summary: Some(braincode_context::clip_chars(&run.result.summary, 600)),
            error: None,
        }));
    }
    let results: Vec<ForwardedResult> = support_runs
        .values()
        .map(workers::WorkerRun::forwarded)
        .collect();

    // Primary.
    let Some(primary_plan) = primary::primary_worker(&plan).cloned() else {
        return Err(Stop::failed("the plan has no primary worker"));
    };
    let policy = mode_policy(shared.mode);
    let dispatch = (shared.settings.features.dynamic_dispatch
        && policy.max_dynamic_dispatches > 0
        && !matches!(
            primary_plan.role,
            braincode_protocol::Role::Review | braincode_protocol::Role::ImageMaker
        ))
    .then(|| {
        Arc::new(dispatch::DispatchTool::new(
            shared.clone(),
            plan.brain_context.id.clone(),
            primary_plan.role,
            policy.max_dynamic_dispatches,
            new_context_id,
        ))
    });
    let answer =
        primary::run_primary(&shared, &plan, &primary_plan, &results, dispatch.clone()).await;
    if let Some(dispatch) = &dispatch {
        draft.dispatched = match dispatch.runs.lock() {
            Ok(runs) => runs.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
    }
    let answer = match answer {
        Ok(answer) => answer,
        Err(primary::PrimaryFailure::Cancelled) => return Err(Stop::Cancelled),
        Err(primary::PrimaryFailure::Failed(message)) => {
            draft.fail_todos(&primary_plan.todo_ids, &message);
            return Err(Stop::Failed(message));
        }
    };
    draft.record_primary(&primary_plan, &answer.text, &answer.model);

    // Review.
    let patch = match &baseline {
        Some(baseline) => baseline.summarize(&request.project_root).await,
        None => None,
    };
    draft.patch = patch.clone();
    let review_needed = (plan.requires_review || shared.gate.review_required())
        && primary_plan.role != braincode_protocol::Role::Review;
    if review_needed {
        let worker = review::review_worker(&shared, &plan, &mut new_id);
        let review_run = review::run_review(
            &shared,
            &plan,
            worker,
            &answer.text,
            &results,
            patch.as_ref(),
        )
        .await
        .map_err(Stop::from_agent)?;
        if let Some(warning) = draft.record_review(&plan, review_run) {
            sink.warning(warning);
        }
    }

    // Stop hook: last word before the answer. The payload (a copy of the answer) is only
    // built when a Stop hook exists.
    let stop = if shared.hooks.iter().any(|h| h.event == HookEvent::Stop) {
        run_hooks(
            &shared.hooks,
            HookEvent::Stop,
            "",
            &shared.hook_env,
            json!({"stop_hook_active": false, "last_assistant_message": answer.text}),
            &shared.cancel,
        )
        .await
    } else {
        crate::hooks::HookResult::default()
    };
    let mut summary = trimmed(answer.text);
    if !stop.is_empty() {
        sink.record(Record::HookStop(stop.to_record(HookEvent::Stop, None)));
        let feedback: Vec<String> = stop
            .blocked_reason
            .iter()
            .chain(&stop.additional_context)
            .cloned()
            .collect();
        if !feedback.is_empty() {
            summary.push_str("\n\nHook feedback:\n");
            summary.push_str(
                &feedback
                    .iter()
                    .map(|f| format!("- {}", f.trim()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        for problem in stop.problems() {
            draft.warnings.push(problem);
        }
    }
    draft.summary = summary;
    Ok(())
}

/// `text` without its leading and trailing whitespace, reusing its buffer.
fn trimmed(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    let leading = text.len() - text.trim_start().len();
    text.drain(..leading);
    text
}
