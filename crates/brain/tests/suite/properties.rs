//! Property tests: whatever the router or the user sends, plans stay within their limits
//! and keep their structural promises.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

use crate::support::default_brain;
use braincode_brain::{
    RoutingLimits, RoutingPlan, heuristic_route, normalize_router_decision, normalize_todo_id,
    routing_limits,
};
use braincode_protocol::{Mode, Role};
use proptest::prelude::*;
use serde_json::{Value, json};

fn role_name() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => prop::sample::select(Role::ALL.to_vec()).prop_map(|r| json!(r.as_str())),
        1 => Just(json!("coder")),
        1 => Just(json!("FRONTEND")),
        1 => Just(Value::Null),
        1 => Just(json!(3)),
    ]
}

fn short_text() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => "[a-zA-Z _-]{0,16}".prop_map(Value::from),
        1 => "[改一下]{1,4}".prop_map(Value::from),
        1 => Just(Value::Null),
    ]
}

fn decision() -> impl Strategy<Value = Value> {
    let worker = (role_name(), short_text(), short_text(), prop::option::of(prop::sample::select(vec![
        "local/smollm2",
        "openai/gpt-5.5",
        "nope",
    ])))
        .prop_map(|(role, goal, reason, model)| json!({"role": role, "goal": goal, "reason": reason, "modelId": model}));
    let todo = (short_text(), short_text(), role_name())
        .prop_map(|(id, title, role)| json!({"id": id, "title": title, "role": role}));
    let edge = (short_text(), short_text()).prop_map(|(from, to)| json!({"from": from, "to": to}));
    (
        role_name(),
        prop::collection::vec(worker, 0..8),
        prop::collection::vec(todo, 0..12),
        prop::collection::vec(edge, 0..10),
        prop::option::of(-2.0f64..3.0),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(role, workers, todos, dependencies, confidence, review)| {
            json!({"role": role, "workers": workers, "todos": todos, "dependencies": dependencies,
                   "confidence": confidence, "requiresReview": review})
        })
}

fn check_plan(plan: &RoutingPlan, limits: &RoutingLimits) -> Result<(), TestCaseError> {
    prop_assert!(plan.primary.is_routed());
    prop_assert!(
        plan.workers.iter().any(|w| w.role == plan.primary),
        "primary present"
    );
    prop_assert!(plan.workers.len() <= limits.max_worker_agents.max(1));
    prop_assert!(
        plan.todos.len()
            <= limits
                .max_todos
                .max(1)
                .max(plan.todos.iter().filter(|t| t.role == plan.primary).count())
    );
    let roles: HashSet<Role> = plan.workers.iter().map(|w| w.role).collect();
    prop_assert_eq!(roles.len(), plan.workers.len(), "one worker per role");
    prop_assert!(plan.workers.iter().all(|w| w.role.is_routed()));
    if plan.primary != Role::Rush {
        prop_assert!(!roles.contains(&Role::Rush));
    }
    let ids: HashSet<&str> = plan.todos.iter().map(|t| t.id.as_str()).collect();
    prop_assert_eq!(ids.len(), plan.todos.len(), "unique todo ids");
    for todo in &plan.todos {
        prop_assert!(roles.contains(&todo.role), "todo {} has a worker", todo.id);
        prop_assert!(
            todo.id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        );
    }
    for edge in &plan.dependencies {
        prop_assert!(ids.contains(edge.from.as_str()) && ids.contains(edge.to.as_str()));
        prop_assert_ne!(&edge.from, &edge.to);
    }
    if let Some(c) = plan.confidence {
        prop_assert!((0.0..=1.0).contains(&c));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn router_normalization_keeps_every_promise(raw in decision(), radical in any::<bool>()) {
        let brain = default_brain();
        let mode = if radical { Mode::Radical } else { Mode::Auto };
        let limits = routing_limits(&brain.routing, mode);
        let heuristic = heuristic_route("fix the api and the login page", &brain, mode);
        let plan = normalize_router_decision(&raw, &heuristic, &limits, &brain);
        check_plan(&plan, &limits)?;
        prop_assert!(plan.requires_review || !heuristic.requires_review, "review never removed");
        for worker in &plan.workers {
            if let Some(model) = &worker.model_id {
                prop_assert!(brain.policy(worker.role).chain().contains(model));
            }
        }
    }

    #[test]
    fn heuristic_plans_respect_the_mode(prompt in "[a-z改前端后端 ]{0,80}", radical in any::<bool>(), agents in 0u32..6) {
        let mut brain = default_brain();
        brain.routing.max_parallel_agents = agents;
        let mode = if radical { Mode::Radical } else { Mode::Auto };
        let limits = routing_limits(&brain.routing, mode);
        let plan = heuristic_route(&prompt, &brain, mode);
        check_plan(&plan, &limits)?;
    }

    #[test]
    fn todo_ids_are_always_valid(raw in "\\PC{0,80}", index in 0usize..120) {
        let id = normalize_todo_id(&raw, index, Role::ImageMaker);
        prop_assert!(!id.is_empty());
        prop_assert!(id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'), "{}", id);
        prop_assert!(!id.starts_with('-') && !id.ends_with('-'));
        prop_assert_eq!(normalize_todo_id(&id, index, Role::ImageMaker), id.clone(), "idempotent");
    }
}
