//! Whether a call needs a human's approval (spec 1.7 "Approval decision", step 2), and the
//! read/mutating classification of tool names shared with the evidence cache.

use serde_json::Value;

use super::PolicyEvaluation;
use crate::config::PolicyDecision;
use crate::registry::builtin_spec;
use crate::tool::{ToolDefinition, ToolPermission};

/// Verbs that make a tool name mutating (`create_issue`, `pushFiles`, `run-query`).
pub const MUTATING_VERBS: &[&str] = &[
    "create",
    "write",
    "update",
    "delete",
    "remove",
    "rename",
    "move",
    "set",
    "put",
    "post",
    "patch",
    "insert",
    "upsert",
    "drop",
    "exec",
    "execute",
    "run",
    "send",
    "push",
    "merge",
    "commit",
    "deploy",
    "publish",
    "install",
    "uninstall",
    "kill",
    "stop",
    "start",
    "restart",
    "edit",
    "modify",
    "upload",
    "apply",
    "add",
    "close",
    "archive",
    "cancel",
    "approve",
    "assign",
    "reset",
    "revert",
    "truncate",
    "replace",
    "save",
    "store",
    "submit",
    "trigger",
    "invoke",
    "call",
    "fork",
    "transfer",
    "pay",
    "charge",
    "refund",
    "grant",
    "revoke",
    "enable",
    "disable",
    "lock",
    "unlock",
    "import",
    "sync",
    "clear",
    "purge",
    "destroy",
    "terminate",
    "reboot",
    "shutdown",
    "scale",
    "mutate",
    "comment",
    "reply",
    "react",
    "label",
    "star",
    "follow",
    "subscribe",
    "unsubscribe",
    "invite",
    "release",
    "block",
    "ban",
    "mark",
    "resolve",
    "reopen",
    "transition",
    "schedule",
    "book",
    "order",
    "buy",
    "sell",
    "email",
    "message",
    "notify",
    "tweet",
    "share",
    "generate",
    "make",
    "build",
];
/// Verbs that make a tool name a read (`get_issue`, `listFiles`, `search-code`).
pub const READ_VERBS: &[&str] = &[
    "get",
    "list",
    "read",
    "search",
    "find",
    "fetch",
    "query",
    "describe",
    "show",
    "view",
    "lookup",
    "inspect",
    "status",
    "count",
    "head",
    "tail",
    "cat",
    "ls",
    "browse",
    "retrieve",
    "check",
    "diff",
    "info",
    "explain",
    "download",
    "validate",
    "summarize",
    "preview",
    "grep",
    "glob",
    "tree",
    "stat",
    "whoami",
    "ping",
    "health",
    "load",
    "open",
    "export",
    "lint",
];
/// Text in arguments that makes an otherwise unknown call need approval.
pub const DANGEROUS_TEXT: &[&str] = &[
    "rm -rf",
    "sudo",
    "chmod",
    "chown",
    "git push",
    "git reset",
    "drop table",
    "delete from",
    "truncate table",
    "npm publish",
    "bun publish",
];
const APPROVAL_NAME_MARKERS: &[&str] = &[
    "shell",
    "exec",
    "terminal",
    "bash",
    "command",
    "run_script",
    "kill",
    "apply_patch",
    "edit",
    "write",
    "patch",
    "delete",
    "remove",
    "rename",
    "move",
    "create_file",
];

/// Splits a tool name into lower-case words (`snake_case`, `kebab-case`, `camelCase`).
pub fn name_tokens(name: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if ch.is_uppercase() && previous_lower && !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
        previous_lower = ch.is_lowercase() || ch.is_ascii_digit();
        current.extend(ch.to_lowercase());
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// The tool name inside an MCP name (`mcp__server__tool` → `tool`).
pub fn mcp_bare_name(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("mcp__")?;
    Some(rest.split_once("__").map_or(rest, |(_, tool)| tool))
}

/// Whether a (bare) tool name contains a mutating verb.
pub fn is_mutating_tool_name(name: &str) -> bool {
    name_tokens(name)
        .iter()
        .any(|token| MUTATING_VERBS.contains(&token.as_str()))
}

/// Whether a (bare) tool name reads: a read verb and no mutating verb.
pub fn is_read_tool_name(name: &str) -> bool {
    let tokens = name_tokens(name);
    tokens.iter().any(|t| READ_VERBS.contains(&t.as_str()))
        && !tokens.iter().any(|t| MUTATING_VERBS.contains(&t.as_str()))
}

/// Whether the arguments mention an obviously dangerous operation.
pub fn has_dangerous_text(arguments: &Value) -> bool {
    let text = arguments.to_string().to_lowercase();
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    DANGEROUS_TEXT
        .iter()
        .any(|needle| collapsed.contains(needle))
}

/// Whether a call needs approval: the policy's ask/allow first, then the tool's nature.
pub fn requires_approval(
    tool: &ToolDefinition,
    arguments: &Value,
    evaluation: &PolicyEvaluation,
) -> bool {
    match evaluation.decision {
        Some(PolicyDecision::Ask | PolicyDecision::Deny) => return true,
        Some(PolicyDecision::Allow) => return false,
        None => {}
    }
    let name = tool.name.to_lowercase();
    if name == "web_search" || name == "mcp__connect" {
        return false;
    }
    if let Some(bare) = mcp_bare_name(&tool.name) {
        // Only a tool its server marks read-only (`readOnlyHint`) runs without a person; a
        // mutating verb in its name or dangerous text in its arguments still asks, whatever
        // the server claims.
        return tool.permission != ToolPermission::Read
            || is_mutating_tool_name(bare)
            || has_dangerous_text(arguments);
    }
    if builtin_spec(&name).is_some() {
        return tool.permission != ToolPermission::Read;
    }
    // Markers are whole words of the name (`dispatch_specialist` is not a `patch` tool);
    // multi-word markers such as `run_script` match as written.
    let tokens = name_tokens(&tool.name);
    let marked = APPROVAL_NAME_MARKERS.iter().any(|marker| {
        if marker.contains('_') {
            name.contains(marker)
        } else {
            tokens.iter().any(|token| token == marker)
        }
    });
    tool.permission != ToolPermission::Read || marked || has_dangerous_text(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
            permission: ToolPermission::Read,
            risk: crate::tool::ToolRisk::Low,
        }
    }

    #[test]
    fn approval_markers_are_whole_words() {
        let none = PolicyEvaluation::default();
        let args = serde_json::json!({});
        assert!(!requires_approval(
            &read_tool("dispatch_specialist"),
            &args,
            &none
        ));
        assert!(requires_approval(&read_tool("patch_notes"), &args, &none));
        assert!(requires_approval(&read_tool("myShellRunner"), &args, &none));
        assert!(requires_approval(
            &read_tool("custom_run_script"),
            &args,
            &none
        ));
        assert!(requires_approval(
            &read_tool("lookup"),
            &serde_json::json!({"q": "git push"}),
            &none
        ));
    }

    #[test]
    fn tokens_and_verbs() {
        assert_eq!(
            name_tokens("createPullRequest"),
            ["create", "pull", "request"]
        );
        assert_eq!(name_tokens("list_issues"), ["list", "issues"]);
        assert!(is_mutating_tool_name("create_issue"));
        assert!(is_mutating_tool_name("pushFiles"));
        assert!(!is_mutating_tool_name("get_issue"));
        assert!(is_read_tool_name("search-code"));
        assert!(!is_read_tool_name("get_and_delete"));
        assert_eq!(
            mcp_bare_name("mcp__github__create_issue"),
            Some("create_issue")
        );
        assert!(has_dangerous_text(
            &serde_json::json!({"q": "then   git  push"})
        ));
    }
}
