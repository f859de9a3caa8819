//! The team test (`/team-test <prompt>`): every routed role answers the same request on its
//! own — the diagnostic people use to compare roles (and the models behind them) on one task.
//!
//! The router is skipped. The first routed role is the primary, every other one a support
//! worker, except the review role, which answers the way it always does: as the review step,
//! on the primary's answer (so review is required). No todos and no dependencies: the support
//! workers run side by side, each with its own isolated handoff, and none waits on another.

use braincode_protocol::Role;

use crate::heuristic::{PlannedWorker, RoutingPlan};

/// Why a team-test plan is what it is (journaled as the routing reason).
pub const TEAM_TEST_REASON: &str =
    "team test: every routed role answers the request independently; the router is skipped";

/// The team-test plan: every role of [`Role::ROUTED`], each answering independently.
pub fn team_routing() -> RoutingPlan {
    let primary = Role::ROUTED[0];
    let workers = Role::ROUTED
        .iter()
        .map(|role| PlannedWorker {
            role: *role,
            goal: format!(
                "Respond to the request independently, as the {role} agent would: your own answer, \
                 not a contribution to someone else's."
            ),
            reason: "team test: every routed role answers".to_string(),
            model_id: None,
        })
        .collect();
    RoutingPlan {
        primary,
        workers,
        todos: Vec::new(),
        dependencies: Vec::new(),
        requires_review: true,
        clarification: Default::default(),
        confidence: None,
        reason: TEAM_TEST_REASON.to_string(),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_routed_role_answers_once_and_the_first_is_primary() {
        let plan = team_routing();
        assert_eq!(plan.primary, Role::ROUTED[0]);
        let roles: Vec<Role> = plan.workers.iter().map(|w| w.role).collect();
        assert_eq!(roles, Role::ROUTED.to_vec());
        assert!(plan.todos.is_empty() && plan.dependencies.is_empty());
        assert!(
            plan.requires_review,
            "the review role answers as the review step"
        );
    }
}
