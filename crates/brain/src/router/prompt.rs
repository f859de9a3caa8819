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

/// The reply shape, verbatim.
const OUTPUT_SHAPE: &str = r#"{"role":"<role>","workers":[{"role":"<role>","goal":"...","reason":"..."}],"todos":[{"id":"short-stable-id","title":"...","role":"<role>","reason":"..."}],"dependencies":[{"from":"todo-id","to":"todo-id","reason":"..."}],"clarification":{"required":false,"reason":"","question":"","missing":[],"options":[{"id":"","label":"","description":""}]},"confidence":0.0,"reason":"..."}"#;

const PRINCIPLES: [&str; 7] = [
    "Ask for clarification (one question, 2-3 mutually exclusive options) only when handing off would be unsafe.",
    "There is no generic coding role: send each domain to its specialist.",
    "librarian maps code; imageMaker only makes new images; oracle only for hard reasoning.",
    "review judges finished work; qa designs and runs verification.",
    "rush only answers without tools; git, CI and package work go to devops.",
    "summarize only when a summary is asked for.",
    "Results flow through the Brain along dependencies; support todos never wait for primary or review todos.",
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
    let budget = format!(
        "Mode: {}. Budget: at most {} workers (primary included), {} support workers in parallel, {} todos.",
        input.mode, limits.max_worker_agents, limits.max_parallel_agents, limits.max_todos
    );
    let style = match input.mode {
        Mode::Auto => {
            "Keep the plan focused: the smallest safe set of roles; rush for tiny chores."
        }
        Mode::Radical => {
            "Decompose proactively: librarian early for unfamiliar or large work, oracle early \
             when the request is ambiguous, qa for implementation work, every specialist that \
             affects correctness; rush only for genuinely tiny chores; prefer todos that can run \
             in parallel."
        }
    };
    format!("{budget}\n{style}")
}

fn modality_directive(image_count: usize) -> String {
    if image_count == 0 {
        "Input: text only.".to_string()
    } else {
        format!(
            "Input: text plus {image_count} image(s). Roles that must look at the images need a \
             vision model; imageMaker makes new images and never describes them; route questions \
             about an image by their domain."
        )
    }
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
/// Sections, in order: the task, the mode and its budgets, the input modality, the models
/// and role chains, the routed roles, routing principles, the exact output shape, output
/// constraints, and the user prompt.
pub fn build_router_prompt(input: &RouterPromptInput<'_>) -> String {
    let limits = input.limits;
    let mut out = String::with_capacity(4_096 + input.prompt.len());
    out.push_str(
        "Route this request: choose the primary role, the support workers that materially \
         help, and a short todo list.\n\n",
    );
    out.push_str(&mode_directive(input));
    out.push_str("\n\n");
    out.push_str(&modality_directive(input.image_count));
    out.push_str("\n\n");
    out.push_str(&model_directive(input));
    out.push_str("\n\nRouted roles:\n");
    for role in Role::ROUTED {
        let profile = role_profile(role);
        let _ = writeln!(out, "- {role} ({}): {}", profile.label, profile.owns);
    }
    out.push_str("\nPrinciples:\n");
    for principle in PRINCIPLES {
        let _ = writeln!(out, "- {principle}");
    }
    out.push_str("\nReply with exactly this JSON shape and nothing else:\n");
    out.push_str(OUTPUT_SHAPE);
    let roles: Vec<&str> = Role::ROUTED.iter().map(|r| r.as_str()).collect();
    let _ = write!(
        out,
        "\n<role> is one of: {}.\n\nConstraints:\n\
         - Exactly one primary role; add workers only when they materially help; no rush worker when a specialist is primary.\n\
         - At most {} workers; never routeBrain or pet; no modelId fields.\n\
         - 1 to {} todos in execution order, each owned by a chosen role, with short lowercase ids.\n\
         - Dependencies only where needed; never from a primary todo to a support todo.\n\
         - Write the clarification in the user's language, with at most 3 options.\n\
         - confidence is a number from 0 to 1.\n\n",
        roles.join(", "),
        limits.max_worker_agents,
        limits.max_todos,
    );
    out.push_str("User prompt:\n");
    out.push_str(input.prompt);
    out
}
