//! `braincode permissions`: explain what the permission policy decides for a tool call, and
//! why — every matching rule, and for commands every sub-command the policy parsed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use braincode_tools::{
    PermissionPolicy, PermissionRequest, PolicyDecision, PolicyEvaluation, PolicyEvaluationExt,
    ToolDefinition, ToolPermission, ToolRisk, ToolsConfig, requires_approval,
};
use serde_json::{Map, Value, json};

/// `braincode permissions` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PermissionsCommand {
    /// Show the decision for a hypothetical tool call and the rules that matched.
    Check(CheckArgs),
}

/// `braincode permissions check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Tool name: edit_file, apply_patch, shell, exec_command, run_script, write_stdin, …
    #[arg(long)]
    pub tool: String,
    /// A path the tool would write (edit_file, write_file, …).
    #[arg(long)]
    pub path: Option<String>,
    /// A command the tool would run (shell, exec_command, …).
    #[arg(long)]
    pub command: Option<String>,
    /// A script run_script would run (package.json, cargo, make, pytest, go).
    #[arg(long)]
    pub script: Option<String>,
    /// An argument for --script (repeatable).
    #[arg(long = "script-arg", allow_hyphen_values = true)]
    pub script_args: Vec<String>,
    /// A patch file apply_patch would apply.
    #[arg(long)]
    pub patch: Option<PathBuf>,
    /// Print the evaluation as JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory (default: the current directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// Runs the command.
pub fn execute(cmd: PermissionsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PermissionsCommand::Check(args) => check(&args),
    }
}

/// A usage problem: printed on stderr, exit code 2.
fn usage(message: &str) -> anyhow::Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::from(2))
}

/// Where tools.json lives (when there is one), and the policy a run would build from it: the
/// same reader and the same policy as `braincode run` (the defaults when it is missing).
fn load_policy() -> anyhow::Result<(Option<PathBuf>, PermissionPolicy)> {
    // Without a home directory there is no tools.json: the default rules apply.
    let Ok(home) = braincode_config::Home::from_env() else {
        return Ok((None, PermissionPolicy::default()));
    };
    let tools = braincode_runtime::config::read_tools_file(&home)?;
    let policy = braincode_runtime::config::permission_policy(
        &home,
        tools.as_ref().unwrap_or(&ToolsConfig::default()),
    )?;
    Ok((tools.map(|_| home.tools_path()), policy))
}

fn check(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let project = match &args.project {
        Some(project) => project.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !project.is_dir() {
        return usage(&format!(
            "--project {} is not a directory",
            project.display()
        ));
    }
    if args.tool.trim().is_empty() {
        return usage("--tool is empty");
    }
    if args.path.is_none()
        && args.command.is_none()
        && args.script.is_none()
        && args.patch.is_none()
    {
        return usage("give what the tool would touch: --path, --command, --script or --patch");
    }
    let mut arguments = Map::new();
    if let Some(path) = &args.path {
        arguments.insert("path".into(), json!(path));
    }
    if let Some(command) = &args.command {
        if args.tool == "write_stdin" {
            // write_stdin sends text to a session: evaluate the text it would type. (Built-in
            // tools reject fields they do not have, so only its own fields are given.)
            arguments.insert("sessionId".into(), json!(0));
            arguments.insert("chars".into(), json!(command));
        } else {
            arguments.insert("command".into(), json!(command));
        }
    }
    if let Some(script) = &args.script {
        arguments.insert("script".into(), json!(script));
        arguments.insert("args".into(), json!(args.script_args));
    }
    if let Some(patch) = &args.patch {
        let text = match std::fs::read_to_string(patch) {
            Ok(text) => text,
            Err(error) => {
                return usage(&format!("cannot read --patch {}: {error}", patch.display()));
            }
        };
        arguments.insert("patch".into(), json!(text));
    }
    let arguments = Value::Object(arguments);

    let (config_path, policy) = load_policy()?;
    let evaluation = policy.evaluate(&PermissionRequest {
        tool_name: &args.tool,
        arguments: &arguments,
        project_root: &project,
        session_history: None,
    });
    if evaluation.paths.is_empty() && evaluation.commands.is_empty() && evaluation.notes.is_empty()
    {
        return usage(&format!(
            "--tool {} takes nothing from the given options (use --path for file tools, --command for shell tools, --script for run_script, --patch for apply_patch)",
            args.tool
        ));
    }
    let definition = tool_definition(&args.tool);
    let approval = requires_approval(&definition, &arguments, &evaluation);
    if args.json {
        let document = json!({
            "tool": args.tool,
            "project": project.display().to_string(),
            "config": config_path.as_ref().map(|p| p.display().to_string()),
            "arguments": arguments,
            "evaluation": evaluation,
            "approvalRequired": approval && !evaluation.is_denied(),
            "denialMessage": evaluation.denial_message(),
        });
        print_out(&serde_json::to_string_pretty(&document)?);
    } else {
        print_out(&render(
            args,
            &project,
            config_path.as_deref(),
            &evaluation,
            approval,
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_out(text: &str) {
    println!("{text}");
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
    args: &CheckArgs,
    project: &Path,
    config: Option<&Path>,
    evaluation: &PolicyEvaluation,
    approval: bool,
) -> String {
    let mut out = Vec::new();
    out.push(format!("tool:       {}", args.tool));
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
