//! The orchestrator: plan, hooks, isolated workers, agent loop, primary, review and the one
//! final answer — everything journaled through one event stream.

pub mod agent;
pub mod approval;
pub mod config;
pub mod deps;
pub mod fold;
pub mod git;
pub mod handoff;
pub mod hooks;
pub mod ledger;
pub mod local_servers;
pub mod mcp;
pub mod model_check;
pub mod models;
pub mod permission_explain;
pub mod pet;
pub mod protect;
pub mod replay;
pub mod repo_facts;
pub mod report;
pub mod run;
pub mod sink;
pub mod tape;

pub use approval::{ApprovalAnswer, ApprovalHandler, ApprovalRequest, PermissionMode};
pub use config::{ConfigError, LoadOptions, RunConfig};
pub use run::{
    JournalTarget, RoutingChoice, RunError, RunRequest, RunServices, new_session_id, plan_only, run,
};
pub use sink::{ChannelSubscriber, EventSubscriber, MemoryJournal, RunSink};
