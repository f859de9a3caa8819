//! The orchestrator: plan, hooks, isolated workers, agent loop, primary, review and the one
//! final answer — everything journaled through one event stream.

mod agent;
mod approval;
mod config;
mod deps;
mod git;
mod handoff;
mod hooks;
mod ledger;
mod local_servers;
mod mcp;
mod model_check;
mod models;
mod permission_explain;
mod pet;
mod protect;
mod replay;
mod repo_facts;
mod run;
mod sink;
mod subscription;
mod tape;
mod writers;

// The reading side lives in `braincode-session`; the run keeps its fold current.
use braincode_session::{fold, report};

// Every module is private: the crate's surface is this list.

// A run: what to run, with what, and how it ends.
pub use config::{
    BrainOrigin, ConfigError, FileError, LoadOptions, LoadedChecks, PROJECT_CHECKS_FILE, RunConfig,
    SelectedBrain, ToolsProblem, load_brain_presets, load_checks, load_hook_sources, load_models,
    load_settings, load_trust, local_server, permission_policy, read_tools_file, select_brain,
};
pub use run::{
    CHECK_TOOL, JournalTarget, NoSandbox, PlanError, RoutingChoice, RunBudget, RunError,
    RunRequest, RunServices, StartError, new_session_id, plan_loaded, plan_only, project_sandbox,
    run, run_loaded,
};
pub use sink::{ChannelSubscriber, EventSubscriber, MemoryJournal, RunSink};

// Approvals and the permission policy.
pub use approval::{
    ApprovalAnswer, ApprovalHandler, ApprovalRequest, PermissionMode, PolicyGate,
    untrusted_checks_reason,
};
pub use permission_explain::{
    ExplainInput, explain as explain_permission, explain_with as explain_permission_with,
    load_policy_in,
};

// The agent loop (the TUI's pet, benches and tests drive it directly).
pub use agent::compact::{Ask as CompactAsk, CompactionPolicy, compact};
pub use agent::{
    AgentError, AgentServices, AgentSetup, GateOutcome, GateRequest, OpenGate, ToolGate, ToolStats,
    run_agent,
};
pub use hooks::{HookCommand, HookEnvironment, HookEvent, HookResult, matcher_matches, run_hooks};
pub use models::{ClientOverride, image_candidates_in};

// Project checks and their dependencies (`braincode checks`).
pub use deps::{
    registries_allowlist, set_up as set_up_dependencies, steps_for as dependency_steps,
};
pub use run::checks::{CheckContext, missing_results, outcome_reason, run_specs};

// MCP servers as a run, `braincode mcp`, `doctor` and the panel see them.
pub use mcp::check::{
    CHECK_BUDGET, CheckContext as McpCheckContext, McpCheckStatus, McpServerCheck, McpSetup,
    UNTRUSTED_REASON, check_servers, checking_rows, configured_servers, writable_roots,
};
pub use mcp::{McpHubCache, PlannedServer, definition_of, exposed_name};

// Models on this machine and their credentials.
pub use local_servers::{ServerKind, found as found_local_servers};
pub use model_check::{
    ModelTest, credential_status, credential_usable, suggested_entry, test_model,
};

// After a run: replay, resume, undo, handoffs, the pet.
pub use git::PatchBaseline;
pub use handoff::{HandoffOptions, make_handoff};
pub use ledger::{BlobStore, sha256_hex, undo};
pub use pet::{NoPetModel, PET_POLL, PetModel, PetReply, PetSnapshot, SNAPSHOT_ITEMS};
pub use replay::{Divergence, JournaledRun, ReplayOutcome, replay};
pub use repo_facts::mentioned_paths;
pub use subscription::{
    LoginChannels, LoginRequest, ProviderCredential, REFRESH_MARGIN_MS, SubscriptionError,
    codex_endpoints, copilot_endpoints, find_credential, fresh_subscription, subscription_login,
};
pub use tape::TapeMode;

// Parallel writers' worktrees (`braincode bench writers` times them).
pub use writers::{
    LeftoverWriters, SparseWorktree as WriterWorktree, Worktrees as WriterWorktrees,
    leftover_writers,
};
