//! The Brain: which roles work on a request, on which models, in which order.
//!
//! A Brain Model ([`BrainModel`]) maps the 15 roles to model chains; presets inherit with
//! `extends` ([`select_brain`]). A request is routed either by the deterministic keyword
//! heuristic ([`heuristic_route`]) or by the routeBrain model, whose reply is parsed and
//! normalized against the heuristic ([`router`]); either way the result becomes a
//! [`RuntimePlan`] with one isolated context per worker. The crate also owns the role
//! catalog and system prompts, the modes and their limits, the clarification gate and todo
//! and dependency normalization.
//!
//! Pure: no I/O, no async, no network. The runtime wires it to models.

mod budget;
mod clarify;
mod defaults;
mod error;
mod fast_path;
mod heuristic;
mod inherit;
mod keywords;
mod modes;
mod plan;
mod prompts;
mod roles;
pub mod router;
mod schema;
mod team;
mod todos;

pub use budget::BrainBudget;
pub use clarify::{
    CONTINUITY_MARKERS, MAX_CLARIFICATION_MISSING, MAX_CLARIFICATION_OPTIONS,
    MIN_CLARIFICATION_OPTIONS, assess_clarification, default_clarification,
    default_clarification_options, has_continuity_context, is_chinese, normalize_clarification,
};
pub use defaults::{
    ANTHROPIC_MODEL_ID, DEFAULT_BRAIN_ID, LOCAL_MODEL_ID, OPENAI_MODEL_ID, default_brains,
    default_models, local_server_brain,
};
pub use error::BrainError;
pub use fast_path::{
    FAST_PATH_MAX_CHARS, FAST_PATH_REASON, is_fast_path_eligible, mentions_workspace_artifact,
};
pub use heuristic::{
    PlannedWorker, RoutingPlan, SUPPORT_KEEP_ORDER, cap_plan, heuristic_goal, heuristic_route,
    heuristic_route_uncapped,
};
pub use inherit::select_brain;
pub use keywords::Signals;
pub use modes::{ModePolicy, PlanStrategy, RoutingLimits, mode_policy, routing_limits};
pub use plan::{PlanInput, RuntimePlan, RuntimeWorkerPlan, build_runtime_plan};
pub use prompts::{
    CONTEXT_CONTRACT, CORE_DIRECTIVES, PET_PROMPT, REVIEW_OPENING, ROUTE_BRAIN_PROMPT,
    WORKER_HANDOFF_OPENING, composed_role_prompt, default_role_prompt, role_prompt_opening,
    role_system_prompt,
};
pub use roles::{ROLE_PROFILES, RoleProfile, is_read_only_support_role, role_profile};
pub use router::{
    DEFAULT_ROUTER_REASON, ROUTER_MAX_DEPENDENCIES, RoutedRole, RouterClarification,
    RouterDecision, RouterDependency, RouterOption, RouterParseError, RouterPromptInput,
    RouterTodo, RouterWorker, build_router_prompt, normalize_router_decision, parse_router_reply,
    router_decision_schema,
};
pub use schema::{
    BrainModel, BrainPreset, BrainsDocument, Compaction, ContextPolicy, ImageModelRef, Isolation,
    ModelPolicy, PartialContextPolicy, PartialModelPolicy, PartialRouting, RolePolicies, Routing,
};
pub use team::{TEAM_TEST_REASON, team_routing};
pub use todos::{
    NormalizedDependencies, TODO_ID_MAX_CHARS, fallback_todo_id, normalize_dependencies,
    normalize_dependencies_with_warnings, normalize_todo_id, slug, unique_todo_id,
};

/// Whether `prompt` asks about the code base (how it works, what it does) without asking to
/// change it.
pub fn asks_about_the_codebase(prompt: &str) -> bool {
    let signals = keywords::Signals::detect(prompt);
    signals.codebase && !signals.file_edit
}
