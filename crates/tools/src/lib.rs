//! Coding tools, the permission policy that guards them, and the per-run evidence cache.
//!
//! Every tool implements [`Tool`]. Before a call runs, the runtime asks the
//! [`PermissionPolicy`] (deny > ask > allow) and then the approval flow
//! ([`requires_approval`]); the tools themselves also confine paths to the project root, so a
//! bypassed approval still cannot write outside it. Read tools results go through the
//! [`EvidenceCache`], shared by every agent of a run.

pub mod args;
pub mod audit;
pub mod checks;
pub mod config;
pub mod evidence;
pub mod exec;
pub mod fs;
pub mod git;
pub mod git_host;
pub mod git_safe;
pub mod patch;
pub mod paths;
pub mod policy;
pub mod registry;
pub mod script;
pub mod text;
mod tool;
pub mod tool_args;

pub use audit::summarize_json;
pub use config::{
    ApprovalPolicy, CheckPolicy, CheckStrategy, ChecksConfig, CommandRule, ConfigErrors,
    ConfigProblem, FetchDependencies, PathRule, PermissionsConfig, PolicyDecision,
    ReviewRequirement, ToolEntry, ToolRule, ToolsConfig,
};
pub use evidence::{CacheLookup, EvidenceCache, EvidenceCacheConfig};
pub use exec::{ExecLimits, ExecSessions};
pub use policy::{
    CommandReport, PROTECTED_PATHS, PermissionPolicy, PermissionRequest, PolicyError,
    PolicyEvaluation, PolicyEvaluationExt, RuleMatch, TargetKind, requires_approval,
};
pub use registry::{
    BUILTIN_TOOLS, READ_ONLY_TOOL_SPECS_BUDGET_BYTES, ToolMode, builtin_tools, tool_specs_bytes,
};
pub use script::{ResolvedScript, ScriptError, resolve_script};
pub use tool::{
    EditorFiles, LazyFiles, SharedTool, Tool, ToolContext, ToolDefinition, ToolImage, ToolOutput,
    ToolPermission, ToolRisk,
};
