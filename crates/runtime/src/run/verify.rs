//! After the primary: the agent proves its work. Each pass summarises the patch, runs the
//! checks the change selects, has the independent review judge the diff and the checks, and —
//! when the checks failed or the review asked for changes — sends the failing output and the
//! required changes back to the same primary agent, up to the mode's fix budget.

use std::fmt::Write as _;
use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan, mode_policy};
use braincode_protocol::{
    CheckStatus, CheckSummary, FixIteration, FixTrigger, PatchSummary, PatchSummaryRecord, Record,
    ReviewDecision, ReviewVerdict, Role,
};

use super::checks::{fix_excerpt, run_checks};
use super::finish::RunError;
use super::primary::{PrimaryAnswer, PrimaryFailure, continue_primary};
use super::prompts::ForwardedResult;
use super::review::{ReviewInputs, review_worker, run_review};
use super::state::RunShared;
use crate::git::PatchBaseline;
use crate::report::REVIEW_SKIPPED_PREFIX;

/// What the verification of a run reads.
pub(crate) struct Verify<'a> {
    pub plan: &'a RuntimePlan,
    pub primary_plan: &'a RuntimeWorkerPlan,
    pub results: &'a [ForwardedResult],
    pub baseline: Option<&'a PatchBaseline>,
}

/// Why a pass ended the loop, or what the next fix pass is for.
fn fix_trigger(
    checks: Option<&CheckSummary>,
    review: Option<&ReviewDecision>,
) -> Option<FixTrigger> {
    // A blocked review is final: a fix pass cannot unblock it.
    if review.is_some_and(|r| r.decision == ReviewVerdict::Blocked) {
        return None;
    }
    if checks.is_some_and(|c| c.status == CheckStatus::Failed) {
        return Some(FixTrigger::ChecksFailed);
    }
    review
        .filter(|r| r.decision == ReviewVerdict::ChangesRequested)
        .map(|_| FixTrigger::ChangesRequested)
}

/// Stage 5: patch → checks → review → (fix → patch → checks → review)…
pub(crate) async fn verify_stage(
    shared: &Arc<RunShared>,
    verify: Verify<'_>,
    answer: &mut PrimaryAnswer,
) -> Result<(), RunError> {
    let budget = mode_policy(shared.mode).max_fix_iterations;
    let can_fix = verify.primary_plan.role != Role::Review;
    let mut iteration = 0;
    // What the checks wrote joins the baseline: later passes do not count it as the agent's.
    let mut baseline = verify.baseline.cloned();
    loop {
        // Before git reads the project for the patch and the review diff.
        shared.check_protected("the agents' work").await?;
        let patch = patch_summary(shared, &verify, baseline.as_ref(), iteration).await;
        let checks = match &patch {
            Some(patch) if patch.has_patch_activity => {
                Some(run_checks(shared, patch, iteration, baseline.as_mut()).await?)
            }
            _ => None,
        };
        let review = review_pass(
            shared,
            &verify,
            answer,
            patch.as_ref(),
            checks.as_ref(),
            iteration,
        )
        .await?;
        let Some(trigger) = fix_trigger(checks.as_ref(), review.as_ref()) else {
            return Ok(());
        };
        let still = match trigger {
            FixTrigger::ChecksFailed => "checks still failing",
            FixTrigger::ChangesRequested => "the review still requesting changes",
        };
        if !can_fix || answer.conversation.is_none() {
            shared.sink.warning(format!(
                "no fix pass: the primary {} cannot edit in this run, with {still}",
                verify.primary_plan.role
            ));
            return Ok(());
        }
        if iteration >= budget {
            shared.sink.warning(format!(
                "fix budget exhausted after {iteration} fix iteration(s) ({} mode allows {budget}), with {still}",
                shared.mode
            ));
            return Ok(());
        }
        iteration += 1;
        shared.sink.record(Record::FixIteration(FixIteration {
            iteration,
            trigger,
            attempt: None,
        }));
        let prompt = fix_prompt(checks.as_ref(), review.as_ref());
        match continue_primary(shared, answer, prompt, iteration).await {
            Ok(()) => {}
            Err(PrimaryFailure::Cancelled) => return Err(RunError::Cancelled),
            Err(PrimaryFailure::Failed(message)) => {
                shared
                    .sink
                    .warning(format!("fix pass {iteration} failed: {message}"));
                return Ok(());
            }
        }
    }
}

/// The patch of the run so far (journaled), or the journal's in a replay; `None` outside git.
async fn patch_summary(
    shared: &RunShared,
    verify: &Verify<'_>,
    baseline: Option<&PatchBaseline>,
    iteration: u32,
) -> Option<PatchSummary> {
    let patch = match shared.tape.as_deref().filter(|tape| tape.is_strict()) {
        Some(tape) => tape.patch_at(iteration).cloned(),
        None => match baseline {
            Some(baseline) => baseline.summarize(&shared.project_root).await,
            None => None,
        },
    };
    if let Some(patch) = &patch {
        shared.sink.record(Record::PatchSummary(PatchSummaryRecord {
            patch: patch.clone(),
            attempt: None,
        }));
        // What commands changed (not seen by the edit tools) joins the ledger, for undo; a
        // file is known from git's last commit unless it was dirty when the run started.
        if let Some(ledger) = &shared.ledger {
            let start = verify.baseline.map_or(
                crate::ledger::TreeAtStart::Unknown,
                crate::ledger::TreeAtStart::Baseline,
            );
            ledger.reconcile(patch, &shared.project_root, start).await;
        }
    }
    patch
}

/// The independent review of one pass, when the plan, a permission rule or the checks ask
/// for one. A review that could not run is a review *not done*: a warning, never an approval.
async fn review_pass(
    shared: &Arc<RunShared>,
    verify: &Verify<'_>,
    answer: &PrimaryAnswer,
    patch: Option<&PatchSummary>,
    checks: Option<&CheckSummary>,
    iteration: u32,
) -> Result<Option<ReviewDecision>, RunError> {
    if verify.primary_plan.role == Role::Review {
        return Ok(None);
    }
    let reason = if verify.plan.requires_review {
        "the plan requires an independent review"
    } else if shared.gate.review_required() {
        "a permission rule requires an independent review"
    } else if checks.is_some_and(|c| c.review_required) {
        "the patch kind requires an independent review"
    } else {
        return Ok(None);
    };
    let mut new_id = || shared.ids.next();
    let mut worker = review_worker(shared, verify.plan, reason, &mut new_id);
    if iteration > 0 {
        // Each pass's review is its own agent (its replies are journaled under its own id).
        worker.context_id = braincode_protocol::ContextId(
            shared.ids.derived(&format!("review after fix {iteration}")),
        );
    }
    // The review's todos: its worker's, else the plan's review todo ("Review the result").
    let todo_ids: Vec<String> = if worker.todo_ids.is_empty() {
        verify
            .plan
            .todos
            .iter()
            .filter(|t| t.role == Role::Review)
            .map(|t| t.id.clone())
            .collect()
    } else {
        worker.todo_ids.clone()
    };
    let run = run_review(
        shared,
        verify.plan,
        worker,
        ReviewInputs {
            primary_answer: &answer.text,
            primary_model: &answer.model,
            results: verify.results,
            patch,
            checks,
            fix_iteration: iteration,
        },
    )
    .await
    .map_err(RunError::from_agent)?;
    if !todo_ids.is_empty() {
        let (status, summary, error) = match &run.review {
            Some(review) => (
                braincode_protocol::TaskStatus::Completed,
                Some(format!(
                    "review: {}",
                    review.decision.as_str().replace('_', " ")
                )),
                None,
            ),
            None => (
                braincode_protocol::TaskStatus::Failed,
                None,
                Some(run.result.summary.clone()),
            ),
        };
        super::todos::todo_update(
            shared,
            braincode_protocol::WorkerPhase::Review,
            Role::Review,
            &todo_ids,
            status,
            summary.as_deref(),
            error.as_deref(),
        );
    }
    if run.review.is_none() {
        let reason = run
            .failure
            .as_ref()
            .map_or_else(|| run.result.summary.clone(), |f| f.reason.clone());
        shared.sink.warning(
            match run.failure.as_ref().and_then(|f| f.model.as_deref()) {
                Some(model) => format!("{REVIEW_SKIPPED_PREFIX}{model} unavailable ({reason})"),
                None => format!("{REVIEW_SKIPPED_PREFIX}no review model could run ({reason})"),
            },
        );
    }
    Ok(run.review)
}

/// What a fix pass tells the primary: the failing checks with the end of their output, the
/// review's required changes and findings, and to make minimal edits.
fn fix_prompt(checks: Option<&CheckSummary>, review: Option<&ReviewDecision>) -> String {
    let mut out = String::from(
        "Your change is not done yet. Fix what is below with minimal edits (do not rewrite unrelated code), then answer again with what you changed.\n",
    );
    if let Some(checks) = checks.filter(|c| c.status == CheckStatus::Failed) {
        let _ = writeln!(out, "\n## Failed checks");
        // Checks that could not run are not the code's to fix.
        for result in (checks.results.iter()).filter(|r| !r.passed && r.environment.is_none()) {
            let how = match (result.timed_out, result.exit_code) {
                (true, _) => "timed out".to_string(),
                (false, Some(code)) => format!("exit code {code}"),
                (false, None) => "did not run".to_string(),
            };
            let _ = writeln!(out, "- {} (`{}`): {how}", result.name, result.command);
            let excerpt = fix_excerpt(&result.output_tail);
            if !excerpt.is_empty() {
                let _ = writeln!(out, "```\n{excerpt}\n```");
            }
        }
    }
    if let Some(review) = review {
        if !review.required_changes.is_empty() {
            let _ = writeln!(out, "\n## Required changes (review)");
            for change in &review.required_changes {
                let _ = writeln!(out, "- {change}");
            }
        }
        let findings: Vec<_> = review
            .findings
            .iter()
            .filter(|f| !f.issue.starts_with("checks failed:"))
            .collect();
        if !findings.is_empty() {
            let _ = writeln!(out, "\n## Review findings");
            for finding in findings {
                let place = match (&finding.file, finding.line) {
                    (Some(file), Some(line)) => format!(" ({file}:{line})"),
                    (Some(file), None) => format!(" ({file})"),
                    _ => String::new(),
                };
                let _ = writeln!(out, "- [{:?}] {}{place}", finding.severity, finding.issue);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::CheckResult;

    fn review(verdict: ReviewVerdict) -> ReviewDecision {
        ReviewDecision {
            decision: verdict,
            confidence: None,
            rationale: None,
            findings: vec![],
            required_changes: vec!["handle the empty token".into()],
            blocking_issues: vec![],
            residual_risks: vec![],
        }
    }

    fn failed_checks() -> CheckSummary {
        CheckSummary {
            status: CheckStatus::Failed,
            reason: None,
            patch_kind: None,
            risk_tier: None,
            selected_scripts: vec![],
            review_required: false,
            results: vec![CheckResult {
                name: "pytest".into(),
                command: "python3 -m pytest".into(),
                passed: false,
                exit_code: Some(1),
                timed_out: false,
                duration_ms: 5,
                output_tail: format!("{}\nFAILED test_calc.py::test_add", "noise\n".repeat(900)),
                environment: None,
            }],
            written_files: Vec::new(),
            setup: Vec::new(),
            network: Vec::new(),
        }
    }

    #[test]
    fn triggers_follow_the_spec_order() {
        let failed = failed_checks();
        assert_eq!(
            fix_trigger(Some(&failed), None),
            Some(FixTrigger::ChecksFailed)
        );
        assert_eq!(
            fix_trigger(None, Some(&review(ReviewVerdict::ChangesRequested))),
            Some(FixTrigger::ChangesRequested)
        );
        assert_eq!(
            fix_trigger(Some(&failed), Some(&review(ReviewVerdict::Blocked))),
            None,
            "a blocked review is not fixed"
        );
        assert_eq!(
            fix_trigger(None, Some(&review(ReviewVerdict::Approved))),
            None
        );
        assert_eq!(fix_trigger(None, None), None);
    }

    #[test]
    fn the_fix_prompt_quotes_the_end_of_the_failure_and_the_required_changes() {
        let prompt = fix_prompt(
            Some(&failed_checks()),
            Some(&review(ReviewVerdict::ChangesRequested)),
        );
        assert!(prompt.contains("- pytest (`python3 -m pytest`): exit code 1"));
        assert!(prompt.contains("FAILED test_calc.py::test_add"));
        assert!(prompt.contains("- handle the empty token"));
        assert!(
            prompt.len() < 2_600,
            "the output is clipped: {}",
            prompt.len()
        );
    }
}
