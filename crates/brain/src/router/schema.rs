//! JSON Schema of the router decision, for grammar-constrained generation.

use braincode_protocol::Role;
use serde_json::{Value, json};

use crate::clarify::{MAX_CLARIFICATION_MISSING, MAX_CLARIFICATION_OPTIONS};
use crate::modes::RoutingLimits;
use crate::todos::TODO_ID_MAX_CHARS;

/// Most dependency edges a decision may list.
pub const ROUTER_MAX_DEPENDENCIES: usize = 12;

fn text(max: usize) -> Value {
    json!({"type": "string", "maxLength": max})
}

/// The JSON Schema of a routing decision under `limits`.
///
/// `role` and every worker/todo role are limited to the 13 routed roles; `workers` has at
/// most `max_worker_agents` items and `todos` between 1 and `max_todos`; dependencies,
/// clarification lists and every string are bounded; `confidence` is a number in [0, 1]; no
/// object takes extra properties, and there is no `modelId` field. A grammar derived from it
/// cannot loop.
pub fn router_decision_schema(limits: &RoutingLimits) -> Value {
    let roles: Vec<&str> = Role::ROUTED.iter().map(|r| r.as_str()).collect();
    let role = json!({"type": "string", "enum": roles});
    let max_workers = limits.max_worker_agents.max(1);
    let max_todos = limits.max_todos.max(1);
    let max_dependencies = ROUTER_MAX_DEPENDENCIES.min(max_todos.saturating_mul(2));
    json!({
        "type": "object",
        "properties": {
            "role": role,
            "workers": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_workers,
                "items": {
                    "type": "object",
                    "properties": {"role": role, "goal": text(240), "reason": text(160)},
                    "required": ["role", "goal", "reason"],
                    "additionalProperties": false
                }
            },
            "todos": {
                "type": "array",
                "minItems": 1,
                "maxItems": max_todos,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": text(TODO_ID_MAX_CHARS.min(40)),
                        "title": text(120),
                        "role": role,
                        "reason": text(160)
                    },
                    "required": ["id", "title", "role", "reason"],
                    "additionalProperties": false
                }
            },
            "dependencies": {
                "type": "array",
                "maxItems": max_dependencies,
                "items": {
                    "type": "object",
                    "properties": {"from": text(40), "to": text(40), "reason": text(120)},
                    "required": ["from", "to", "reason"],
                    "additionalProperties": false
                }
            },
            "clarification": {
                "type": "object",
                "properties": {
                    "required": {"type": "boolean"},
                    "reason": text(200),
                    "question": text(200),
                    "missing": {
                        "type": "array",
                        "maxItems": MAX_CLARIFICATION_MISSING,
                        "items": text(80)
                    },
                    "options": {
                        "type": "array",
                        "maxItems": MAX_CLARIFICATION_OPTIONS,
                        "items": {
                            "type": "object",
                            "properties": {"id": text(40), "label": text(60), "description": text(160)},
                            "required": ["id", "label", "description"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["required", "reason", "question", "missing", "options"],
                "additionalProperties": false
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": text(240)
        },
        "required": ["role", "workers", "todos", "dependencies", "clarification", "confidence", "reason"],
        "additionalProperties": false
    })
}
