//! Built-in tool catalog (placeholder during construction).
use crate::config::ApprovalPolicy;
use crate::tool::{ToolPermission, ToolRisk};

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
/// Lookup.
pub fn builtin_spec(name: &str) -> Option<&'static BuiltinSpec> {
    BUILTIN_TOOLS.iter().find(|s| s.name == name)
}
