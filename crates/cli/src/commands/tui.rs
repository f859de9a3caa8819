//! `braincode` (no command) and `braincode tui`: the interactive session in the current project.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use braincode_config::{Home, latest_session_for_project, resolve_session};
use braincode_protocol::Mode;
use braincode_tui::session::{TuiOptions, run_tui};

/// Arguments of `braincode tui`.
#[derive(Debug, Default, clap::Args)]
pub struct TuiArgs {
    /// Reopen an earlier session (id or unique prefix).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Reopen this project's latest session.
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_latest: bool,
    /// Project root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Brain to use instead of the configured default.
    #[arg(long, value_name = "ID")]
    pub brain: Option<String>,
    /// Orchestration mode instead of the configured one.
    #[arg(long, value_name = "auto|radical")]
    pub mode: Option<Mode>,
    /// The permission mode the session starts in.
    #[command(flatten)]
    pub start: super::start_mode::StartMode,
    /// Let commands reach the network.
    #[arg(long)]
    pub allow_network: bool,
}

impl TuiArgs {
    /// The `braincode run` command line of `-p <task>` with these options.
    pub fn as_run_args(&self, task: &str) -> Vec<String> {
        let mut args = vec!["braincode".to_string(), "run".to_string()];
        let mut flag = |name: &str, value: Option<String>| {
            args.push(name.to_string());
            args.extend(value);
        };
        if let Some(session) = &self.session {
            flag("--session", Some(session.clone()));
        }
        if self.continue_latest {
            flag("--continue", None);
        }
        if let Some(project) = &self.project {
            flag("--project", Some(project.display().to_string()));
        }
        if let Some(brain) = &self.brain {
            flag("--brain", Some(brain.clone()));
        }
        if let Some(mode) = self.mode {
            flag("--mode", Some(mode.as_str().to_string()));
        }
        if self.start.allow_edits {
            flag("--allow-edits", None);
        }
        if self.start.read_only {
            flag("--read-only", None);
        }
        if self.start.yes {
            flag("--yes", None);
        }
        if self.allow_network {
            flag("--allow-network", None);
        }
        args.push("--".to_string());
        args.push(task.to_string());
        args
    }
}

/// Runs the command. Without a terminal on stdin and stdout it draws nothing: it says how
/// to run a task instead.
pub fn execute(args: TuiArgs) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "braincode: the interactive session needs a terminal. To run one task without it: \
             `braincode -p \"<task>\"` or `braincode run <task>` (see `braincode --help`)."
        );
        return Ok(ExitCode::from(2));
    }
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let project_root = super::project_root(args.project.as_deref())?;
    let session_id = match &args.session {
        Some(prefix) => Some(resolve_session(&home, prefix)?),
        None if args.continue_latest => Some(
            latest_session_for_project(&home, &project_root)?.ok_or_else(|| {
                anyhow::anyhow!("no earlier session in {}", project_root.display())
            })?,
        ),
        None => None,
    };
    let permission = args.start.mode();
    // The session probes the sandbox after its first frame and names it in the status line.
    let sandbox = String::new();
    let options = TuiOptions {
        home,
        project_root,
        session_id,
        brain: args.brain,
        mode: args.mode,
        permission,
        allow_network: args.allow_network,
        sandbox,
    };
    let runtime = super::tokio_runtime()?;
    let exit = runtime.block_on(run_tui(options))?;
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if let Some(hint) = exit.resume_hint() {
        println!("{hint}");
    }
    braincode_tools::exec::process::settle_all_groups();
    Ok(ExitCode::SUCCESS)
}
