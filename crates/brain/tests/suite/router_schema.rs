//! The router schema is derived from [`RouterDecision`]: its properties are exactly the
//! struct's fields at every level (both directions), and a decision of that shape is read
//! field for field by the parser and the normalizer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::uncapped_brain;
use braincode_brain::{
    RoutedRole, RouterClarification, RouterDecision, RouterDependency, RouterOption, RouterTodo,
    RouterWorker, heuristic_route, normalize_router_decision, parse_router_reply,
    router_decision_schema, routing_limits,
};
use braincode_protocol::{Mode, Role};
use serde_json::Value;

fn role(role: Role) -> RoutedRole {
    RoutedRole::new(role).unwrap()
}

fn decision() -> RouterDecision {
    RouterDecision {
        role: role(Role::Backend),
        workers: vec![
            RouterWorker {
                role: role(Role::Librarian),
                goal: "Find where the token parser is tested".into(),
                reason: "the failing test must be located first".into(),
            },
            RouterWorker {
                role: role(Role::Backend),
                goal: "Fix the token parser so its test passes".into(),
                reason: "the bug is in server code".into(),
            },
        ],
        todos: vec![
            RouterTodo {
                id: "map".into(),
                title: "Locate the parser test".into(),
                role: role(Role::Librarian),
            },
            RouterTodo {
                id: "fix".into(),
                title: "Fix the parser".into(),
                role: role(Role::Backend),
            },
        ],
        dependencies: vec![RouterDependency {
            from: "map".into(),
            to: "fix".into(),
        }],
        clarification: RouterClarification {
            required: true,
            question: "Which parser do you mean?".into(),
            options: vec![
                RouterOption {
                    id: "token".into(),
                    label: "The token parser".into(),
                },
                RouterOption {
                    id: "config".into(),
                    label: "The config parser".into(),
                },
            ],
        },
        reason: "server-side bug with a failing test".into(),
    }
}

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// `schema` lists exactly the fields of `value` (a serialized struct), all required, and so
/// on down every object and list of objects.
fn assert_same_fields(schema: &Value, value: &Value, root: &Value) {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => root.pointer(reference.trim_start_matches('#')).unwrap(),
        None => schema,
    };
    assert_eq!(
        sorted_keys(&schema["properties"]),
        sorted_keys(value),
        "{schema}"
    );
    let mut required: Vec<String> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_string())
        .collect();
    required.sort();
    assert_eq!(required, sorted_keys(value), "{schema}");
    for (name, field) in value.as_object().unwrap() {
        let property = &schema["properties"][name];
        match field {
            Value::Object(_) => assert_same_fields(property, field, root),
            Value::Array(items) if items.first().is_some_and(Value::is_object) => {
                assert_same_fields(&property["items"], &items[0], root);
            }
            _ => {}
        }
    }
}

#[test]
fn the_schema_has_exactly_the_fields_of_the_decision_struct() {
    let brain = uncapped_brain();
    let schema = router_decision_schema(&routing_limits(&brain.routing, Mode::Auto));
    let value = serde_json::to_value(decision()).unwrap();
    assert_same_fields(&schema, &value, &schema);
    // And serde reads back what it wrote, refusing a field the schema does not have.
    let back: RouterDecision = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(back, decision());
    let mut extra = value.clone();
    extra["modelId"] = "test/model".into();
    assert!(serde_json::from_value::<RouterDecision>(extra).is_err());
    let mut not_routed = value;
    not_routed["role"] = "routeBrain".into();
    assert!(serde_json::from_value::<RouterDecision>(not_routed).is_err());
}

#[test]
fn the_normalizer_reads_every_field_of_the_decision() {
    let brain = uncapped_brain();
    let prompt = "fix the token parser test";
    let limits = routing_limits(&brain.routing, Mode::Auto);
    let heuristic = heuristic_route(prompt, &brain, Mode::Auto);
    let wanted = decision();
    let reply = serde_json::to_string(&wanted).unwrap();
    let raw = parse_router_reply(&reply).unwrap();
    let plan = normalize_router_decision(&raw, &heuristic, &limits, &brain);
    assert!(plan.warnings.is_empty(), "{:?}", plan.warnings);
    assert_eq!(plan.primary, wanted.role.role());
    let workers: Vec<(Role, &str, &str)> = plan
        .workers
        .iter()
        .map(|w| (w.role, w.goal.as_str(), w.reason.as_str()))
        .collect();
    let expected: Vec<(Role, &str, &str)> = wanted
        .workers
        .iter()
        .map(|w| (w.role.role(), w.goal.as_str(), w.reason.as_str()))
        .collect();
    assert_eq!(workers, expected);
    let todos: Vec<(&str, &str, Role)> = plan
        .todos
        .iter()
        .map(|t| (t.id.as_str(), t.title.as_str(), t.role))
        .collect();
    let expected: Vec<(&str, &str, Role)> = wanted
        .todos
        .iter()
        .map(|t| (t.id.as_str(), t.title.as_str(), t.role.role()))
        .collect();
    assert_eq!(todos, expected);
    assert_eq!(plan.dependencies.len(), 1);
    assert_eq!(
        (
            plan.dependencies[0].from.as_str(),
            plan.dependencies[0].to.as_str()
        ),
        ("map", "fix")
    );
    assert!(plan.clarification.required);
    assert_eq!(plan.clarification.question, wanted.clarification.question);
    let options: Vec<(&str, &str)> = plan
        .clarification
        .options
        .iter()
        .map(|o| (o.id.as_str(), o.label.as_str()))
        .collect();
    assert_eq!(
        options,
        vec![
            ("token", "The token parser"),
            ("config", "The config parser")
        ]
    );
    assert_eq!(plan.reason, wanted.reason);
}
