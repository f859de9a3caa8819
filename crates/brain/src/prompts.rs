//! System prompts: one composed from the role profile, or the brain's custom prompt.

use braincode_protocol::Role;

use crate::roles::{RoleProfile, role_profile};
use crate::schema::BrainModel;

/// The context contract every worker prompt states.
pub const CONTEXT_CONTRACT: &str = "Context contract: you own exactly one isolated task \
context, described by the handoff you receive. There is no hidden transcript: use only what \
this prompt gives you, and report what is missing instead of assuming it.";

/// The directives every worker follows, whatever its role.
pub const CORE_DIRECTIVES: [&str; 4] = [
    "Investigate before asserting: read the code or the evidence first.",
    "Match the codebase's existing style and stay within the request; no scope creep.",
    "Verify your work by running the build or the tests when you can.",
    "Ask for confirmation before destructive or irreversible actions.",
];

/// The routeBrain planner's prompt. Short: the user turn ([`crate::build_router_prompt`])
/// carries the roles, budgets and rules, so a brain's own planner prompt loses none of them.
pub const ROUTE_BRAIN_PROMPT: &str = "You are Braincode's routing brain: you plan who handles \
a request; you never do the work, call tools or pick models.";

/// The first line of a worker's handoff prompt (the user turn of a support or dispatched
/// worker): what tells a worker's request apart from the primary's.
pub const WORKER_HANDOFF_OPENING: &str = "Run this isolated worker handoff.";

/// The first sentence of the reviewer's prompt (its user turn).
pub const REVIEW_OPENING: &str = "Review this result independently.";

/// The label line a routed role's built-in prompt begins with.
pub fn role_prompt_opening(profile: &RoleProfile) -> String {
    format!("You are Braincode's {} agent.", profile.label)
}

/// The status companion's prompt.
pub const PET_PROMPT: &str = "You are Braincode's status companion. Describe what the agents \
are doing right now.\n\
Reply with strict JSON only: {\"status\": \"...\", \"lines\": [\"...\", \"...\"]}.\n\
- status: at most 24 characters, present continuous (\"reading the router\").\n\
- lines: two lines of at most 24 characters: one fact, then one dry aside.\n\
- No emoji, no markdown.\n\
- When nothing is happening: {\"status\": \"idle\", \"lines\": []}.\n\
- Never invent activity.";

fn bullets(out: &mut String, heading: &str, items: &[&str]) {
    if items.is_empty() {
        return;
    }
    out.push_str(heading);
    out.push('\n');
    for item in items {
        out.push_str("- ");
        out.push_str(item);
        out.push('\n');
    }
}

/// The built-in prompt of a routed role, composed in a fixed order: label line, identity,
/// owns, capabilities, hard boundaries, output contract, context contract, core operating
/// directives, role rules.
pub fn composed_role_prompt(profile: &RoleProfile) -> String {
    let mut out = role_prompt_opening(profile);
    out.push('\n');
    out.push_str(profile.identity);
    out.push('\n');
    out.push_str("You own: ");
    out.push_str(profile.owns);
    out.push_str(".\n");
    bullets(&mut out, "Capabilities:", profile.capabilities);
    bullets(&mut out, "Hard boundaries:", profile.boundaries);
    out.push_str("Output contract: ");
    out.push_str(profile.output_contract);
    out.push('\n');
    out.push_str(CONTEXT_CONTRACT);
    out.push('\n');
    bullets(&mut out, "Core operating directives:", &CORE_DIRECTIVES);
    bullets(&mut out, "Role rules:", profile.extra_rules);
    out.trim_end().to_string()
}

/// The system prompt `role` runs with under `brain`.
///
/// A non-empty (after trimming) `systemPrompt` in the role's policy replaces the built-in
/// prompt; for routeBrain the planner's policy is consulted first. Otherwise routeBrain and
/// pet get their bespoke prompts and every routed role the composed one.
pub fn role_system_prompt(role: Role, brain: &BrainModel) -> String {
    let custom = match role {
        Role::RouteBrain => brain
            .planner
            .custom_system_prompt()
            .or_else(|| brain.policy(role).custom_system_prompt()),
        _ => brain.policy(role).custom_system_prompt(),
    };
    match custom {
        Some(custom) => custom.to_string(),
        None => default_role_prompt(role),
    }
}

/// The built-in system prompt of `role`: what it runs with when no `systemPrompt` replaces
/// it (the panel's reset and its default/custom badge compare against it).
pub fn default_role_prompt(role: Role) -> String {
    match role {
        Role::RouteBrain => ROUTE_BRAIN_PROMPT.to_string(),
        Role::Pet => PET_PROMPT.to_string(),
        _ => composed_role_prompt(role_profile(role)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::defaults::{DEFAULT_BRAIN_ID, default_brains};
    use crate::inherit::select_brain;

    fn brain() -> BrainModel {
        select_brain(&default_brains(), DEFAULT_BRAIN_ID).unwrap()
    }

    #[test]
    fn composed_prompt_follows_the_documented_order() {
        let prompt = role_system_prompt(Role::Frontend, &brain());
        let markers = [
            "You are Braincode's Frontend agent.",
            "You build and check",
            "You own: UI components",
            "Capabilities:",
            "Hard boundaries:",
            "Output contract:",
            "Context contract:",
            "Core operating directives:",
            "Role rules:",
        ];
        let mut last = 0;
        for marker in markers {
            let at = prompt
                .find(marker)
                .unwrap_or_else(|| panic!("{marker} missing"));
            assert!(at >= last, "{marker} out of order");
            last = at;
        }
        assert!(prompt.contains("There is no hidden transcript"));
    }

    #[test]
    fn every_routed_prompt_is_compact() {
        let brain = brain();
        for role in Role::ALL {
            let prompt = role_system_prompt(role, &brain);
            assert!(prompt.len() < 2_000, "{role}: {} bytes", prompt.len());
            if role.is_routed() {
                assert!(prompt.contains("Core operating directives:"), "{role}");
            }
        }
        assert_eq!(
            role_system_prompt(Role::RouteBrain, &brain),
            ROUTE_BRAIN_PROMPT
        );
        assert_eq!(role_system_prompt(Role::Pet, &brain), PET_PROMPT);
    }

    #[test]
    fn custom_prompts_replace_built_in_ones() {
        let mut brain = brain();
        brain.roles.backend.system_prompt = Some("  You only write Go.  ".into());
        assert_eq!(
            role_system_prompt(Role::Backend, &brain),
            "You only write Go."
        );
        brain.roles.backend.system_prompt = Some("   ".into());
        assert!(
            role_system_prompt(Role::Backend, &brain).starts_with("You are Braincode's Backend")
        );
        brain.planner.system_prompt = Some("Plan tersely.".into());
        assert_eq!(
            role_system_prompt(Role::RouteBrain, &brain),
            "Plan tersely."
        );
    }
}
