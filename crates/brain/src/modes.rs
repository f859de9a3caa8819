//! Orchestration modes and the routing limits they imply.

use braincode_protocol::Mode;
use serde::{Deserialize, Serialize};

use crate::schema::Routing;

/// How broadly a mode decomposes work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanStrategy {
    /// The smallest safe set of roles.
    Focused,
    /// Proactive decomposition into parallel specialist work.
    Expansive,
}

/// The budgets and approval rule of one mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModePolicy {
    /// The mode.
    pub mode: Mode,
    /// Most todos a plan may have.
    pub max_todos: usize,
    /// Floor on parallel support agents.
    pub min_parallel_agents: usize,
    /// Floor on the worker budget.
    pub min_worker_agents: usize,
    /// Fix-loop passes after review or checks ask for changes.
    pub max_fix_iterations: u32,
    /// Specialists the primary may dispatch during its run.
    pub max_dynamic_dispatches: u32,
    /// Planning breadth.
    pub strategy: PlanStrategy,
    /// Whether risky tool calls need explicit approval (radical auto-approves; permission
    /// `deny` rules still apply).
    pub requires_approval: bool,
}

/// The policy of `mode`.
pub const fn mode_policy(mode: Mode) -> ModePolicy {
    match mode {
        Mode::Auto => ModePolicy {
            mode,
            max_todos: 6,
            min_parallel_agents: 1,
            min_worker_agents: 1,
            max_fix_iterations: 1,
            max_dynamic_dispatches: 2,
            strategy: PlanStrategy::Focused,
            requires_approval: true,
        },
        Mode::Radical => ModePolicy {
            mode,
            max_todos: 8,
            min_parallel_agents: 4,
            min_worker_agents: 4,
            max_fix_iterations: 2,
            max_dynamic_dispatches: 4,
            strategy: PlanStrategy::Expansive,
            requires_approval: false,
        },
    }
}

/// The effective budgets of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingLimits {
    /// Support workers that may run at once.
    pub max_parallel_agents: usize,
    /// Most workers a plan may have, the primary included (the review worker appended by
    /// the runtime policy is not counted).
    pub max_worker_agents: usize,
    /// Most todos a plan may have.
    pub max_todos: usize,
}

/// The limits of `routing` under `mode`.
///
/// The configured count is `routing.maxParallelAgents` when it is at least 1, otherwise 1;
/// then parallel agents = max(configured, mode floor), workers = max(configured, mode
/// floor), todos = the mode's value. The default brain (2) gives 2/2/6 in auto and 4/4/8 in
/// radical.
pub fn routing_limits(routing: &Routing, mode: Mode) -> RoutingLimits {
    let policy = mode_policy(mode);
    let configured = usize::try_from(routing.max_parallel_agents.max(1)).unwrap_or(usize::MAX);
    RoutingLimits {
        max_parallel_agents: configured.max(policy.min_parallel_agents),
        max_worker_agents: configured.max(policy.min_worker_agents),
        max_todos: policy.max_todos,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_policies_match_the_spec() {
        let auto = mode_policy(Mode::Auto);
        assert_eq!(
            (
                auto.max_todos,
                auto.min_parallel_agents,
                auto.min_worker_agents
            ),
            (6, 1, 1)
        );
        assert_eq!(
            (auto.max_fix_iterations, auto.max_dynamic_dispatches),
            (1, 2)
        );
        assert_eq!(auto.strategy, PlanStrategy::Focused);
        assert!(auto.requires_approval);
        let radical = mode_policy(Mode::Radical);
        assert_eq!(
            (
                radical.max_todos,
                radical.min_parallel_agents,
                radical.min_worker_agents
            ),
            (8, 4, 4)
        );
        assert_eq!(
            (radical.max_fix_iterations, radical.max_dynamic_dispatches),
            (2, 4)
        );
        assert_eq!(radical.strategy, PlanStrategy::Expansive);
        assert!(!radical.requires_approval);
    }

    #[test]
    fn limits_follow_the_configured_count_and_mode_floors() {
        let mut routing = Routing::default();
        let limits = |r: &Routing, m| {
            let l = routing_limits(r, m);
            (l.max_parallel_agents, l.max_worker_agents, l.max_todos)
        };
        assert_eq!(limits(&routing, Mode::Auto), (2, 2, 6));
        assert_eq!(limits(&routing, Mode::Radical), (4, 4, 8));
        routing.max_parallel_agents = 0;
        assert_eq!(limits(&routing, Mode::Auto), (1, 1, 6));
        routing.max_parallel_agents = 7;
        assert_eq!(limits(&routing, Mode::Auto), (7, 7, 6));
        assert_eq!(limits(&routing, Mode::Radical), (7, 7, 8));
    }
}
