//! `braincode checks list|run`: the checks a change in this project selects (any language:
//! Cargo, Python, Node, Go, Make, and `.braincode/checks.json`), and running them the way a
//! run does — in the OS sandbox, one process group each, with the configured timeout and
//! output cap.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use braincode_protocol::{CheckStatus, CheckSummary};
use braincode_runtime::{CheckContext, missing_results, outcome_reason, run_specs};
use braincode_runtime::{LoadedChecks, load_checks};
use braincode_tools::FetchDependencies;
use braincode_tools::checks::{CheckSpec, Selection};
use serde_json::json;

/// `braincode checks` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ChecksCommand {
    /// List the checks this project has, cheapest first, and what configures them.
    List(ListArgs),
    /// Run the checks the current changes select (or every check with --all).
    Run(RunArgs),
}

/// `braincode checks list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory (default: the current directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// `braincode checks run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Run every check of the project, not only those the changed files select.
    #[arg(long)]
    pub all: bool,
    /// Run the checks without the OS sandbox (they can then write anywhere and use the
    /// network).
    #[arg(long)]
    pub no_sandbox: bool,
    /// First set up the project's dependencies (`cargo fetch`, a `.venv` with the test
    /// extras, `npm ci`, `go mod download`) in the sandbox, the network limited to the package
    /// registries; not again while the lockfiles do not change.
    #[arg(long)]
    pub fetch_deps: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory (default: the current directory).
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// Runs the command.
pub fn execute(cmd: ChecksCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ChecksCommand::List(args) => list(&args),
        ChecksCommand::Run(args) => run(&args),
    }
}

/// The checks configuration a run in `root` would use, its problem said on stderr.
fn configuration(
    home: &braincode_config::Home,
    root: &Path,
) -> anyhow::Result<(LoadedChecks, braincode_config::Settings)> {
    let tools = braincode_runtime::read_tools_file(home)?.unwrap_or_default();
    let settings = braincode_runtime::load_settings(home)?;
    let (trust, _) = braincode_config::check_trust(home, root);
    let loaded = load_checks(root, &tools, &trust);
    if let Some(problem) = &loaded.problem {
        eprintln!("warning: {problem}");
    }
    if !trust.is_trusted() && root.join(braincode_runtime::PROJECT_CHECKS_FILE).exists() {
        eprintln!(
            "note: {} is ignored until you trust this project (braincode trust)",
            braincode_runtime::PROJECT_CHECKS_FILE
        );
    }
    Ok((loaded, settings))
}

fn spec_json(check: &CheckSpec) -> serde_json::Value {
    json!({
        "name": check.name,
        "ecosystem": check.ecosystem.as_str(),
        "kind": format!("{:?}", check.kind).to_lowercase(),
        "command": check.display,
        "dir": check.dir,
    })
}

fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let root = super::project_root(args.project.as_deref())?;
    let home = braincode_config::Home::from_env()?;
    let (loaded, _) = configuration(&home, &root)?;
    let discovery = braincode_tools::checks::list(&root, &loaded.config, &loaded.overrides);
    if args.json {
        let doc = json!({
            "enabled": loaded.config.enabled,
            "checks": discovery.checks.iter().map(spec_json).collect::<Vec<_>>(),
            "notes": discovery.notes,
            "timeoutMs": loaded.config.timeout_ms,
            "maxOutputBytes": loaded.config.max_output_bytes,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !loaded.config.enabled {
        println!("Checks are disabled (tools.json or .braincode/checks.json: \"enabled\": false).");
    }
    if discovery.checks.is_empty() {
        println!("No checks found in {}.", root.display());
    }
    for check in &discovery.checks {
        let dir = if check.dir.is_empty() {
            String::new()
        } else {
            format!("  (in {})", check.dir)
        };
        println!(
            "{:<18} {:<9} {}{dir}",
            check.name,
            format!("{:?}", check.kind).to_lowercase(),
            check.display
        );
    }
    for note in &discovery.notes {
        println!("note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}

/// The paths `git status` reports as changed (tracked or not), relative to the root.
fn changed_paths(root: &Path) -> anyhow::Result<Vec<String>> {
    let output = braincode_tools::git_safe::git_command(
        root,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )
    .map_err(anyhow::Error::msg)?
    .stdin(std::process::Stdio::null())
    .output()?;
    if !output.status.success() {
        anyhow::bail!(
            "{} is not a git repository, so there are no changes to select checks by; run `braincode checks run --all`",
            root.display()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut paths = Vec::new();
    let mut fields = text.split('\0').filter(|f| f.len() > 3);
    while let Some(field) = fields.next() {
        if field.starts_with('R') || field.starts_with('C') {
            fields.next();
        }
        paths.push(field[3..].to_string());
    }
    Ok(paths)
}

/// In an untrusted project, asks the person at the terminal whether to run `checks` (the
/// project's own code) this once. `false` without a terminal to ask on.
fn person_approves_untrusted(checks: &[CheckSpec]) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(false);
    }
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "This project is not trusted, and its checks are its own code:"
    )?;
    for check in checks {
        writeln!(err, "  {}", check.display)?;
    }
    write!(err, "Run them once, in the OS sandbox? [y/N] ")?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let root = super::project_root(args.project.as_deref())?;
    let home = braincode_config::Home::from_env()?;
    let (loaded, settings) = configuration(&home, &root)?;
    let changed = if args.all {
        Vec::new()
    } else {
        changed_paths(&root)?
    };
    // Made again after the dependency step: a `.venv` it created changes the commands.
    let select = || -> Selection {
        if args.all {
            let discovery = braincode_tools::checks::list(&root, &loaded.config, &loaded.overrides);
            let mut selection =
                braincode_tools::checks::select(&root, &[], &loaded.config, &loaded.overrides);
            selection.skipped = (!loaded.config.enabled).then(|| "checks disabled".to_string());
            selection.checks = discovery.checks;
            selection.reason = "every check of the project (--all)".into();
            selection
        } else {
            let changed: Vec<&str> = changed.iter().map(String::as_str).collect();
            braincode_tools::checks::select(&root, &changed, &loaded.config, &loaded.overrides)
        }
    };
    let mut selection = select();
    let sandbox = if args.no_sandbox {
        None
    } else {
        match braincode_runtime::project_sandbox(&home, &root, &settings) {
            Ok(sandbox) => Some(sandbox),
            Err(reason) => anyhow::bail!(
                "the OS sandbox is not available ({reason}); install bubblewrap, or run the checks unconfined with --no-sandbox"
            ),
        }
    };
    let mut summary = selection.summary();
    let will_run = selection.skipped.is_none() && !selection.checks.is_empty();
    if will_run && !loaded.trusted && !person_approves_untrusted(&selection.checks)? {
        eprintln!(
            "checks not run: {}",
            braincode_runtime::untrusted_checks_reason()
                .replace(", or approve them for this run in the TUI", "")
        );
        return Ok(ExitCode::from(2));
    }
    if selection.skipped.is_none() && !(selection.checks.is_empty() && selection.missing.is_empty())
    {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let interrupt = cancel.clone();
        let quiet = args.json;
        let fetch = match loaded.config.fetch_dependencies {
            FetchDependencies::Always => true,
            FetchDependencies::Ask => args.fetch_deps,
            FetchDependencies::Never => {
                if args.fetch_deps {
                    eprintln!(
                        "--fetch-deps ignored: tools.json sets checks.fetchDependencies to never"
                    );
                }
                false
            }
        };
        if fetch && sandbox.is_none() {
            anyhow::bail!(
                "--fetch-deps sets dependencies up in the OS sandbox; it cannot be combined with --no-sandbox"
            );
        }
        let ran = runtime.block_on(async {
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    interrupt.cancel();
                }
            });
            if fetch {
                let steps = braincode_runtime::dependency_steps(&root, &selection.checks);
                for step in &steps {
                    if !quiet {
                        eprintln!("setting up {} …", step.label);
                    }
                }
                match braincode_runtime::set_up_dependencies(
                    &home,
                    &root,
                    &settings,
                    &steps,
                    braincode_runtime::registries_allowlist(&settings),
                    &cancel,
                )
                .await
                {
                    Ok(report) => {
                        if report.ran() {
                            selection = select();
                        }
                        summary.setup = report.results;
                        summary.network = report.network;
                    }
                    Err(reason) => eprintln!("dependencies not set up: {reason}"),
                }
            }
            run_specs(
                &selection.checks,
                &CheckContext {
                    root: &root,
                    sandbox: sandbox.as_deref(),
                    cancel: &cancel,
                    config: &loaded.config,
                },
                |check| {
                    if !quiet {
                        eprintln!("running {} …", check.display);
                    }
                },
            )
            .await
        });
        let Ok(ran) = ran else {
            eprintln!("checks cancelled");
            return Ok(ExitCode::from(130));
        };
        summary.results = missing_results(&selection);
        summary.results.extend(ran.results);
        summary.status = CheckStatus::of_results(&summary.results);
        summary.reason = Some(outcome_reason(
            &selection.reason,
            &summary.results,
            &ran.not_run,
        ));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary);
    }
    Ok(match summary.status {
        CheckStatus::Failed => ExitCode::from(1),
        // Nothing failed on the code, but not everything could be checked.
        CheckStatus::CouldNotRun => ExitCode::from(3),
        CheckStatus::Passed | CheckStatus::Skipped => ExitCode::SUCCESS,
    })
}

fn print_summary(summary: &CheckSummary) {
    for step in &summary.setup {
        let seconds = step.duration_ms as f64 / 1_000.0;
        if step.passed {
            println!("✓ {} ({seconds:.1}s)", step.name);
        } else {
            println!("✗ {} ({seconds:.1}s)", step.name);
            let lines: Vec<&str> = step.output_tail.lines().collect();
            for line in &lines[lines.len().saturating_sub(15)..] {
                println!("    {line}");
            }
        }
    }
    for line in summary.network.iter().filter(|l| l.starts_with("refused")) {
        println!("! network {line}");
    }
    for result in &summary.results {
        let seconds = result.duration_ms as f64 / 1_000.0;
        if result.passed {
            println!("✓ {} ({seconds:.1}s)", result.name);
            continue;
        }
        let how = match (result.timed_out, result.exit_code) {
            (true, _) => "timed out".to_string(),
            (false, Some(code)) => format!("exit {code}"),
            (false, None) => "did not run".to_string(),
        };
        if let Some(cause) = &result.environment {
            println!(
                "! {} could not run ({how}, {seconds:.1}s): {cause}",
                result.name
            );
            continue;
        }
        println!("✗ {} ({how}, {seconds:.1}s)", result.name);
        let lines: Vec<&str> = result.output_tail.lines().collect();
        for line in &lines[lines.len().saturating_sub(30)..] {
            println!("    {line}");
        }
    }
    let status = summary.status.label();
    match &summary.reason {
        Some(reason) => println!("checks {status}: {reason}"),
        None => println!("checks {status}"),
    }
}
