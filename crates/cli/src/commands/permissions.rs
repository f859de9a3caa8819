//! `braincode permissions`: explain what the permission policy decides for a tool call, and
//! why — every matching rule, and for commands every sub-command the policy parsed.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use braincode_runtime::{ExplainInput, explain_permission as explain};

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
    let patch = match &args.patch {
        Some(patch) => match std::fs::read_to_string(patch) {
            Ok(text) => Some(text),
            Err(error) => {
                return usage(&format!("cannot read --patch {}: {error}", patch.display()));
            }
        },
        None => None,
    };
    let input = ExplainInput {
        tool: args.tool.clone(),
        path: args.path.clone(),
        command: args.command.clone(),
        script: args.script.clone(),
        script_args: args.script_args.clone(),
        patch,
        project,
    };
    let explanation = explain(&input)?;
    let evaluation = &explanation.evaluation;
    if evaluation.paths.is_empty() && evaluation.commands.is_empty() && evaluation.notes.is_empty()
    {
        return usage(&format!(
            "--tool {} takes nothing from the given options (use --path for file tools, --command for shell tools, --script for run_script, --patch for apply_patch)",
            args.tool
        ));
    }
    if args.json {
        print_out(&serde_json::to_string_pretty(&explanation.json(&input))?);
    } else {
        print_out(&explanation.text);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_out(text: &str) {
    println!("{text}");
}
