//! The runtime plan: the worked example end to end, worker order and phases, context ids,
//! model chains, review appending, orphan edges, the fast path and JSON output.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{counter, default_brain, uncapped_brain};
use braincode_brain::{
    FAST_PATH_REASON, PlanInput, RoutingPlan, RuntimePlan, build_runtime_plan, heuristic_route,
    heuristic_route_uncapped, is_fast_path_eligible, normalize_router_decision, routing_limits,
};
use braincode_protocol::{ContextId, Mode, Role, RoutingSource, ThinkingLevel, WorkerPhase};
use serde_json::json;

fn plan_for(brain: &braincode_brain::BrainModel, routing: RoutingPlan, goal: &str) -> RuntimePlan {
    let mut ids = counter();
    build_runtime_plan(PlanInput {
        brain_id: "brain",
        brain,
        mode: Mode::Auto,
        goal,
        routing,
        source: RoutingSource::Heuristic,
        fallback_reason: Some("router brain unavailable or failed".into()),
        new_id: &mut ids,
    })
}

const WORKED_EXAMPLE: &str = "implement a secure frontend login flow";

#[test]
fn worked_example_end_to_end() {
    let brain = uncapped_brain();
    let plan = plan_for(
        &brain,
        heuristic_route(WORKED_EXAMPLE, &brain, Mode::Auto),
        WORKED_EXAMPLE,
    );
    let workers: Vec<(Role, WorkerPhase)> =
        plan.workers.iter().map(|w| (w.role, w.phase)).collect();
    assert_eq!(
        workers,
        vec![
            (Role::Librarian, WorkerPhase::Support),
            (Role::Backend, WorkerPhase::Support),
            (Role::Security, WorkerPhase::Support),
            (Role::Frontend, WorkerPhase::Primary),
            (Role::Review, WorkerPhase::Review),
        ]
    );
    let todos: Vec<&str> = plan.todos.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        todos,
        vec![
            "map-context",
            "assess-security",
            "build-backend",
            "build-frontend",
            "todo-05-review"
        ]
    );
    assert!(plan.requires_review);
    assert_eq!(plan.primary, Role::Frontend);
    let edges: Vec<(&str, &str)> = plan
        .dependencies
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert!(
        edges.contains(&("build-frontend", "todo-05-review")),
        "{edges:?}"
    );
    assert!(!edges.iter().any(|(from, _)| *from == "todo-05-review"));

    // Fresh ids: the Brain context first, then one per worker in execution order.
    assert_eq!(plan.brain_context.id, ContextId::from("id-0".to_string()));
    let ids: Vec<&str> = plan.workers.iter().map(|w| w.context_id.as_str()).collect();
    assert_eq!(ids, vec!["id-1", "id-2", "id-3", "id-4", "id-5"]);
    assert_eq!(
        plan.brain_context.child_context_ids,
        plan.workers
            .iter()
            .map(|w| w.context_id.clone())
            .collect::<Vec<_>>()
    );
    assert_eq!(plan.brain_context.goal, WORKED_EXAMPLE);

    let frontend = plan.primary_worker().unwrap();
    assert_eq!(frontend.todo_ids, vec!["build-frontend"]);
    assert_eq!(frontend.model_chain, vec!["local/smollm2"]);
    assert_eq!(frontend.thinking_level, ThinkingLevel::Off);
    assert_eq!(plan.limits, routing_limits(&brain.routing, Mode::Auto));
    assert_eq!(plan.source, RoutingSource::Heuristic);
    assert_eq!(
        plan.fallback_reason.as_deref(),
        Some("router brain unavailable or failed")
    );
}

#[test]
fn default_auto_plan_appends_review_to_the_capped_heuristic() {
    let brain = default_brain();
    let plan = plan_for(
        &brain,
        heuristic_route(WORKED_EXAMPLE, &brain, Mode::Auto),
        WORKED_EXAMPLE,
    );
    let roles: Vec<Role> = plan.workers.iter().map(|w| w.role).collect();
    assert_eq!(roles, vec![Role::Security, Role::Frontend, Role::Review]);
    assert_eq!(plan.todos.last().unwrap().id, "todo-03-review");
    assert!(plan.warnings.iter().any(|w| w.contains("dropped support")));
}

#[test]
fn review_primary_gets_no_extra_reviewer() {
    let brain = uncapped_brain();
    let mut routing = heuristic_route_uncapped("review the api change", &brain);
    routing.primary = Role::Review;
    routing.workers.retain(|w| w.role == Role::Review);
    routing.todos.clear();
    routing.requires_review = true;
    let plan = plan_for(&brain, routing, "review");
    assert_eq!(plan.workers.len(), 1);
    assert_eq!(plan.workers[0].phase, WorkerPhase::Primary);
}

#[test]
fn pinned_models_run_alone_and_chains_follow_the_policy() {
    let mut brain = uncapped_brain();
    brain.roles.backend.fallback_model_ids = vec!["openai/gpt-5.5".into(), "local/smollm2".into()];
    brain.roles.security.thinking_level = ThinkingLevel::High;
    let heuristic = heuristic_route("fix the secure api", &brain, Mode::Auto);
    let raw = json!({"role": "backend", "workers": [
        {"role": "backend", "modelId": "openai/gpt-5.5"}, {"role": "security"}]});
    let limits = routing_limits(&brain.routing, Mode::Auto);
    let routing = normalize_router_decision(&raw, &heuristic, &limits, &brain);
    let plan = plan_for(&brain, routing, "fix the secure api");
    let backend = plan
        .workers
        .iter()
        .find(|w| w.role == Role::Backend)
        .unwrap();
    assert_eq!(backend.model_chain, vec!["openai/gpt-5.5"]);
    let security = plan
        .workers
        .iter()
        .find(|w| w.role == Role::Security)
        .unwrap();
    assert_eq!(security.model_chain, vec!["local/smollm2"]);
    assert_eq!(security.thinking_level, ThinkingLevel::High);
    // The router forgot review, but the heuristic requires it: it is appended.
    assert_eq!(plan.workers.last().unwrap().role, Role::Review);
}

#[test]
fn edges_from_todos_without_a_worker_are_dropped_not_deadlocked() {
    let brain = uncapped_brain();
    let mut routing = heuristic_route_uncapped("implement a secure frontend login flow", &brain);
    // Remove the security worker but keep its todo and edges, as a bad plan could.
    routing.workers.retain(|w| w.role != Role::Security);
    let plan = plan_for(&brain, routing, "x");
    assert!(plan.todos.iter().any(|t| t.id == "assess-security"));
    assert!(
        !plan
            .dependencies
            .iter()
            .any(|e| e.from == "assess-security"),
        "{:?}",
        plan.dependencies
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("assess-security") && w.contains("no worker")),
        "{:?}",
        plan.warnings
    );
}

#[test]
fn handoffs_are_parented_to_the_brain_context() {
    let brain = uncapped_brain();
    let plan = plan_for(
        &brain,
        heuristic_route(WORKED_EXAMPLE, &brain, Mode::Auto),
        WORKED_EXAMPLE,
    );
    let review = plan.workers.last().unwrap();
    let handoff = plan.handoff_for(review, Vec::new());
    assert_eq!(handoff.task.parent_id, plan.brain_context.id);
    assert_eq!(handoff.task.id, review.context_id);
    assert_eq!(handoff.task.agent_role, Role::Review);
    assert!(handoff.expected_result.contains("decision"));
}

#[test]
fn runtime_plan_serializes_as_camel_case_json() {
    let brain = uncapped_brain();
    let plan = plan_for(
        &brain,
        heuristic_route(WORKED_EXAMPLE, &brain, Mode::Auto),
        WORKED_EXAMPLE,
    );
    let value = serde_json::to_value(&plan).unwrap();
    for key in [
        "brainId",
        "brainName",
        "mode",
        "limits",
        "source",
        "reason",
        "fallbackReason",
        "primary",
        "workers",
        "todos",
        "dependencies",
        "requiresReview",
        "clarification",
        "brainContext",
        "warnings",
    ] {
        assert!(value.get(key).is_some(), "{key} missing");
    }
    assert_eq!(value["source"], "heuristic");
    assert_eq!(value["limits"]["maxWorkerAgents"], 16);
    assert_eq!(value["workers"][0]["contextId"], "id-1");
    assert_eq!(value["workers"][0]["modelChain"], json!(["local/smollm2"]));
    assert_eq!(value["brainContext"]["layer"], "brain");
    let back: RuntimePlan = serde_json::from_value(value).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn fast_path_only_for_small_talk() {
    let brain = default_brain();
    let route = |p: &str| heuristic_route(p, &brain, Mode::Auto);
    for prompt in [
        "hello there",
        "what is a monad?",
        "thanks, that helped",
        "你好",
    ] {
        assert!(is_fast_path_eligible(prompt, &route(prompt), 0), "{prompt}");
    }
    let chat = route("hello there");
    assert!(!is_fast_path_eligible("hello there", &chat, 1), "images");
    assert!(!is_fast_path_eligible("   ", &chat, 0), "empty");
    let long = "hello ".repeat(50);
    assert!(
        !is_fast_path_eligible(&long, &route(&long), 0),
        "over 240 chars"
    );
    for prompt in [
        "what does src/main do",
        "what does `parse` return",
        "explain lib.rs",
        "what is max_tokens",
        "Conversation so far: hi\nCurrent request: hello",
        "fix it",
        "add a button",
    ] {
        assert!(
            !is_fast_path_eligible(prompt, &route(prompt), 0),
            "{prompt}"
        );
    }
    assert!(!FAST_PATH_REASON.is_empty());
}
