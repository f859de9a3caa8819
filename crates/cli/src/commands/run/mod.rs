//! `braincode run`: plan, isolated workers, primary agent, review, one final answer.

mod live;
mod local;
mod plan_view;
pub mod report;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use braincode_config::{Home, resolve_session};
use braincode_protocol::secrets::redact_secrets;
use braincode_protocol::{FinalStatus, Mode, SessionId};
use braincode_runtime::{PermissionMode, RoutingChoice, RunRequest, RunServices, plan_only, run};

/// Arguments of `braincode run`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 answered/approved/read_only, 1 error, 2 usage, \
3 changes_requested, 4 blocked, 5 needs_clarification, 130 cancelled.\n\
Use `--` before prompt words that start with `-`."
)]
pub struct RunArgs {
    /// The task. `@path` inlines a project file, `@@<session>` brings in an earlier session.
    #[arg(required = true, value_name = "PROMPT")]
    pub prompt: Vec<String>,
    /// Print the plan (routing, workers, todos) and stop: no tools run, nothing is saved.
    #[arg(long)]
    pub dry_run: bool,
    /// Plan with the deterministic heuristic instead of the routeBrain model.
    #[arg(long, alias = "no-router")]
    pub heuristic: bool,
    /// Print the FinalReport as JSON.
    #[arg(long, group = "output")]
    pub json: bool,
    /// Stream every run event as one JSON object per line.
    #[arg(long, group = "output")]
    pub events: bool,
    /// Print only the final answer.
    #[arg(long, group = "output")]
    pub summary_only: bool,
    /// Only read tools (the default).
    #[arg(long, group = "permission")]
    pub read_only: bool,
    /// Allow file edits (edit_file, apply_patch); no commands.
    #[arg(long, group = "permission")]
    pub allow_edits: bool,
    /// Allow every tool, commands included (permission-policy denials still apply).
    #[arg(long, short = 'y', group = "permission")]
    pub yes: bool,
    /// Brain to use instead of the configured default.
    #[arg(long, value_name = "ID")]
    pub brain: Option<String>,
    /// Orchestration mode instead of the configured one.
    #[arg(long, value_name = "auto|radical")]
    pub mode: Option<Mode>,
    /// Continue an earlier session (id or unique prefix).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Project root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Trust this project first (its hooks, MCP servers, settings and checks may run); the
    /// same as `braincode trust` before the run.
    #[arg(long)]
    pub trust: bool,
    /// Let commands reach the network (they run without it otherwise).
    #[arg(long)]
    pub allow_network: bool,
}

impl RunArgs {
    fn permission(&self) -> PermissionMode {
        if self.yes {
            PermissionMode::Yes
        } else if self.allow_edits {
            PermissionMode::AllowEdits
        } else {
            PermissionMode::ReadOnly
        }
    }
}

/// Runs the command.
pub fn execute(args: RunArgs) -> anyhow::Result<ExitCode> {
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        anyhow::bail!(
            "the prompt is empty: say what to do, e.g. `braincode run \"explain src/main.rs\"`"
        );
    }
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let project_root = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project_root = project_root.canonicalize().with_context(|| {
        format!(
            "project directory {} is not accessible",
            project_root.display()
        )
    })?;
    if !project_root.is_dir() {
        anyhow::bail!("{} is not a directory", project_root.display());
    }
    if args.trust && !args.dry_run {
        eprintln!("{}", super::trust::trust_and_report(&home, &project_root)?);
    }
    let session_id: Option<SessionId> = match &args.session {
        Some(prefix) => Some(resolve_session(&home, prefix)?),
        None => None,
    };
    let request = RunRequest {
        prompt,
        project_root,
        session_id,
        brain_id: args.brain.clone(),
        mode: args.mode,
        permission: args.permission(),
        allow_network: args.allow_network,
        routing: if args.heuristic {
            RoutingChoice::HeuristicOnly
        } else {
            RoutingChoice::Auto
        },
    };
    let runtime = super::tokio_runtime()?;
    if args.dry_run {
        return runtime.block_on(dry_run(request, home, args.json));
    }
    if request.permission == PermissionMode::ReadOnly
        && !args.read_only
        && !args.json
        && !args.events
    {
        eprintln!(
            "read-only run: tools can read the project but not change it (use --allow-edits or --yes)"
        );
    }
    if !args.heuristic {
        local::ensure_local_models(&home, args.brain.as_deref())?;
    }
    runtime.block_on(real_run(request, home, &args))
}

async fn dry_run(request: RunRequest, home: Home, json: bool) -> anyhow::Result<ExitCode> {
    let plan = plan_only(request, RunServices::new(home))
        .await
        .map_err(anyhow::Error::msg)?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&plan)?)?;
    } else {
        write!(stdout, "{}", plan_view::format_plan(&plan))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn real_run(request: RunRequest, home: Home, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mut services = RunServices::new(home);
    let cancel = services.cancel.clone();
    let printer: Arc<dyn braincode_runtime::EventSubscriber> = if args.events {
        Arc::new(live::JsonLines)
    } else {
        Arc::new(live::Progress::new(
            std::io::stderr().is_terminal() && !args.json && !args.summary_only,
        ))
    };
    services.subscribers.push(printer);

    // First Ctrl-C cancels the run (children are killed, one final line is still printed);
    // a second one exits at once.
    let signal_cancel = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\ncancelling… (press Ctrl-C again to quit immediately)");
            signal_cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });

    let report = run(request, services).await;
    let mut stdout = std::io::stdout().lock();
    let printed = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&report)?)
    } else if args.summary_only {
        format!("{}\n", report.model_summary.trim())
    } else if !args.events {
        report::format_report(&report)
    } else {
        String::new()
    };
    write!(stdout, "{}", redact_secrets(&printed))?;
    stdout.flush()?;
    let code = report.status.exit_code();
    Ok(match report.status {
        FinalStatus::Aborted => ExitCode::from(130),
        _ => ExitCode::from(u8::try_from(code).unwrap_or(1)),
    })
}
