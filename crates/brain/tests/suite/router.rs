//! The routeBrain router: prompt size and sections, the bounded decision schema, reply
//! parsing, and every normalization rule of the decision.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{self, default_brain, uncapped_brain};
use braincode_brain::{
    BrainModel, DEFAULT_ROUTER_REASON, ROUTER_MAX_DEPENDENCIES, RouterParseError,
    RouterPromptInput, RoutingLimits, RoutingPlan, build_router_prompt, default_models,
    heuristic_route, normalize_router_decision, parse_router_reply, router_decision_schema,
    routing_limits,
};
use braincode_protocol::{Mode, Role};
use serde_json::{Value, json};

fn limits(brain: &BrainModel) -> RoutingLimits {
    routing_limits(&brain.routing, Mode::Auto)
}

fn heuristic(prompt: &str, brain: &BrainModel) -> RoutingPlan {
    heuristic_route(prompt, brain, Mode::Auto)
}

fn normalize(raw: Value, prompt: &str, brain: &BrainModel) -> RoutingPlan {
    normalize_router_decision(&raw, &heuristic(prompt, brain), &limits(brain), brain)
}

fn roles(plan: &RoutingPlan) -> Vec<Role> {
    plan.workers.iter().map(|w| w.role).collect()
}

#[test]
fn prompt_is_compact_and_has_every_section() {
    let brain = default_brain();
    let models = default_models();
    let input = RouterPromptInput {
        prompt: "add a dark mode toggle to the settings page",
        mode: Mode::Auto,
        limits: limits(&brain),
        image_count: 0,
        brain: &brain,
        models: &models,
    };
    let prompt = build_router_prompt(&input);
    // chars / 4 is the runtime's token estimate; stay well under 400 tokens.
    assert!(
        prompt.chars().count() / 4 < 400,
        "{} chars",
        prompt.chars().count()
    );
    let sections = [
        "Pick the primary role",
        "Mode auto: at most 2 workers (primary included), 6 todos",
        "Roles (no generic coder",
        "- frontend: ",
        "- rush: ",
        "Rules:",
        "Request:\nadd a dark mode toggle to the settings page",
    ];
    let mut last = 0;
    for section in sections {
        let at = prompt
            .find(section)
            .unwrap_or_else(|| panic!("{section:?} missing:\n{prompt}"));
        assert!(at >= last, "{section:?} out of order");
        last = at;
    }
    // What the reply schema carries (shape, role names) and what only images need (models)
    // is not repeated.
    for absent in [
        "\"clarification\"",
        "<role> is one of",
        "local/smollm2",
        "Input:",
    ] {
        assert!(!prompt.contains(absent), "{absent:?} in:\n{prompt}");
    }
    assert!(!prompt.contains("- routeBrain: ") && !prompt.contains("- pet: "));
}

#[test]
fn prompt_reflects_mode_and_images() {
    let brain = support::default_brain();
    let models = default_models();
    let mut anthropic = brain.clone();
    anthropic.roles.frontend.model_id = "anthropic/claude-sonnet-4-6".into();
    let input = RouterPromptInput {
        prompt: "what is wrong in this screenshot",
        mode: Mode::Radical,
        limits: routing_limits(&brain.routing, Mode::Radical),
        image_count: 2,
        brain: &anthropic,
        models: &models,
    };
    let prompt = build_router_prompt(&input);
    assert!(prompt.contains("Mode radical: at most 4 workers"));
    assert!(prompt.contains("Decompose proactively"));
    assert!(prompt.contains("text plus 2 image(s)"));
    assert!(
        prompt.contains("Roles that can see images: frontend"),
        "{prompt}"
    );
    assert!(prompt.contains("anthropic/claude-sonnet-4-6: vision, tools, 200k context"));
}

/// Every list is bounded, and every object is closed with every property required (what a
/// provider's strict mode asks); strings are left to the normalizer's clipping.
fn assert_bounded(schema: &Value) {
    if let Value::Object(map) = schema {
        match map.get("type").and_then(Value::as_str) {
            Some("array") => assert!(map.contains_key("maxItems"), "{schema}"),
            Some("object") => {
                assert_eq!(map.get("additionalProperties"), Some(&json!(false)));
                let properties = map["properties"].as_object().unwrap();
                let required = map["required"].as_array().unwrap();
                assert_eq!(properties.len(), required.len(), "{schema}");
            }
            _ => {}
        }
        map.values().for_each(assert_bounded);
    } else if let Value::Array(items) = schema {
        items.iter().for_each(assert_bounded);
    }
}

#[test]
fn schema_is_bounded_by_the_limits() {
    let limits = RoutingLimits {
        max_parallel_agents: 3,
        max_worker_agents: 3,
        max_todos: 6,
    };
    let schema = router_decision_schema(&limits);
    assert_bounded(&schema);
    let p = &schema["properties"];
    assert_eq!(p["workers"]["maxItems"], 3);
    assert_eq!(p["todos"]["maxItems"], 6);
    assert_eq!(p["dependencies"]["maxItems"], ROUTER_MAX_DEPENDENCIES);
    assert_eq!(p["clarification"]["properties"]["options"]["maxItems"], 3);
    // One list of the 13 routed roles, referred to by every role field.
    let roles = schema["$defs"]["role"]["enum"].as_array().unwrap();
    assert_eq!(roles.len(), 13);
    assert!(!roles.contains(&json!("routeBrain")) && !roles.contains(&json!("pet")));
    for role in [
        &p["role"],
        &p["workers"]["items"]["properties"]["role"],
        &p["todos"]["items"]["properties"]["role"],
    ] {
        assert_eq!(role, &json!({"$ref": "#/$defs/role"}));
    }
    assert!(p.get("modelId").is_none());
}

#[test]
fn parse_errors_explain_themselves() {
    assert_eq!(parse_router_reply("   "), Err(RouterParseError::Empty));
    let err = parse_router_reply("I would pick backend.").unwrap_err();
    assert!(err.to_string().contains("no JSON object"), "{err}");
    let ok = parse_router_reply("```json\n{\"role\":\"backend\"}\n```").unwrap();
    assert_eq!(ok["role"], "backend");
}

#[test]
fn invalid_role_falls_back_to_the_heuristic_primary() {
    let brain = uncapped_brain();
    for role in [
        json!("coder"),
        json!("routeBrain"),
        json!("pet"),
        json!(7),
        Value::Null,
    ] {
        let plan = normalize(json!({"role": role}), "fix the api endpoint", &brain);
        assert_eq!(plan.primary, Role::Backend, "{role}");
        assert!(
            plan.warnings
                .iter()
                .any(|w| w.contains("not a routed role"))
        );
    }
    let plan = normalize(json!({"role": "QA"}), "fix the api endpoint", &brain);
    assert_eq!(plan.primary, Role::Qa, "roles are case-insensitive");
}

#[test]
fn workers_are_deduplicated_with_the_last_entry_winning() {
    let brain = uncapped_brain();
    let raw = json!({"role": "backend", "workers": [
        {"role": "security", "goal": "first", "reason": "r1"},
        {"role": "backend", "goal": "build it", "reason": "primary"},
        {"role": "nonsense", "goal": "x"},
        {"role": "security", "goal": "second", "reason": "r2"},
    ]});
    let plan = normalize(raw, "fix the api", &brain);
    assert_eq!(roles(&plan), vec![Role::Security, Role::Backend]);
    assert_eq!(plan.workers[0].goal, "second");
    assert_eq!(plan.workers[0].reason, "r2");
}

#[test]
fn missing_goals_come_from_the_heuristic_or_a_default() {
    let brain = uncapped_brain();
    let raw = json!({"role": "frontend", "workers": [{"role": "security"}, {"role": "oracle"}]});
    let plan = normalize(raw, "implement a secure frontend login flow", &brain);
    let security = plan.worker(Role::Security).unwrap();
    assert!(security.goal.starts_with("Support the primary agent by"));
    let oracle = plan.worker(Role::Oracle).unwrap();
    assert_eq!(oracle.goal, "Handle oracle work.");
    assert_eq!(oracle.reason, "Router selected oracle.");
    // The primary was missing from the workers and is inserted first.
    assert_eq!(plan.workers[0].role, Role::Frontend);
}

#[test]
fn rush_is_dropped_unless_it_is_primary() {
    let brain = uncapped_brain();
    let raw = json!({"role": "backend", "workers": [{"role": "rush"}, {"role": "backend"}],
                     "todos": [{"id": "quick", "title": "quick reply", "role": "rush"},
                               {"id": "api", "title": "build api", "role": "backend"}]});
    let plan = normalize(raw, "fix the api", &brain);
    assert_eq!(roles(&plan), vec![Role::Backend]);
    assert_eq!(plan.todos.len(), 1);
    assert_eq!(plan.todos[0].id, "api");
    let rush_primary = normalize(
        json!({"role": "rush", "workers": [{"role": "rush"}]}),
        "hi",
        &brain,
    );
    assert_eq!(roles(&rush_primary), vec![Role::Rush]);
}

#[test]
fn no_workers_means_the_primary_alone() {
    let brain = uncapped_brain();
    let plan = normalize(json!({"role": "dba"}), "tune the sql query", &brain);
    assert_eq!(roles(&plan), vec![Role::Dba]);
    // No todos either: one per worker.
    assert_eq!(plan.todos.len(), 1);
    assert_eq!(plan.todos[0].id, "todo-01-dba");
}

#[test]
fn workers_and_todos_are_capped_keeping_the_primary() {
    let brain = default_brain(); // auto: 2 workers, 6 todos
    let raw = json!({"role": "frontend", "workers": [
        {"role": "librarian"}, {"role": "security"}, {"role": "qa"}, {"role": "frontend"}],
        "todos": (0..9).map(|i| json!({"id": format!("t{i}"), "title": format!("step {i}"), "role": "frontend"})).collect::<Vec<_>>()});
    let plan = normalize(raw, "build the login page", &brain);
    assert_eq!(roles(&plan), vec![Role::Librarian, Role::Frontend]);
    assert_eq!(plan.todos.len(), 6);
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("dropped: security, qa")),
        "{:?}",
        plan.warnings
    );
    assert!(plan.warnings.iter().any(|w| w.contains("ignored 3 more")));
}

#[test]
fn todos_are_titled_reassigned_and_given_ids() {
    let brain = uncapped_brain();
    let raw = json!({"role": "backend", "workers": [{"role": "backend"}, {"role": "qa"}],
    "todos": [
        {"id": "Build API", "title": "Build the API", "role": "backend"},
        {"task": "Write tests", "role": "qa"},
        {"goal": "Check the schema", "role": "dba"},
        {"id": "no-title", "role": "backend"},
        {"id": "build api", "title": "Again", "role": "bogus"},
    ]});
    let plan = normalize(raw, "fix the api", &brain);
    let summary: Vec<(&str, &str, Role)> = plan
        .todos
        .iter()
        .map(|t| (t.id.as_str(), t.title.as_str(), t.role))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("build-api", "Build the API", Role::Backend),
            ("todo-02-qa", "Write tests", Role::Qa),
            ("todo-03-backend", "Check the schema", Role::Backend),
            ("build-api-2", "Again", Role::Backend),
        ]
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("reassigned to backend"))
    );
    assert!(plan.warnings.iter().any(|w| w.contains("without a title")));
}

#[test]
fn dependency_ids_are_normalized_like_todo_ids() {
    let brain = uncapped_brain();
    let raw = json!({"role": "frontend", "workers": [{"role": "backend"}, {"role": "frontend"}],
        "todos": [{"id": "Build API", "title": "api", "role": "backend"},
                  {"id": "Build UI", "title": "ui", "role": "frontend"}],
        "dependencies": [{"from": " build api ", "to": "BUILD UI", "reason": "contract"},
                         {"fromTodoId": "Build UI", "toTodoId": "Build UI"},
                         {"from": "build-ui", "to": "build-api"}]});
    let plan = normalize(raw, "build the login page", &brain);
    let edges: Vec<(&str, &str)> = plan
        .dependencies
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str()))
        .collect();
    assert_eq!(edges, vec![("build-api", "build-ui")]);
    assert_eq!(plan.dependencies[0].reason.as_deref(), Some("contract"));
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("build-ui -> build-api"))
    );
}

#[test]
fn clarification_comes_from_the_router_only_when_valid() {
    let brain = uncapped_brain();
    let valid = json!({"role": "frontend", "clarification": {"required": true, "question": "Which page?",
        "options": [{"id": "a", "label": "Home"}, {"id": "b", "label": "Login"}]}});
    let plan = normalize(valid, "improve the page", &brain);
    assert!(plan.clarification.required);
    assert_eq!(plan.clarification.question, "Which page?");
    assert_eq!(plan.clarification.options.len(), 2);

    let invalid = json!({"role": "frontend", "clarification": "maybe"});
    let plan = normalize(invalid, "fix it", &brain);
    assert!(plan.clarification.required, "heuristic clarification kept");
    assert_eq!(plan.clarification.options[0].id, "make-scoped-change");
}

#[test]
fn confidence_is_clamped_or_dropped() {
    let brain = uncapped_brain();
    let conf = |value: Value| {
        normalize(
            json!({"role": "qa", "confidence": value}),
            "test it",
            &brain,
        )
        .confidence
    };
    assert_eq!(conf(json!(1.7)), Some(1.0));
    assert_eq!(conf(json!(-0.2)), Some(0.0));
    assert_eq!(conf(json!(0.42)), Some(0.42));
    assert_eq!(conf(json!("high")), None);
    assert_eq!(conf(Value::Null), None);
}

#[test]
fn requires_review_is_heuristic_or_router_true() {
    let brain = uncapped_brain();
    // Heuristic requires review (file edit): the router cannot remove it.
    let plan = normalize(
        json!({"role": "backend", "requiresReview": false}),
        "fix the api",
        &brain,
    );
    assert!(plan.requires_review);
    // Heuristic does not: the router may add it.
    let plan = normalize(
        json!({"role": "backend", "requiresReview": true}),
        "explain the api",
        &brain,
    );
    assert!(plan.requires_review);
    let plan = normalize(json!({"role": "backend"}), "explain the api", &brain);
    assert!(!plan.requires_review);
    let plan = normalize(
        json!({"role": "backend", "requiresReview": "yes"}),
        "explain the api",
        &brain,
    );
    assert!(!plan.requires_review, "only an explicit true counts");
}

#[test]
fn model_ids_are_honoured_only_from_the_roles_own_chain() {
    let mut brain = uncapped_brain();
    brain.roles.backend.fallback_model_ids = vec!["openai/gpt-5.5".into()];
    let raw = json!({"role": "backend", "modelId": "openai/gpt-5.5", "workers": [
        {"role": "backend"},
        {"role": "security", "modelId": "openai/gpt-5.5"},
        {"role": "qa", "modelId": "local/smollm2"}]});
    let plan = normalize(raw, "fix the api", &brain);
    assert_eq!(
        plan.worker(Role::Backend).unwrap().model_id.as_deref(),
        Some("openai/gpt-5.5")
    );
    assert_eq!(plan.worker(Role::Security).unwrap().model_id, None);
    assert_eq!(
        plan.worker(Role::Qa).unwrap().model_id.as_deref(),
        Some("local/smollm2")
    );
    assert!(
        plan.warnings
            .iter()
            .any(|w| w.contains("openai/gpt-5.5 for security"))
    );
}

#[test]
fn reason_defaults_and_non_objects_fall_back() {
    let brain = uncapped_brain();
    assert_eq!(
        normalize(json!({"role": "qa"}), "test", &brain).reason,
        DEFAULT_ROUTER_REASON
    );
    assert_eq!(
        normalize(
            json!({"role": "qa", "reason": " tests first "}),
            "test",
            &brain
        )
        .reason,
        "tests first"
    );
    let fallback = normalize(json!(["backend"]), "fix the api", &brain);
    assert_eq!(fallback.primary, Role::Backend);
    assert!(
        fallback
            .warnings
            .iter()
            .any(|w| w.contains("not a JSON object"))
    );
}
