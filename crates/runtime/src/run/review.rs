//! The independent review worker: sees the request, the primary's answer, the worker results
//! and the diff; returns a typed decision that is never "approved" by default.

use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_protocol::{
    ContextId, PatchSummary, Record, ReviewArtifactsSummary, ReviewDecisionRecord, Role,
    WorkerPhase,
};

use crate::agent::AgentError;
use crate::git::review_diff;
use crate::run::prompts::{ForwardedResult, review_prompt};
use crate::run::state::RunShared;
use crate::run::workers::{WorkerJob, WorkerRun, run_worker};

/// The review worker of the plan, or a new one when a permission rule asked for a review
/// the plan did not have.
pub(crate) fn review_worker(
    shared: &RunShared,
    plan: &RuntimePlan,
    new_id: &mut (dyn FnMut() -> String + Send),
) -> RuntimeWorkerPlan {
    if let Some(worker) = plan.workers.iter().find(|w| w.phase == WorkerPhase::Review) {
        return worker.clone();
    }
    let policy = shared.brain.policy(Role::Review);
    RuntimeWorkerPlan {
        role: Role::Review,
        phase: WorkerPhase::Review,
        goal: "Independently review the result and its changes for defects, regressions and security problems.".into(),
        reason: "a permission rule requires an independent review".into(),
        context_id: ContextId(new_id()),
        todo_ids: Vec::new(),
        model_chain: policy.chain(),
        thinking_level: policy.thinking_level,
    }
}

pub(crate) async fn run_review(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    worker: RuntimeWorkerPlan,
    primary_answer: &str,
    results: &[ForwardedResult],
    patch: Option<&PatchSummary>,
) -> Result<WorkerRun, AgentError> {
    let new_files: Vec<String> = patch
        .map(|p| {
            p.changed_files
                .iter()
                .filter(|f| f.status.contains('?'))
                .map(|f| f.path.clone())
                .collect()
        })
        .unwrap_or_default();
    let (diff, diff_truncated) = if patch.is_some_and(|p| p.has_patch_activity) {
        review_diff(&shared.project_root, &new_files).await
    } else {
        (String::new(), false)
    };
    shared
        .sink
        .record(Record::ReviewArtifactsSummary(ReviewArtifactsSummary {
            changed_files: patch
                .map(|p| p.changed_files.iter().map(|f| f.path.clone()).collect())
                .unwrap_or_default(),
            diff_truncated,
            checks_status: Some("not_run".into()),
            risk_tier: None,
            attempt: None,
            fix_iteration: None,
        }));
    let sections = shared.sections.clone();
    let request = shared.request.clone();
    let answer = primary_answer.to_string();
    let results_owned = results.to_vec();
    let patch_owned = patch.cloned();
    let job = WorkerJob {
        plan: worker,
        parent: plan.brain_context.id.clone(),
        upstream: Vec::new(),
        prompt_override: Some(Box::new(move |handoff| {
            review_prompt(
                &sections,
                &request,
                &answer,
                &results_owned,
                patch_owned.as_ref(),
                &diff,
                diff_truncated,
                handoff,
            )
        })),
    };
    let run = run_worker(shared, job).await?;
    if let Some(decision) = &run.review {
        shared
            .sink
            .record(Record::ReviewDecision(ReviewDecisionRecord {
                decision: decision.clone(),
                model: run.model.clone(),
                attempt: None,
                fix_iteration: None,
            }));
    }
    Ok(run)
}
