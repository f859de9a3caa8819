//! Built-in tool catalog (placeholder during construction).
use crate::config::ApprovalPolicy;
use crate::tool::{ToolDefinition, ToolPermission, ToolRisk};
use crate::tool_args::ToolArgs;

/// Catalog entry.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinSpec {
    /// Name.
    pub name: &'static str,
    /// Permission.
    pub permission: ToolPermission,
    /// Risk.
    pub risk: ToolRisk,
    /// Approval.
    pub approval: ApprovalPolicy,
}
const fn spec(
    name: &'static str,
    permission: ToolPermission,
    risk: ToolRisk,
    approval: ApprovalPolicy,
) -> BuiltinSpec {
    BuiltinSpec {
        name,
        permission,
        risk,
        approval,
    }
}

/// The 13 built-in tools with their permission, risk and approval policy (spec Appendix G).
pub const BUILTIN_TOOLS: &[BuiltinSpec] = &[
    spec(
        "list_files",
        ToolPermission::Read,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "read_file",
        ToolPermission::Read,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "search_files",
        ToolPermission::Read,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "edit_file",
        ToolPermission::Write,
        ToolRisk::Medium,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "apply_patch",
        ToolPermission::Write,
        ToolRisk::Medium,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "exec_command",
        ToolPermission::Execute,
        ToolRisk::High,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "write_stdin",
        ToolPermission::Execute,
        ToolRisk::High,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "list_background",
        ToolPermission::Execute,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "kill_background",
        ToolPermission::Execute,
        ToolRisk::Medium,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "shell",
        ToolPermission::Execute,
        ToolRisk::High,
        ApprovalPolicy::ConfirmDangerous,
    ),
    spec(
        "git_diff",
        ToolPermission::Read,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "get_changed_files",
        ToolPermission::Read,
        ToolRisk::Low,
        ApprovalPolicy::Allow,
    ),
    spec(
        "run_script",
        ToolPermission::Execute,
        ToolRisk::High,
        ApprovalPolicy::ConfirmDangerous,
    ),
];
/// The catalog entry of a built-in tool.
pub fn builtin_spec(name: &str) -> Option<&'static BuiltinSpec> {
    BUILTIN_TOOLS.iter().find(|s| s.name == name)
}

/// A built-in tool's definition: name and argument schema from its argument struct (the one
/// serde reads), permission and risk from the catalog.
pub(crate) fn builtin_definition<A: ToolArgs>(description: &str) -> ToolDefinition {
    let (permission, risk) = builtin_spec(A::TOOL)
        .map_or((ToolPermission::Execute, ToolRisk::High), |spec| {
            (spec.permission, spec.risk)
        });
    ToolDefinition {
        name: A::TOOL.to_string(),
        description: description.to_string(),
        parameters: A::schema(),
        permission,
        risk,
    }
}

/// Most bytes the read-only tool set (what every support worker gets) may add to a request:
/// each tool's name, description and parameters schema, serialized as JSON. A worker sends it
/// on every turn, so it is a budget; a unit test holds it.
pub const READ_ONLY_TOOL_SPECS_BUDGET_BYTES: usize = 2048;

/// What `tools` cost a request: the JSON array of their name, description and parameters, as
/// offered to a model (wire envelopes aside), in bytes.
pub fn tool_specs_bytes(tools: &[crate::tool::SharedTool]) -> usize {
    let specs: Vec<serde_json::Value> = tools
        .iter()
        .map(|tool| {
            let definition = tool.definition();
            serde_json::json!({
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.parameters,
            })
        })
        .collect();
    serde_json::Value::Array(specs).to_string().len()
}

/// Which local tools agents get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolMode {
    /// Read tools only.
    ReadOnly,
    /// Read and write tools; no process execution.
    ReadWrite,
    /// Everything.
    All,
}

impl ToolMode {
    /// Whether a tool of this permission is offered in this mode.
    pub fn allows(self, permission: ToolPermission) -> bool {
        match self {
            Self::ReadOnly => permission == ToolPermission::Read,
            Self::ReadWrite => permission != ToolPermission::Execute,
            Self::All => true,
        }
    }
}

/// The built-in tools for a mode, without the ones tools.json disables. Exec tools share
/// `sessions` (one manager per run).
pub fn builtin_tools(
    mode: ToolMode,
    config: &crate::config::ToolsConfig,
    sessions: std::sync::Arc<crate::exec::ExecSessions>,
) -> Vec<crate::tool::SharedTool> {
    use crate::tool::SharedTool;
    use std::sync::Arc;
    let all: Vec<SharedTool> = vec![
        Arc::new(crate::fs::list_files::ListFiles::default()),
        Arc::new(crate::fs::read_file::ReadFile::default()),
        Arc::new(crate::fs::search_files::SearchFiles::default()),
        Arc::new(crate::fs::edit_file::EditFile::default()),
        Arc::new(crate::fs::apply_patch::ApplyPatch::default()),
        Arc::new(crate::exec::ExecCommand::new(sessions.clone())),
        Arc::new(crate::exec::WriteStdin::new(sessions.clone())),
        Arc::new(crate::exec::ListBackground::new(sessions.clone())),
        Arc::new(crate::exec::KillBackground::new(sessions)),
        Arc::new(crate::exec::Shell::default()),
        Arc::new(crate::git::GitDiff::default()),
        Arc::new(crate::git::GetChangedFiles::default()),
        Arc::new(crate::script::RunScript::default()),
    ];
    all.into_iter()
        .filter(|tool| {
            let definition = tool.definition();
            mode.allows(definition.permission) && config.is_enabled(&definition.name)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specs_bytes(mode: ToolMode) -> usize {
        let sessions = std::sync::Arc::new(crate::exec::ExecSessions::default());
        tool_specs_bytes(&builtin_tools(
            mode,
            &crate::config::ToolsConfig::default(),
            sessions,
        ))
    }

    #[test]
    fn read_only_tool_specs_fit_the_budget() {
        let read_only = specs_bytes(ToolMode::ReadOnly);
        eprintln!(
            "tool specs: read-only {read_only} bytes, all {} bytes",
            specs_bytes(ToolMode::All)
        );
        assert!(
            read_only <= READ_ONLY_TOOL_SPECS_BUDGET_BYTES,
            "the read-only tool set costs {read_only} bytes, over its budget of {READ_ONLY_TOOL_SPECS_BUDGET_BYTES}"
        );
    }
}
