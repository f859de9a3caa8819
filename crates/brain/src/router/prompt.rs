//! The routeBrain prompt: compact enough for an 8k-context local model.

use std::fmt::Write as _;

use braincode_protocol::{Mode, ModelDefinition, Role};

use crate::modes::RoutingLimits;
use crate::roles::role_profile;
use crate::schema::BrainModel;

/// Everything the router prompt is built from.
#[derive(Debug, Clone, Copy)]
pub struct RouterPromptInput<'a> {
    /// The (expanded, continuity-augmented) user prompt.
    pub prompt: &'a str,
    /// The orchestration mode.
    pub mode: Mode,
    /// The budgets the plan must respect.
    pub limits: RoutingLimits,
    /// Images attached to the request.
    pub image_count: usize,
    /// The selected brain (its chains are listed so the router knows what each role runs on).
    pub brain: &'a BrainModel,
    /// The model catalogue.
    pub models: &'a [ModelDefinition],
}

/// The rules every plan follows (the schema carries the shape, the role names and the
/// bounds; these say what the shape cannot).
const RULES: [&str; 4] = [
    "Todos in execution order, each owned by a planned role.",
    "Dependencies only where needed; support todos never wait for primary or review todos.",
    "rush only as the primary.",
    "Clarify (one question, 2-3 exclusive options, user's language) only when handing off would be unsafe.",
];

fn describe_model(id: &str, models: &[ModelDefinition]) -> String {
    match models.iter().find(|m| m.id == id) {
        None => format!("{id}: not configured"),
        Some(m) => format!(
            "{id}: {}, {}, {}k context",
            if m.supports_vision {
                "vision"
            } else {
                "text-only"
            },
            if m.supports_tools {
                "tools"
            } else {
                "no tools"
            },
            m.context_window / 1000
        ),
    }
}

fn mode_directive(input: &RouterPromptInput<'_>) -> String {
    let limits = input.limits;
    match input.mode {
        Mode::Auto => format!(
            "Mode auto: at most {} workers (primary included), {} todos; the smallest safe set \
             of roles, rush for tiny chores.",
            limits.max_worker_agents, limits.max_todos
        ),
        Mode::Radical => format!(
            "Mode radical: at most {} workers (primary included), {} in parallel, {} todos. Decompose proactively: librarian early for unfamiliar \
             or large work, oracle early when the request is ambiguous, qa for implementation \
             work, every specialist that affects correctness; rush only for genuinely tiny \
             chores; prefer todos that can run in parallel.",
            limits.max_worker_agents, limits.max_parallel_agents, limits.max_todos
        ),
    }
}

/// What images change: roles that must look at them need a vision model, so the models and
/// role chains are listed. A text-only request needs neither (models are the brain's to pick).
fn image_directive(input: &RouterPromptInput<'_>) -> String {
    format!(
        "Input: text plus {} image(s). Roles that must look at the images need a vision model; \
         imageMaker makes new images and never describes them; route questions about an image \
         by their domain.\n{}",
        input.image_count,
        model_directive(input)
    )
}

fn model_directive(input: &RouterPromptInput<'_>) -> String {
    let mut out = String::from("Models are fixed by the brain; never choose or change them.\n");
    // Group roles that share a chain, so a uniform brain costs one line.
    let mut groups: Vec<(Vec<String>, Vec<&str>)> = Vec::new();
    let mut model_ids: Vec<String> = Vec::new();
    for role in Role::ROUTED {
        let chain = input.brain.policy(role).chain();
        for id in &chain {
            if !model_ids.contains(id) {
                model_ids.push(id.clone());
            }
        }
        match groups.iter_mut().find(|(c, _)| *c == chain) {
            Some((_, roles)) => roles.push(role.as_str()),
            None => groups.push((chain, vec![role.as_str()])),
        }
    }
    for id in &model_ids {
        let _ = writeln!(out, "- {}", describe_model(id, input.models));
    }
    out.push_str("Role chains:\n");
    for (chain, roles) in &groups {
        let _ = writeln!(out, "- {}: {}", roles.join(", "), chain.join(" -> "));
    }
    if input.image_count > 0 {
        let vision: Vec<&str> = Role::ROUTED
            .iter()
            .filter(|role| {
                input.brain.policy(**role).chain().iter().any(|id| {
                    input
                        .models
                        .iter()
                        .any(|m| &m.id == id && m.supports_vision)
                })
            })
            .map(|role| role.as_str())
            .collect();
        let _ = writeln!(
            out,
            "Roles that can see images: {}",
            if vision.is_empty() {
                "none".to_string()
            } else {
                vision.join(", ")
            }
        );
    }
    out.trim_end().to_string()
}

/// Builds the one user turn sent to the routeBrain planner (whose system prompt is
/// [`crate::ROUTE_BRAIN_PROMPT`] unless the brain overrides it).
///
/// Sections, in order: the task, the mode and its budgets, with images the input and the
/// models and role chains, the routed roles with when to pick each, the rules, and the user
/// prompt. The reply's shape, role names and bounds are the reply schema's
/// ([`crate::router_decision_schema`]), sent with the request, so they are not repeated here.
pub fn build_router_prompt(input: &RouterPromptInput<'_>) -> String {
    let mut out = String::with_capacity(1_024 + input.prompt.len());
    out.push_str(
        "Pick the primary role and only the support workers that materially help, each with \
         a self-contained goal.\n",
    );
    out.push_str(&mode_directive(input));
    out.push('\n');
    if input.image_count > 0 {
        out.push_str(&image_directive(input));
        out.push('\n');
    }
    out.push_str("Roles (no generic coder: each domain to its specialist):\n");
    for role in Role::ROUTED {
        let _ = writeln!(out, "- {role}: {}", role_profile(role).routes);
    }
    out.push_str("Rules:\n");
    for rule in RULES {
        let _ = writeln!(out, "- {rule}");
    }
    out.push_str("Request:\n");
    out.push_str(input.prompt);
    out
}
