//! Why the permission policy decides what it decides for a tool call: every matching rule,
//! and for commands every sub-command the policy parsed. `braincode permissions check` prints
//! it; the control panel shows it live as the user types.

use std::path::{Path, PathBuf};

use braincode_tools::{
    PermissionPolicy, PermissionRequest, PolicyDecision, PolicyEvaluation, PolicyEvaluationExt,
    ToolDefinition, ToolPermission, ToolRisk, ToolsConfig, requires_approval,
};
use serde_json::{Map, Value, json};

use crate::config::ConfigError;

/// A tool call to explain: what it would touch, in the project it would run in.
#[derive(Debug, Clone, Default)]
pub struct ExplainInput {
    /// The tool name (`edit_file`, `exec_command`, an MCP tool…).
    pub tool: String,
    /// The path a file tool would touch.
    pub path: Option<String>,
    /// The command a shell tool would run (the text `write_stdin` would type).
    pub command: Option<String>,
    /// The script `run_script` would run.
    pub script: Option<String>,
    /// Its arguments.
    pub script_args: Vec<String>,
    /// The patch text `apply_patch` would apply.
    pub patch: Option<String>,
    /// The project root.
    pub project: PathBuf,
}

/// The policy's verdict and the reasons, as text and as data.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The arguments the call was evaluated with.
    pub arguments: Value,
    /// The policy's evaluation.
    pub evaluation: PolicyEvaluation,
    /// Whether the call needs approval when no rule decides.
    pub approval: bool,
    /// tools.json, when there is one.
    pub config_path: Option<PathBuf>,
    /// The explanation for a person.
    pub text: String,
}

impl Explanation {
    /// The `--json` document.
    pub fn json(&self, input: &ExplainInput) -> Value {
        json!({
            "tool": input.tool,
            "project": input.project.display().to_string(),
            "config": self.config_path.as_ref().map(|p| p.display().to_string()),
            "arguments": self.arguments,
            "evaluation": self.evaluation,
            "approvalRequired": self.approval && !self.evaluation.is_denied(),
            "denialMessage": self.evaluation.denial_message(),
        })
    }
}

/// Where tools.json lives (when there is one), and the policy a run would build from it: the
/// same reader and the same policy as `braincode run` (the defaults when it is missing).
pub fn load_policy() -> Result<(Option<PathBuf>, PermissionPolicy), ConfigError> {
    // Without a home directory there is no tools.json: the default rules apply.
    let Ok(home) = braincode_config::Home::from_env() else {
        return Ok((None, PermissionPolicy::default()));
    };
    load_policy_in(&home)
}

/// [`load_policy`] for a given home.
pub fn load_policy_in(
    home: &braincode_config::Home,
) -> Result<(Option<PathBuf>, PermissionPolicy), ConfigError> {
    let tools = crate::config::read_tools_file(home)?;
    let policy =
        crate::config::permission_policy(home, tools.as_ref().unwrap_or(&ToolsConfig::default()))?;
    Ok((tools.map(|_| home.tools_path()), policy))
}

/// Explains `input` under the policy of the environment's home.
pub fn explain(input: &ExplainInput) -> Result<Explanation, ConfigError> {
    let (config_path, policy) = load_policy()?;
    Ok(explain_with(input, config_path, &policy))
}

/// Explains `input` under `policy`.
pub fn explain_with(
    input: &ExplainInput,
    config_path: Option<PathBuf>,
    policy: &PermissionPolicy,
) -> Explanation {
    let arguments = arguments_of(input);
    let evaluation = policy.evaluate(&PermissionRequest {
        tool_name: &input.tool,
        arguments: &arguments,
        project_root: &input.project,
        session_history: None,
    });
    let definition = tool_definition(&input.tool);
    let approval = requires_approval(&definition, &arguments, &evaluation);
    let text = render(
        &input.tool,
        &input.project,
        config_path.as_deref(),
        &evaluation,
        approval,
    );
    Explanation {
        arguments,
        evaluation,
        approval,
        config_path,
        text,
    }
}

fn arguments_of(input: &ExplainInput) -> Value {
    let mut arguments = Map::new();
    if let Some(path) = &input.path {
        arguments.insert("path".into(), json!(path));
    }
    if let Some(command) = &input.command {
        if input.tool == "write_stdin" {
            // write_stdin sends text to a session: evaluate the text it would type. (Built-in
            // tools reject fields they do not have, so only its own fields are given.)
            arguments.insert("sessionId".into(), json!(0));
            arguments.insert("chars".into(), json!(command));
        } else {
            arguments.insert("command".into(), json!(command));
        }
    }
    if let Some(script) = &input.script {
        arguments.insert("script".into(), json!(script));
        arguments.insert("args".into(), json!(input.script_args));
    }
    if let Some(patch) = &input.patch {
        arguments.insert("patch".into(), json!(patch));
    }
    Value::Object(arguments)
}

/// The built-in definition, or a conservative one for other tool names.
fn tool_definition(name: &str) -> ToolDefinition {
    match braincode_tools::registry::builtin_spec(name) {
        Some(spec) => ToolDefinition {
            name: name.to_string(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            permission: spec.permission,
            risk: spec.risk,
        },
        None => ToolDefinition {
            name: name.to_string(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            permission: if braincode_tools::policy::targets::is_path_tool(name)
                || braincode_tools::policy::targets::is_patch_tool(name)
            {
                ToolPermission::Write
            } else {
                ToolPermission::Execute
            },
            risk: ToolRisk::High,
        },
    }
}

fn render(
    tool: &str,
    project: &Path,
    config: Option<&Path>,
    evaluation: &PolicyEvaluation,
    approval: bool,
) -> String {
    let mut out = Vec::new();
    out.push(format!("tool:       {tool}"));
    out.push(format!("project:    {}", project.display()));
    out.push(format!(
        "rules:      {}",
        config.map_or_else(
            || "default rules only (no tools.json)".to_string(),
            |p| format!("default rules + {}", p.display())
        )
    ));
    let decision = match evaluation.decision {
        Some(PolicyDecision::Deny) => "deny — the call is blocked".to_string(),
        Some(PolicyDecision::Ask) => "ask — the call needs approval".to_string(),
        Some(PolicyDecision::Allow) => "allow — the call runs without approval".to_string(),
        None => format!(
            "no rule — the tool mode decides: {}",
            if approval {
                "approval required (auto mode asks; radical mode auto-approves)"
            } else {
                "runs without approval"
            }
        ),
    };
    out.push(format!("decision:   {decision}"));
    out.push(format!(
        "review:     {}",
        if evaluation.review_required {
            "required (a review worker will check the change)"
        } else {
            "not required"
        }
    ));
    if let Some(message) = evaluation.denial_message() {
        out.push(format!("message:    {message}"));
    }
    if evaluation.is_unanalysable() {
        out.push(format!(
            "unanalysable: {} — never auto-approved outside the OS sandbox: --yes runs it only sandboxed, otherwise a person decides",
            evaluation.unanalysable.join("; ")
        ));
    }
    if evaluation.is_protected() {
        out.push(format!(
            "protected:  {} — only a person can approve it, one call at a time (not --yes, not --allow-edits)",
            evaluation.protected.join("; ")
        ));
    }
    let sandbox = braincode_sandbox::status();
    out.push(format!(
        "sandbox:    {}",
        if sandbox.kind == braincode_sandbox::SandboxKind::Unavailable {
            format!(
                "unavailable ({}) — every command needs a person's approval",
                sandbox.detail
            )
        } else {
            format!(
                "{} — commands run confined: writes only in the project and a private /tmp, secrets hidden, no network unless --allow-network",
                sandbox.detail
            )
        }
    ));
    if !evaluation.paths.is_empty() {
        out.push(String::new());
        out.push("paths (resolved against the project root):".to_string());
        for path in &evaluation.paths {
            out.push(format!("  {path}"));
        }
    }
    for report in &evaluation.commands {
        out.push(String::new());
        out.push(format!("{}: {}", report.origin, report.text));
        out.push("  sub-commands (→ unwrapped or normalized forms):".to_string());
        if report.subcommands.is_empty() {
            out.push("    (none)".to_string());
        }
        for sub in &report.subcommands {
            out.push(format!("    {sub}"));
        }
        for write in &report.writes {
            out.push(format!("  writes: {write}"));
        }
        for reason in &report.uncertain {
            out.push(format!("  not fully analyzable: {reason}"));
        }
    }
    for note in &evaluation.notes {
        out.push(format!("note: {note}"));
    }
    out.push(String::new());
    if evaluation.matches.is_empty() {
        out.push("matched rules: none".to_string());
    } else {
        out.push("matched rules:".to_string());
        for found in &evaluation.matches {
            out.push(format!(
                "  {:<5} {:<7} {}  (pattern {:?}, {} rule{}){}",
                found.action.as_str(),
                found.kind.as_str(),
                found.target,
                found.pattern,
                if found.default_rule {
                    "default"
                } else {
                    "user"
                },
                if found.review_required {
                    ", review required"
                } else {
                    ""
                },
                if found.reason.is_empty() {
                    String::new()
                } else {
                    format!(": {}", found.reason)
                }
            ));
        }
    }
    out.join("\n")
}
