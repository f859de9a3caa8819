//! The plan's review as the report shows it.

use braincode_protocol::{ExecutionPlanReview, PlanReview};

/// The report form of the `execution_plan_review` record.
pub(super) fn plan_review(review: &ExecutionPlanReview) -> PlanReview {
    PlanReview {
        status: review.status.clone(),
        approver: review.approver.clone(),
        required_review: review.required_review,
        proposed_side_effects: review.proposed_side_effects.clone(),
        validation_checks: review.validation_plan.checks.clone(),
        risk_triggers: review.risk_triggers.clone(),
        residual_pre_execution_risks: review.residual_pre_execution_risks.clone(),
    }
}
