//! Wire vocabulary shared by every Braincode crate.
//!
//! This crate is pure: it holds data shapes and their (de)serialization, never I/O. Everything
//! that crosses a crate boundary, is written to the session journal or is printed as JSON is
//! defined here, so a shape changes in exactly one place.

mod event;
mod ids;
mod message;
mod model;
mod oauth;
mod packets;
mod policy;
mod record;
mod report;
mod role;
pub mod secrets;
mod text;
mod usage;
mod verification;

pub use event::{AgentRef, RunEvent};
pub use ids::{ContextId, IdError, SessionId, short_form};
pub use message::{
    AgentMessage, ContextRef, ContextRefKind, MessageKind, TaskProgress, TaskStatus,
};
pub use model::{
    ModelApi, ModelCallSettings, ModelDefinition, ModelPricing, ModelTimeouts, PromptCache,
    ThinkingLevel,
};
pub use oauth::{
    EXTRA_ACCOUNT_ID, EXTRA_API_BASE_URL, EXTRA_ENTERPRISE_DOMAIN, OauthCredentials, OauthProvider,
};
pub use packets::{
    AgentLayer, AgentTaskContext, BrainLayer, BrainTaskContext, ContextLayer, HandoffPacket,
    WorkerResult,
};
pub use policy::{CommandReport, PolicyDecision, PolicyEvaluation, RuleMatch, TargetKind};
pub use record::*;
pub use report::*;
pub use role::{Mode, Phase, Role, RoleParseError, WorkerPhase};
pub use text::{
    ELLIPSIS, clip_chars, clip_chars_noting_rest, clip_chars_then_ellipsis, close_names,
    edit_distance, lower_hex, safe_name,
};
pub use usage::Usage;
pub use verification::*;
