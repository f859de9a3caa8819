//! The router decision as a struct, and its JSON Schema derived from it (`schemars`), for
//! structured output and grammar-constrained generation.
//!
//! The shape is what routing needs and no more, since the schema is resent with every routing
//! request: [`crate::normalize_router_decision`] stays tolerant and also reads aliases, a
//! missing field, a todo's or an edge's `reason`, a clarification's `reason`, `missing` and
//! option `description` (defaults otherwise), `confidence`, `requiresReview` and `modelId`,
//! none of which the router is asked for; a decision of this shape is read field for field
//! (tested in `tests/suite/router.rs`).

use std::borrow::Cow;

use braincode_context::derived_schema;
use braincode_protocol::Role;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::modes::RoutingLimits;

/// Most dependency edges a decision may list.
pub const ROUTER_MAX_DEPENDENCIES: usize = 12;

/// A role the router may plan (never routeBrain or pet).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Role", into = "Role")]
pub struct RoutedRole(Role);

impl RoutedRole {
    /// `role`, when it is a routed role.
    pub fn new(role: Role) -> Option<Self> {
        role.is_routed().then_some(Self(role))
    }

    /// The role.
    pub fn role(self) -> Role {
        self.0
    }
}

impl TryFrom<Role> for RoutedRole {
    type Error = String;

    fn try_from(role: Role) -> Result<Self, Self::Error> {
        Self::new(role).ok_or_else(|| format!("{role} is not a routed role"))
    }
}

impl From<RoutedRole> for Role {
    fn from(role: RoutedRole) -> Self {
        role.0
    }
}

impl JsonSchema for RoutedRole {
    fn schema_name() -> Cow<'static, str> {
        // Short: every role field of the decision refers to it as `#/$defs/role`.
        "role".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let roles: Vec<Value> = Role::ROUTED.iter().map(|r| r.as_str().into()).collect();
        let mut map = Map::new();
        map.insert("type".into(), "string".into());
        map.insert("enum".into(), Value::Array(roles));
        Schema::from(map)
    }
}

/// A worker the router plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RouterWorker {
    /// Its role.
    pub role: RoutedRole,
    /// A self-contained goal.
    pub goal: String,
    /// Why this role helps.
    pub reason: String,
}

/// A todo the router plans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RouterTodo {
    /// A short lowercase id (normalized to at most [`crate::TODO_ID_MAX_CHARS`]).
    pub id: String,
    /// What to do.
    pub title: String,
    /// Its owner, one of the planned workers.
    pub role: RoutedRole,
}

/// `to` waits for `from` (todo ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RouterDependency {
    /// The todo that runs first.
    pub from: String,
    /// The todo that waits.
    pub to: String,
}

/// One answer the user may pick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RouterOption {
    /// Its id.
    pub id: String,
    /// What the user sees.
    pub label: String,
}

/// The router's question, when handing off would be unsafe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct RouterClarification {
    /// Whether the run stops to ask.
    pub required: bool,
    /// The one question, in the user's language.
    pub question: String,
    /// Mutually exclusive answers.
    #[schemars(length(max = crate::MAX_CLARIFICATION_OPTIONS))]
    pub options: Vec<RouterOption>,
}

/// A routing decision, as the router is asked to reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterDecision {
    /// The primary role.
    pub role: RoutedRole,
    /// The workers, the primary's included (at most `max_worker_agents`).
    pub workers: Vec<RouterWorker>,
    /// The todos in execution order (at most `max_todos`).
    pub todos: Vec<RouterTodo>,
    /// Edges between todos.
    pub dependencies: Vec<RouterDependency>,
    /// A question, or `required: false`.
    pub clarification: RouterClarification,
    /// Why this plan.
    pub reason: String,
}

/// The JSON Schema of a routing decision under `limits`: [`RouterDecision`]'s, with the
/// list bounds of the limits.
///
/// `role` and every worker/todo role are limited to the 13 routed roles (one `$defs/role`);
/// `workers` has at most `max_worker_agents` items and `todos` at most `max_todos` (none at
/// all is a plan the normalizer completes: the primary, one todo per worker);
/// dependencies and clarification options are bounded; no object takes extra properties and every property is required (a provider's strict mode
/// accepts it), and there is no `modelId` field.
///
/// Strings carry no `maxLength`: the schema is resent with every routing request, the
/// normalizer clips every text it keeps, and a grammar caps strings the schema leaves open
/// (`GrammarLimits::max_string_length`), so a grammar derived from it still cannot loop.
pub fn router_decision_schema(limits: &RoutingLimits) -> Value {
    let max_todos = limits.max_todos.max(1);
    let bounds = [
        ("workers", limits.max_worker_agents.max(1)),
        ("todos", max_todos),
        (
            "dependencies",
            ROUTER_MAX_DEPENDENCIES.min(max_todos.saturating_mul(2)),
        ),
    ];
    let mut schema = derived_schema::<RouterDecision>();
    for (list, max) in bounds {
        if let Some(Value::Object(property)) = schema.pointer_mut(&format!("/properties/{list}")) {
            property.insert("maxItems".into(), max.into());
        }
    }
    schema
}
