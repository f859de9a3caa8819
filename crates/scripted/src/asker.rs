//! Who is asking: the part of the orchestrator a request comes from ([`CallKind`]) and the
//! role whose built-in system prompt it carries ([`role_of_system`]), read from the request
//! the way a model sees it (schema name, system prompt, first user turn).

use braincode_brain::{REVIEW_OPENING, ROUTE_BRAIN_PROMPT, WORKER_HANDOFF_OPENING};
use braincode_protocol::Role;

/// Which part of the orchestrator is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// The routeBrain planner (structured output `router_decision`).
    Router,
    /// A support (or dispatched) worker: its user turn is a worker handoff.
    Support,
    /// The independent reviewer.
    Review,
    /// The primary agent (anything else).
    Primary,
}

/// The routing brain's prompt up to its first colon (a brain may append to it).
fn router_opening() -> &'static str {
    ROUTE_BRAIN_PROMPT
        .split_once(':')
        .map_or(ROUTE_BRAIN_PROMPT, |(opening, _)| opening)
}

impl CallKind {
    /// Who asks a request with structured-output `schema`, `system` prompt and first user
    /// turn `first_user`. Workers and reviewers on a tool turn carry no schema; their first
    /// user turn still says who they are.
    pub fn of(schema: Option<&str>, system: &str, first_user: &str) -> Self {
        match schema {
            Some("router_decision") => Self::Router,
            Some("review_result") => Self::Review,
            Some("worker_result") => Self::Support,
            _ if first_user.starts_with(REVIEW_OPENING) => Self::Review,
            _ if first_user.starts_with(WORKER_HANDOFF_OPENING) => Self::Support,
            _ if system.starts_with(router_opening()) => Self::Router,
            _ => Self::Primary,
        }
    }

    /// `router`, `support`, `review` or `primary`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Router => "router",
            Self::Support => "support",
            Self::Review => "review",
            Self::Primary => "primary",
        }
    }
}

/// The role whose built-in system prompt `system` is (`None` for a custom prompt); the
/// router is [`Role::RouteBrain`].
pub fn role_of_system(system: &str) -> Option<Role> {
    if system.starts_with(router_opening()) {
        return Some(Role::RouteBrain);
    }
    Role::ALL.into_iter().find(|role| {
        system.starts_with(&braincode_brain::role_prompt_opening(
            braincode_brain::role_profile(*role),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_come_from_schema_then_prompt_openings() {
        let handoff = format!("{WORKER_HANDOFF_OPENING}\n\n## Goal");
        assert_eq!(
            CallKind::of(Some("router_decision"), "", ""),
            CallKind::Router
        );
        assert_eq!(CallKind::of(None, "", &handoff), CallKind::Support);
        assert_eq!(CallKind::of(None, "", REVIEW_OPENING), CallKind::Review);
        assert_eq!(
            CallKind::of(None, ROUTE_BRAIN_PROMPT, "plan"),
            CallKind::Router
        );
        assert_eq!(
            CallKind::of(None, "You are terse.", "hi"),
            CallKind::Primary
        );
    }

    #[test]
    fn roles_come_from_the_built_in_prompts() {
        for role in Role::ALL {
            let prompt = braincode_brain::composed_role_prompt(braincode_brain::role_profile(role));
            if role != Role::RouteBrain {
                assert_eq!(role_of_system(&prompt), Some(role), "{role}");
            }
        }
        assert_eq!(role_of_system(ROUTE_BRAIN_PROMPT), Some(Role::RouteBrain));
        assert_eq!(role_of_system("You are terse."), None);
    }
}
