//! The Braincode home (`~/.braincode`, or `BRAINCODE_HOME`): every store with validation and
//! atomic writes, the session journal (append, read, list, snapshot), `@path` / `@@id`
//! references, and project/user support discovery (AGENTS.md, skills, MCP, hooks).
//!
//! Reading never creates or rewrites a file. Every error a user can see names the file, the
//! line, the column and the field when there is one, and says what to do.

mod auth;
mod auth_settings;
mod brains;
pub mod budgets;
pub mod contained;
mod error;
mod home;
mod hooks;
mod hooks_edit;
pub mod journal;
pub mod json_edit;
mod json_io;
mod json_locate;
pub mod json_scan;
mod mcp;
pub mod migrate;
mod models;
mod references;
mod settings;
mod skill_use;
mod support;
mod text;
pub mod trust;
pub mod usage;

pub use auth::{
    ApiKey, AuthStatus, AuthStore, CredentialKind, KeySource, OauthEntry, ProviderAuth,
    ResolvedKey, env_api_key, provider_env_var, resolve_api_key, resolve_api_key_with_source,
};
pub use auth_settings::{AuthSettings, CodexOauthSettings, CopilotOauthSettings, OauthSettings};
pub use brains::{load_brains, merge_brains, read_brains_file, read_brains_text, save_brains};
pub use contained::{ContainedBytes, ContainedError, ContainedText, FileKind, ReadScope};
pub use error::{ConfigError, JournalError, JsonLocation, LookupError};
pub use home::Home;
pub use hooks::{
    HOOK_EVENTS, HookEvents, HookGroup, HookHandler, HookSource, HooksFile, Scope, load_hooks,
    project_hooks_path, read_hooks_file,
};
pub use hooks_edit::{HookRow, HookSwitch, hook_rows, switch_hook, switch_hook_text};
pub use journal::{
    JournalRead, JournalWriter, ListOptions, SessionInfo, SessionSnapshot, SessionStatus,
    SkippedLine, SnapshotEntry, SnapshotOptions, continuity_block, latest_session_for_project,
    list_sessions, read_journal, resolve_session, scan_journal, session_has_runs, session_snapshot,
};
pub use json_io::{
    FieldPath, FieldSegment, UpdateLock, lock_for_update, parse_json_text, read_json_file,
    read_json_file_with_text, write_bytes_atomic, write_json_atomic,
};
pub use json_locate::locate_field;
pub use mcp::{
    Added, MAX_MCP_CALL_TIMEOUT_MS, MAX_MCP_STARTUP_TIMEOUT_MS, MIN_MCP_TIMEOUT_MS,
    McpLoadingStrategy, McpSchemas, McpServerConfig, McpTransport, OnExisting, PROJECT_DIR_VAR,
    ProcessVars, TAVILY, TavilyKey, VarSource, add_user_server, expand_vars, load_mcp_servers,
    project_mcp_path, read_mcp_file, read_project_mcp_file, set_user_server_enabled, setup_tavily,
    tavily_server_entry,
};
pub use models::{ModelsDocument, load_models, merge_models, read_models_file, save_models};
pub use references::{
    ATTACHMENTS_HEADING, ExpandedPrompt, ImageAttachment, ReferenceContext, ReferenceKind,
    ReferenceOutcome, ReferenceToken, ResolvedReference, expand_references, tokenize_references,
};
pub use settings::{
    ConfigServer, ContextSettings, DEFAULT_BRAIN_ID_FALLBACK, Features, HandoffSummarizer,
    McpSettings, ReferenceSettings, SandboxSettings, Settings, load_settings, save_settings,
};
pub use skill_use::{DEFAULT_SKILL_TASK, UnknownSkill, find_skill, skill_prompt};
pub use support::{
    AGENTS_MD_MAX_BYTES, SKILL_MAX_BYTES, Skill, SupportBundle, SupportFile, discover_skills,
    discover_support,
};
pub use trust::{
    ProjectTrust, TRUST_FILES, TrustError, TrustFile, TrustState, TrustStore, check_trust,
    load_trust_store, trust_files, trust_project, untrust_project,
};
