//! `braincode run`: plan, isolated workers, primary agent, review, one final answer.

mod live;
mod local;
mod plan_view;
pub mod report;
mod signals;
pub mod words;

pub use local::GET_A_MODEL;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use braincode_config::{Home, latest_session_for_project, resolve_session};
use braincode_protocol::secrets::redact_secrets;
use braincode_protocol::{FinalStatus, Mode, SessionId};
use braincode_runtime::JournaledRun;
use braincode_runtime::TapeMode;
use braincode_runtime::{
    LoadOptions, PermissionMode, RoutingChoice, RunConfig, RunRequest, RunServices, StartError,
    plan_loaded, run_loaded,
};

/// Arguments of `braincode run`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The prompt comes from the words after the flags, from stdin with `braincode run -` (e.g. \
`git diff | braincode run -`), or from a UTF-8 file with `--prompt-file PATH`; use stdin or \
a file for prompts too long for the command line.

SIGINT (Ctrl-C), SIGTERM and SIGHUP cancel the run the same way: running commands and hooks \
are stopped with everything they started, the report is printed and the session journal ends \
with the run's error. A second signal quits at once, without a report.

Exit codes: 0 answered/approved/read_only, 1 error, 2 usage, 3 changes_requested, \
4 blocked, 5 needs_clarification, 129 cancelled by SIGHUP, 130 cancelled by SIGINT (Ctrl-C), \
143 cancelled by SIGTERM.

Use `--` before prompt words that start with `-`.")]
pub struct RunArgs {
    /// The task, or `-` to read it from stdin. `@path` inlines a project file, `@@<session>`
    /// brings in an earlier session.
    #[arg(
        value_name = "PROMPT",
        required_unless_present_any = ["prompt_file", "resume", "skill"],
        conflicts_with_all = ["prompt_file", "resume"]
    )]
    pub prompt: Vec<String>,
    /// Read the task from this UTF-8 file instead of the command line.
    #[arg(long, value_name = "PATH")]
    pub prompt_file: Option<PathBuf>,
    /// Run the task with this skill applied (`.agents/skills/<id>/SKILL.md` of the project,
    /// else of the Braincode home): the prompt carries the skill, then the task. With no
    /// task, the skill is applied to the project.
    #[arg(long, value_name = "ID", conflicts_with = "resume")]
    pub skill: Option<String>,
    /// Print the plan (routing, workers, todos) and stop: no tools run, nothing is saved.
    #[arg(long)]
    pub dry_run: bool,
    /// Plan with the deterministic heuristic instead of the routeBrain model.
    #[arg(long, alias = "no-router", conflicts_with = "team_test")]
    pub heuristic: bool,
    /// Every routed role answers the task on its own (the router is skipped): compare the
    /// roles, and the models behind them, on one task.
    #[arg(long)]
    pub team_test: bool,
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
    /// Allow every tool, commands included: commands run in the OS sandbox; policy denials still
    /// apply, and protected paths need a person.
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
    /// The id of the new session (for programs that start runs and follow their journal,
    /// such as `braincode fleet worker`); refused when a session of that id exists.
    #[arg(long, value_name = "ID", hide = true, conflicts_with_all = ["session", "continue_latest", "resume"])]
    pub session_id: Option<SessionId>,
    /// Continue this project's latest session (the most recently active one whose runs were
    /// made in the project root).
    #[arg(long = "continue", short = 'c', conflicts_with = "session")]
    pub continue_latest: bool,
    /// Resume the interrupted (killed, crashed or cancelled) last run of a session (id or
    /// unique prefix): what it finished is reused from its journal — finished workers are not
    /// run again, the primary goes on from its last completed turn — and the rest runs.
    /// The run goes on as it started (same prompt, project, brain, mode, permissions and
    /// routing, from its journal), so the flags that would change those are refused with it;
    /// a permission flag is accepted when it is the one the run started with (a script that
    /// ran `--yes` can resume with `--yes`).
    #[arg(
        long,
        value_name = "SESSION",
        conflicts_with_all = [
            "session", "continue_latest", "prompt_file", "dry_run", "heuristic", "team_test", "brain", "mode",
            "project", "trust", "allow_network", "max_tokens", "max_cost",
        ]
    )]
    pub resume: Option<String>,
    /// Project root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Trust this project first (its hooks, MCP servers, settings and checks may run); the
    /// same as `braincode trust` before the run.
    #[arg(long)]
    pub trust: bool,
    /// Let commands reach the network (they run without it otherwise); `=registries`: only
    /// the package registries (and `sandbox.networkAllow` names), through the network
    /// allowlist, every connection journaled.
    #[arg(
        long,
        value_name = "WHAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "all",
        value_parser = ["all", "registries"]
    )]
    pub allow_network: Option<String>,
    /// Set the project's dependencies up (`cargo fetch`, a `.venv` with the test extras, `npm
    /// ci`, `go mod download`) before its first checks, in the sandbox, the network limited to
    /// the package registries; not again while the lockfiles do not change.
    #[arg(long)]
    pub fetch_deps: bool,
    /// Stop the run once its model calls used this many tokens (input, output and cache,
    /// every agent): workers are cancelled and the answer says what was done (exit 7).
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Stop the run once it cost this many US dollars, priced with models.json `pricing`
    /// (exit 7, like --max-tokens).
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost: Option<f64>,
}

impl RunArgs {
    /// `--allow-network=registries`.
    fn network_allowlist(&self) -> bool {
        self.allow_network.as_deref() == Some("registries")
    }
}

/// A `--max-cost`-style amount: US dollars above 0 (a leading `$` is allowed).
pub(crate) fn parse_usd(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(format!(
            "{text:?} is not an amount: give US dollars above 0, such as 0.50"
        )),
    }
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

/// Where the prompt was read from, for error messages.
fn prompt_source(args: &RunArgs) -> String {
    match &args.prompt_file {
        Some(path) => format!("prompt file {}", path.display()),
        None if is_stdin_prompt(&args.prompt) => "the prompt on stdin".to_string(),
        None => "the prompt".to_string(),
    }
}

fn is_stdin_prompt(words: &[String]) -> bool {
    words.len() == 1 && words[0] == "-"
}

/// Checks that `bytes` are UTF-8 text and says where they are not.
fn utf8_prompt(bytes: Vec<u8>, source: &str) -> anyhow::Result<String> {
    String::from_utf8(bytes).map_err(|err| {
        let offset = err.utf8_error().valid_up_to();
        anyhow::anyhow!(
            "{source} is not UTF-8 text (invalid byte at offset {offset}); convert it, e.g. `iconv -t UTF-8`, and retry"
        )
    })
}

/// The prompt: the words, stdin (`-`) or `--prompt-file`.
fn read_prompt(args: &RunArgs) -> anyhow::Result<String> {
    let source = prompt_source(args);
    let prompt = if let Some(path) = &args.prompt_file {
        let bytes = std::fs::read(path).map_err(|err| {
            anyhow::anyhow!(
                "cannot read {source}: {err}; check the path (relative paths start at the current directory)"
            )
        })?;
        utf8_prompt(bytes, &source)?
    } else if is_stdin_prompt(&args.prompt) {
        let mut stdin = std::io::stdin().lock();
        if stdin.is_terminal() {
            eprintln!("reading the prompt from stdin (end it with Ctrl-D)…");
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut stdin, &mut bytes)
            .map_err(|err| anyhow::anyhow!("cannot read {source}: {err}"))?;
        utf8_prompt(bytes, &source)?
    } else {
        args.prompt.join(" ")
    };
    if prompt.trim().is_empty() && args.skill.is_none() {
        anyhow::bail!(
            "{source} is empty: say what to do, e.g. `braincode run \"explain src/main.rs\"`"
        );
    }
    Ok(prompt)
}

/// Runs the command.
pub fn execute(args: RunArgs) -> anyhow::Result<ExitCode> {
    if args.prompt.len() > 1 && args.prompt.iter().any(|word| word == "-") {
        // A usage error (exit 2), like the ones clap reports.
        eprintln!(
            "error: `-` reads the prompt from stdin and cannot be mixed with prompt words; pass either `-` alone or the words"
        );
        return Ok(ExitCode::from(2));
    }
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    if let Some(prefix) = &args.resume {
        return resume(&home, prefix, &args);
    }
    let prompt = read_prompt(&args)?;
    let project_root = super::project_root(args.project.as_deref())?;
    if args.trust && !args.dry_run {
        eprintln!("{}", super::trust::trust_and_report(&home, &project_root)?);
    }
    let session_id: Option<SessionId> = match &args.session {
        Some(prefix) => Some(resolve_session(&home, prefix)?),
        None if args.continue_latest => {
            let id = latest_session_for_project(&home, &project_root)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "no earlier session in {}; start one with `braincode run <task>`",
                    project_root.display()
                )
            })?;
            if !args.json && !args.events && !args.summary_only {
                eprintln!(
                    "continuing session {}, the latest in this project",
                    id.short()
                );
            }
            Some(id)
        }
        None => match &args.session_id {
            Some(id) if home.session_path(id).exists() => {
                anyhow::bail!("session {id} exists already: --session-id names a new session")
            }
            Some(id) => Some(id.clone()),
            // Chosen here, so that what the signal handlers print can name it.
            None => None,
        },
    };
    let session_id = session_id.unwrap_or_else(braincode_runtime::new_session_id);
    let mut request = RunRequest {
        session_id: Some(session_id),
        brain_id: args.brain.clone(),
        mode: args.mode,
        permission: args.permission(),
        allow_network: args.allow_network.as_deref() == Some("all"),
        fetch_deps: args.fetch_deps,
        network_allowlist: args.network_allowlist(),
        routing: if args.heuristic {
            RoutingChoice::HeuristicOnly
        } else if args.team_test {
            RoutingChoice::TeamTest
        } else {
            RoutingChoice::Auto
        },
        budget: braincode_runtime::RunBudget {
            max_tokens: args.max_tokens,
            max_cost_usd: args.max_cost,
        },
        ..RunRequest::new(prompt, project_root)
    };
    // The configuration is loaded once, here: the brain named below, the models the
    // embedded-model check looks at and the run itself all come from this one load.
    let loaded = RunConfig::load(&home, &LoadOptions::from(&request));
    if let (Some(id), Ok(config)) = (&args.skill, &loaded) {
        let skill = braincode_config::find_skill(&config.support.skills, id)?;
        request.prompt = braincode_config::skill_prompt(skill, &request.prompt);
    }
    if let Ok(config) = &loaded
        && let Some(reason) = &config.brain_reason
        && !args.json
        && !args.events
        && !args.summary_only
    {
        // Say which brain runs when the user chose none (a key found picks its provider's).
        eprintln!("using brain {:?}: {reason}", config.brain_id);
    }
    let runtime = super::tokio_runtime()?;
    if args.dry_run {
        return runtime.block_on(dry_run(request, home, loaded?, args.json));
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
    // A run that cannot start for lack of the embedded model is still journaled (a failed
    // session, with the reason), and its report says what is missing and how to get it.
    // A configuration that does not load is the run's own error (journaled, with the file and
    // line); nothing to fetch for it.
    let loaded = loaded.map_err(StartError::from).and_then(|config| {
        if args.heuristic {
            return Ok(config);
        }
        local::ensure_local_models(&home, &config)
            .map(|()| config)
            .map_err(StartError::Refused)
    });
    run_to_exit(runtime, request, home, &args, Resumed::No, loaded)
}

/// `run --resume`: the interrupted last run of a session, again, reusing what it finished.
fn resume(home: &Home, prefix: &str, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let session = resolve_session(home, prefix)?;
    let journaled = JournaledRun::load_resumable(home, &session)?;
    journaled.check_resumable(&session)?;
    let request = journaled.request.clone();
    let flagged = args.read_only || args.allow_edits || args.yes;
    if flagged && args.permission() != request.permission {
        anyhow::bail!(
            "run {} of session {session} started with {}; --resume goes on with the permissions it started with, so pass that flag or none",
            journaled.index,
            match request.permission {
                PermissionMode::ReadOnly => "read-only tools (no permission flag)",
                PermissionMode::Ask =>
                    "ask mode in the TUI (resume it there: `braincode --continue`)",
                PermissionMode::AllowEdits => "--allow-edits",
                PermissionMode::Yes => "--yes",
            }
        );
    }
    if !request.project_root.is_dir() {
        anyhow::bail!(
            "the project of run {} of session {session} ({}) is no longer a directory",
            journaled.index,
            request.project_root.display()
        );
    }
    if !args.json && !args.events && !args.summary_only {
        eprintln!(
            "resuming run {} of session {} ({}): finished work is reused from the journal",
            journaled.index,
            session.short(),
            match journaled.status {
                Some(_) => "cancelled",
                None => "interrupted",
            }
        );
    }
    let loaded = RunConfig::load(home, &LoadOptions::from(&request));
    if let Ok(config) = &loaded
        && request.routing == RoutingChoice::Auto
    {
        // The run goes on later, once the model is there: nothing is journaled.
        local::ensure_local_models(home, config).map_err(anyhow::Error::msg)?;
    }
    let runtime = super::tokio_runtime()?;
    run_to_exit(
        runtime,
        request,
        home.clone(),
        args,
        Resumed::Run(Box::new(journaled)),
        loaded.map_err(StartError::from),
    )
}

/// Whether a run goes on with an interrupted one (`--resume`).
enum Resumed {
    /// A new run.
    No,
    /// The interrupted run, again.
    Run(Box<JournaledRun>),
}

/// Runs `request` on `runtime` and waits until nothing it started is alive.
fn run_to_exit(
    runtime: tokio::runtime::Runtime,
    request: RunRequest,
    home: Home,
    args: &RunArgs,
    resumed: Resumed,
    loaded: Result<RunConfig, StartError>,
) -> anyhow::Result<ExitCode> {
    let result = runtime.block_on(async {
        let result = real_run(request, home, args, resumed, loaded).await;
        // The report is out: wait until nothing Braincode started is alive (SIGKILL after a
        // grace period), with the signal handlers still listening, so a second signal still
        // quits at once.
        let _ =
            tokio::task::spawn_blocking(braincode_tools::exec::process::settle_all_groups).await;
        result
    });
    // Tasks still holding child processes are dropped here (their guards kill the groups);
    // what that hands to the kill escalation is settled before the process exits.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    braincode_tools::exec::process::settle_all_groups();
    result
}

/// How long leftover tasks get to stop when the run is over.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

async fn dry_run(
    request: RunRequest,
    home: Home,
    config: RunConfig,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let plan = Box::pin(plan_loaded(request, RunServices::new(home), config)).await?;
    let mut stdout = std::io::stdout().lock();
    if json {
        writeln!(stdout, "{}", serde_json::to_string_pretty(&plan)?)?;
    } else {
        write!(stdout, "{}", plan_view::format_plan(&plan))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn real_run(
    request: RunRequest,
    home: Home,
    args: &RunArgs,
    resumed: Resumed,
    loaded: Result<RunConfig, StartError>,
) -> anyhow::Result<ExitCode> {
    let session = request.session_id.clone();
    let mut services = RunServices::new(home);
    if let Resumed::Run(journaled) = resumed {
        services.tape = Some(Arc::new(journaled.tape(TapeMode::Resume)));
    }
    let printer: Arc<dyn braincode_runtime::EventSubscriber> = if args.events {
        Arc::new(live::JsonLines)
    } else {
        Arc::new(live::Progress::new(
            std::io::stderr().is_terminal() && !args.json && !args.summary_only,
            !args.summary_only,
        ))
    };
    services.subscribers.push(printer);
    let received = signals::cancel_on_signals(
        services.cancel.clone(),
        services.cancel_reason.clone(),
        session,
    )?;

    let report = Box::pin(run_loaded(request, services, loaded)).await;
    let printed = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&report)?)
    } else if args.summary_only {
        format!("{}\n", report.model_summary.trim())
    } else if !args.events {
        report::format_report(&report)
    } else {
        String::new()
    };
    let signal = received.get().copied();
    let written = {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(redact_secrets(&printed).as_bytes())
            .and_then(|()| stdout.flush())
    };
    match written {
        Ok(()) => {}
        // After a hangup the terminal may be gone; the journal still has the report.
        Err(_) if signal == Some(signals::Signal::Hangup) => {}
        Err(err) => return Err(anyhow::anyhow!("cannot print the report: {err}")),
    }
    let code = match (report.status, signal) {
        (FinalStatus::Aborted, Some(signal)) => signal.exit_code(),
        _ => report.exit_code(),
    };
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
