//! The routeBrain LLM router as pure functions: the prompt, the decision schema, reply
//! parsing and normalization. The runtime sends the prompt to the planner model and feeds
//! the reply back here; any failure falls back to the heuristic plan.

mod normalize;
mod parse;
mod prompt;
mod schema;

pub use normalize::{DEFAULT_ROUTER_REASON, normalize_router_decision};
pub use parse::{RouterParseError, parse_router_reply};
pub use prompt::{RouterPromptInput, build_router_prompt};
pub use schema::{
    ROUTER_MAX_DEPENDENCIES, RoutedRole, RouterClarification, RouterDecision, RouterDependency,
    RouterOption, RouterTodo, RouterWorker, router_decision_schema,
};
