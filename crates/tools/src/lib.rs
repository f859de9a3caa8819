//! Coding tools, the permission policy that guards them, and the per-run evidence cache.
//!
//! Every tool implements [`Tool`]. Before a call runs, the runtime asks the
//! [`PermissionPolicy`] (deny > ask > allow) and then the approval flow; the tools themselves
//! also confine paths to the project root, so a bypassed approval still cannot write outside it.

pub mod args;
pub mod config;
pub mod paths;
pub mod policy;
pub mod registry;
pub mod text;
mod tool;

pub use tool::{
    SharedTool, Tool, ToolContext, ToolDefinition, ToolOutput, ToolPermission, ToolRisk,
};
pub mod patch;
pub mod script;

pub use config::{
    ApprovalPolicy, CheckPolicy, CheckStrategy, ChecksConfig, CommandRule, ConfigErrors,
    ConfigProblem, PathRule, PermissionsConfig, PolicyDecision, ReviewRequirement, ToolEntry,
    ToolsConfig,
};
pub use policy::{
    CommandReport, PermissionPolicy, PermissionRequest, PolicyError, PolicyEvaluation, RuleMatch,
    TargetKind, requires_approval,
};
pub use script::{ResolvedScript, ScriptError, resolve_script};
