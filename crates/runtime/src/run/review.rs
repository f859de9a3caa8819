//! The independent review worker: sees the request, the primary's answer, the worker results
//! and the diff; returns a typed decision that is never "approved" by default.

use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_protocol::{
    CheckStatus, CheckSummary, ContextId, Finding, PatchSummary, Record, ReviewArtifactsSummary,
    ReviewDecision, ReviewDecisionRecord, ReviewVerdict, Role, Severity, WorkerPhase,
};

use crate::agent::AgentError;
use crate::git::review_diff;
use crate::run::prompts::{ForwardedResult, review_prompt};
use crate::run::state::RunShared;
use crate::run::workers::{WorkerJob, WorkerRun, run_worker};

/// The review worker of the plan, or a new one when a permission rule or the checks asked
/// for a review the plan did not have (`reason` says which).
pub(crate) fn review_worker(
    shared: &RunShared,
    plan: &RuntimePlan,
    reason: &str,
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
        reason: reason.into(),
        context_id: ContextId(new_id()),
        todo_ids: Vec::new(),
        model_chain: policy.chain(),
        thinking_level: policy.thinking_level,
        writer: false,
    }
}

/// What the reviewer is shown besides the request: the primary's answer (and its model, for
/// independence), the worker results, the change and the checks, and which fix pass this is.
pub(crate) struct ReviewInputs<'a> {
    pub primary_answer: &'a str,
    pub primary_model: &'a str,
    pub results: &'a [ForwardedResult],
    pub patch: Option<&'a PatchSummary>,
    pub checks: Option<&'a CheckSummary>,
    pub fix_iteration: u32,
}

/// The review chain with the models other than the primary's first, so the review is
/// independent whenever the brain offers another model; and whether it is.
fn independent_chain(chain: &[String], primary_model: &str) -> (Vec<String>, bool) {
    let (others, same): (Vec<String>, Vec<String>) =
        chain.iter().cloned().partition(|id| id != primary_model);
    let independent = !others.is_empty();
    (others.into_iter().chain(same).collect(), independent)
}

/// The check gate of the reviewer's decision: failed checks turn an approval into "changes
/// requested" with a high finding naming them (a block stays a block); skipped checks and a
/// truncated diff are residual risks.
pub(crate) fn apply_check_gate(
    decision: &mut ReviewDecision,
    checks: Option<&CheckSummary>,
    diff_truncated: bool,
) {
    if let Some(checks) = checks {
        match checks.status {
            CheckStatus::Failed => {
                let failed: Vec<&str> = checks
                    .results
                    .iter()
                    .filter(|r| !r.passed && r.environment.is_none())
                    .map(|r| r.name.as_str())
                    .collect();
                if decision.decision != ReviewVerdict::Blocked {
                    decision.decision = ReviewVerdict::ChangesRequested;
                }
                decision.findings.insert(
                    0,
                    Finding {
                        severity: Severity::High,
                        issue: format!("checks failed: {}", failed.join(", ")),
                        file: None,
                        line: None,
                        evidence: checks.reason.clone(),
                        suggestion: Some("fix the change until the checks pass".into()),
                    },
                );
            }
            CheckStatus::Skipped => decision.residual_risks.push(format!(
                "Checks were skipped: {}",
                checks.reason.as_deref().unwrap_or("no reason given")
            )),
            CheckStatus::CouldNotRun => decision.residual_risks.push(format!(
                "Checks could not run: {}",
                checks.reason.as_deref().unwrap_or("no reason given")
            )),
            CheckStatus::Passed => {}
        }
    }
    if diff_truncated {
        decision
            .residual_risks
            .push("The diff was truncated: the reviewer did not see all of it".into());
    }
}

pub(crate) async fn run_review(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    mut worker: RuntimeWorkerPlan,
    inputs: ReviewInputs<'_>,
) -> Result<WorkerRun, AgentError> {
    let patch = inputs.patch;
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
    let (ordered, independent) = independent_chain(&worker.model_chain, inputs.primary_model);
    worker.model_chain = ordered;
    let fix_iteration = (inputs.fix_iteration > 0).then_some(inputs.fix_iteration);
    shared
        .sink
        .record(Record::ReviewArtifactsSummary(ReviewArtifactsSummary {
            changed_files: patch
                .map(|p| p.changed_files.iter().map(|f| f.path.clone()).collect())
                .unwrap_or_default(),
            diff_truncated,
            checks_status: Some(inputs.checks.map_or("not_run", |c| c.status.label()).into()),
            risk_tier: inputs.checks.and_then(|c| c.risk_tier.clone()),
            independent: Some(independent),
            attempt: None,
            fix_iteration,
        }));
    let job = |chain: Vec<String>, retry: u32| {
        let sections = shared.sections.clone();
        let request = shared.request.clone();
        let answer = inputs.primary_answer.to_string();
        let results_owned = inputs.results.to_vec();
        let patch_owned = patch.cloned();
        let checks_owned = inputs.checks.cloned();
        let diff = diff.clone();
        let mut plan_worker = worker.clone();
        plan_worker.model_chain = chain;
        if retry > 0 {
            // Its own context (and agent session): a replay serves each attempt its replies.
            plan_worker.context_id = ContextId(format!("{}-retry{retry}", worker.context_id.0));
        }
        WorkerJob {
            plan: plan_worker,
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
                    checks_owned.as_ref(),
                    handoff,
                )
            })),
            place: None,
        }
    };
    // A reply without a decision is asked again of the next review model, if the chain has
    // one; the last one's inconclusive answer stands.
    let mut chain = worker.model_chain.clone();
    let mut retry = 0;
    let mut run = run_worker(shared, job(chain.clone(), retry)).await?;
    while run
        .review
        .as_ref()
        .is_some_and(|d| d.decision == ReviewVerdict::Inconclusive)
    {
        let next = run
            .model
            .as_ref()
            .and_then(|model| chain.iter().position(|m| m == model))
            .map(|at| chain[at + 1..].to_vec())
            .unwrap_or_default();
        if next.is_empty() {
            break;
        }
        shared.sink.warning(format!(
            "the review by {} gave no decision; asking {}",
            run.model.as_deref().unwrap_or("its model"),
            next[0]
        ));
        chain = next;
        retry += 1;
        run = run_worker(shared, job(chain.clone(), retry)).await?;
    }
    if let Some(decision) = run.review.as_mut() {
        apply_check_gate(decision, inputs.checks, diff_truncated);
        shared
            .sink
            .record(Record::ReviewDecision(ReviewDecisionRecord {
                decision: decision.clone(),
                model: run.model.clone(),
                attempt: None,
                fix_iteration,
            }));
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdict: ReviewVerdict) -> ReviewDecision {
        ReviewDecision {
            confidence: Some(0.9),
            ..ReviewDecision::of(verdict)
        }
    }

    fn checks(status: CheckStatus) -> CheckSummary {
        CheckSummary {
            status,
            reason: Some("cargo test failed".into()),
            patch_kind: Some("backend".into()),
            risk_tier: Some("medium".into()),
            selected_scripts: vec!["cargo test".into()],
            review_required: false,
            results: vec![braincode_protocol::CheckResult {
                name: "cargo test".into(),
                command: "cargo test".into(),
                passed: status != CheckStatus::Failed,
                exit_code: Some(101),
                timed_out: false,
                duration_ms: 1,
                output_tail: String::new(),
                environment: None,
            }],
            written_files: Vec::new(),
            setup: Vec::new(),
            network: Vec::new(),
        }
    }

    #[test]
    fn failed_checks_overrule_an_approval_but_not_a_block() {
        let mut approved = decision(ReviewVerdict::Approved);
        apply_check_gate(&mut approved, Some(&checks(CheckStatus::Failed)), false);
        assert_eq!(approved.decision, ReviewVerdict::ChangesRequested);
        assert_eq!(approved.findings[0].severity, Severity::High);
        assert!(approved.findings[0].issue.contains("cargo test"));

        let mut blocked = decision(ReviewVerdict::Blocked);
        apply_check_gate(&mut blocked, Some(&checks(CheckStatus::Failed)), true);
        assert_eq!(blocked.decision, ReviewVerdict::Blocked);
        assert_eq!(blocked.residual_risks.len(), 1);

        let mut skipped = decision(ReviewVerdict::Approved);
        apply_check_gate(&mut skipped, Some(&checks(CheckStatus::Skipped)), false);
        assert_eq!(skipped.decision, ReviewVerdict::Approved);
        assert!(skipped.residual_risks[0].starts_with("Checks were skipped"));

        let mut passed = decision(ReviewVerdict::Approved);
        apply_check_gate(&mut passed, Some(&checks(CheckStatus::Passed)), false);
        assert_eq!(passed, decision(ReviewVerdict::Approved));
    }

    #[test]
    fn the_review_prefers_a_model_other_than_the_primarys() {
        let chain = vec!["a".to_string(), "b".to_string()];
        assert_eq!(
            independent_chain(&chain, "a"),
            (vec!["b".to_string(), "a".to_string()], true)
        );
        assert_eq!(independent_chain(&chain, "c"), (chain.clone(), true));
        assert_eq!(
            independent_chain(&["a".to_string()], "a"),
            (vec!["a".to_string()], false)
        );
    }
}
