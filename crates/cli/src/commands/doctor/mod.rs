//! `braincode doctor`: checks the home, every config file, the default brain, credentials,
//! git and the project, and gives a fix for each problem. Exit code 1 when anything is an
//! error; warnings alone exit 0.

mod brain;
mod checks;
mod mcp;
mod project_checks;
mod system;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use braincode_config::{AuthStore, Home};
use braincode_runtime::{
    load_brain_presets, load_hook_sources, load_models, load_settings, load_trust,
    permission_policy, read_tools_file,
};
use serde::Serialize;

use super::sessions::project_root_of;
use brain::check_brain;
use checks::Checks;
use system::{check_git, check_home};

/// Arguments of `braincode doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory to check (default: the current directory's project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Check MCP servers only, connecting to each one that may start (without it, doctor
    /// reads their configuration and starts nothing).
    #[arg(long, conflicts_with = "checks")]
    pub mcp: bool,
    /// Check the project's checks only (what the fix loop runs after an edit): each command,
    /// whether its program is found, whether the project is trusted to run it. Runs nothing.
    #[arg(long)]
    pub checks: bool,
    /// Rewrite models.json and brains.json written by the TypeScript Braincode in today's
    /// form, each after a backup copy (`<file>.bak-<time>`); reading them migrates them in
    /// memory anyway.
    #[arg(long)]
    pub migrate: bool,
}

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Works, but something is missing or degraded.
    Warning,
    /// Braincode cannot work this way.
    Error,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorCheck {
    /// Stable id (`settings`, `model:openai/gpt-5.5`, …).
    pub id: String,
    /// Outcome.
    pub status: CheckStatus,
    /// What was found.
    pub message: String,
    /// What to do, when something is wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Worst check status.
    pub status: CheckStatus,
    /// The home that was checked.
    pub home: String,
    /// The project that was checked.
    pub project: String,
    /// Every check, in order.
    pub checks: Vec<DoctorCheck>,
}

/// Runs the command.
pub fn execute(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let project = match &args.project {
        Some(dir) => project_root_of(dir),
        None => project_root_of(&std::env::current_dir()?),
    };
    if args.migrate {
        let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S").to_string();
        let applied = braincode_config::migrate::apply(&home, &stamp)?;
        if applied.is_empty() {
            println!("nothing to migrate: models.json and brains.json are in today's form");
        }
        for file in &applied {
            println!(
                "migrated {} ({} change(s); the old file is {})",
                file.path.display(),
                file.migration.changes.len() + file.migration.unsupported.len(),
                file.backup.display()
            );
            for change in &file.migration.changes {
                println!("  {change}");
            }
            for model in &file.migration.unsupported {
                println!("  removed {} ({}): {}", model.id, model.api, model.reason);
            }
        }
    }
    let report = if args.mcp {
        diagnose_mcp(&home, &project)
    } else if args.checks {
        diagnose_checks(&home, &project)
    } else {
        diagnose(&home, &project)
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.status == CheckStatus::Error {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn file_state(path: &Path) -> &'static str {
    if path.is_file() {
        "valid"
    } else {
        "not present; defaults are used"
    }
}

/// Runs every check.
pub fn diagnose(home: &Home, project: &Path) -> DoctorReport {
    let mut checks = Checks(Vec::new());
    check_home(home, &mut checks);

    let settings = match load_settings(home) {
        Ok(settings) => {
            checks.ok(
                "settings",
                format!(
                    "settings.json {} (mode {}, brain {:?})",
                    file_state(&home.settings_path()),
                    settings.mode,
                    settings.default_brain_id
                ),
            );
            Some(settings)
        }
        Err(err) => {
            checks.run_config_error("settings", &err);
            None
        }
    };
    let brains = match load_brain_presets(home) {
        Ok(brains) => {
            checks.ok(
                "brains",
                format!(
                    "brains.json {} ({} presets)",
                    file_state(&home.brains_path()),
                    brains.len()
                ),
            );
            Some(brains)
        }
        Err(err) => {
            checks.run_config_error("brains", &err);
            None
        }
    };
    let models = match load_models(home) {
        Ok(models) => {
            checks.ok(
                "models",
                format!(
                    "models.json {} ({} models)",
                    file_state(&home.models_path()),
                    models.len()
                ),
            );
            Some(models)
        }
        Err(err) => {
            checks.run_config_error("models", &err);
            None
        }
    };
    match braincode_config::migrate::pending(home) {
        Ok(pending) => {
            for file in pending {
                let name = file
                    .path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if !file.migration.changes.is_empty() {
                    checks.warn(
                        "migration",
                        format!(
                            "{name} is in the TypeScript Braincode's form; read as migrated in memory: {}",
                            file.migration.changes.join("; ")
                        ),
                        "braincode doctor --migrate   (rewrites it after a backup copy)",
                    );
                }
                for model in &file.migration.unsupported {
                    checks.warn(
                        "models",
                        format!(
                            "{} in {name} is not used: {} ({})",
                            model.id, model.reason, model.api
                        ),
                        "remove it, or give it an api Braincode speaks (openai-completions, openai-responses, anthropic-messages, google-generative-ai, azure-openai-responses)",
                    );
                }
            }
        }
        Err(err) => checks.warn("migration", err.to_string(), "fix the file"),
    }
    // The same reader and policy a run uses: what doctor calls valid, a run accepts.
    let tools = read_tools_file(home).and_then(|tools| {
        if let Some(tools) = &tools {
            permission_policy(home, tools)?;
        }
        Ok(tools)
    });
    match tools {
        Ok(Some(tools)) => checks.ok(
            "tools",
            format!(
                "tools.json valid ({} tool entries, {} path rule(s), {} command rule(s))",
                tools.tools.len(),
                tools.permissions.paths.len(),
                tools.permissions.commands.len()
            ),
        ),
        Ok(None) => checks.ok("tools", "tools.json not present; defaults are used"),
        Err(err) => checks.run_config_error("tools", &err),
    }
    // Trust is decided once: the hooks and MCP checks below read with this verdict.
    let (trust, trust_error) = load_trust(home, project);
    match load_hook_sources(home, project, &trust) {
        Ok(sources) => {
            let handlers: usize = sources.iter().map(|s| s.file.handler_count()).sum();
            let warnings: Vec<String> = sources.iter().flat_map(|s| s.warnings.clone()).collect();
            let untrusted = sources
                .iter()
                .flat_map(|s| s.file.hooks.events.values().flatten())
                .flat_map(|g| g.hooks.iter())
                .filter(|h| h.enabled && !h.trusted && h.has_command())
                .count();
            if !warnings.is_empty() {
                checks.warn(
                    "hooks",
                    warnings.join("; "),
                    "remove or rename the ignored entries",
                );
            } else if untrusted > 0 {
                checks.warn(
                    "hooks",
                    format!(
                        "{handlers} hook handler(s), {untrusted} not trusted (they are skipped)"
                    ),
                    "set \"trusted\": true on the handlers of ~/.braincode/hooks.json you have read and want to run",
                );
            } else {
                checks.ok("hooks", format!("{handlers} hook handler(s)"));
            }
        }
        Err(err) => checks.run_config_error("hooks", &err),
    }
    mcp::check_mcp(home, project, &trust, settings.as_ref(), false, &mut checks);
    match (trust, trust_error) {
        (_, Some(err)) => checks.run_config_error("trust", &err),
        (trust, None) => match trust.notice() {
            Some(notice) => checks.warn(
                "trust",
                notice,
                format!(
                    "read the named files, then `braincode trust {}`",
                    trust.root.display()
                ),
            ),
            None => checks.ok(
                "trust",
                if trust.state == braincode_config::TrustState::Trusted {
                    "project trusted; its configuration files are unchanged"
                } else {
                    "the project has no hooks, MCP servers, settings or checks to trust"
                },
            ),
        },
    }
    let sandbox = braincode_sandbox::status();
    if sandbox.kind == braincode_sandbox::SandboxKind::Unavailable {
        checks.warn(
            "sandbox",
            format!("no OS sandbox: {}", sandbox.detail),
            "install bubblewrap (`apt-get install bubblewrap`) or use a kernel with Landlock; until then every command needs your approval",
        );
    } else if sandbox.kind == braincode_sandbox::SandboxKind::Landlock {
        checks.warn(
            "sandbox",
            format!(
                "commands run confined by {}, which is partial: secret files inside the project are readable by commands, protected paths are only checked after each command, host UNIX sockets need Landlock ABI 9",
                sandbox.detail
            ),
            "install bubblewrap where user namespaces work; until then --yes and --allow-edits run commands only with \"sandbox\": {\"allowPartial\": true} in settings.json",
        );
    } else {
        checks.ok(
            "sandbox",
            format!("commands run confined by {}", sandbox.detail),
        );
    }
    match AuthStore::new(home).status() {
        Ok(status) => checks.ok(
            "auth",
            if home.auth_path().is_file() {
                format!(
                    "auth.json is private (0600), {} provider(s)",
                    status.providers.len()
                )
            } else {
                "auth.json not present (keys come from the environment)".to_string()
            },
        ),
        Err(err) => checks.config_error("auth", &err),
    }

    if let (Some(settings), Some(brains), Some(models)) = (&settings, &brains, &models) {
        check_brain(home, settings, brains, models, &mut checks);
    } else {
        checks.push(
            "brain",
            CheckStatus::Warning,
            "default brain not checked: fix the files above first",
            None,
        );
    }
    check_git(project, &mut checks);
    report_of(home, project, checks)
}

/// The MCP checks alone, connecting to every server that may start (`doctor --mcp`).
pub fn diagnose_mcp(home: &Home, project: &Path) -> DoctorReport {
    let mut checks = Checks(Vec::new());
    let settings = match load_settings(home) {
        Ok(settings) => Some(settings),
        Err(err) => {
            checks.run_config_error("settings", &err);
            None
        }
    };
    let (trust, _) = braincode_config::check_trust(home, project);
    mcp::check_mcp(home, project, &trust, settings.as_ref(), true, &mut checks);
    report_of(home, project, checks)
}

/// The project's checks alone (`doctor --checks`); nothing is run.
pub fn diagnose_checks(home: &Home, project: &Path) -> DoctorReport {
    let mut checks = Checks(Vec::new());
    project_checks::check_project_checks(home, project, &mut checks);
    report_of(home, project, checks)
}

fn report_of(home: &Home, project: &Path, checks: Checks) -> DoctorReport {
    let status = checks
        .0
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(CheckStatus::Ok);
    DoctorReport {
        status,
        home: home.root().display().to_string(),
        project: project.display().to_string(),
        checks: checks.0,
    }
}

fn print_report(report: &DoctorReport) {
    println!("Braincode Doctor");
    println!("home: {}   project: {}", report.home, report.project);
    println!();
    for check in &report.checks {
        let mark = match check.status {
            CheckStatus::Ok => "✓",
            CheckStatus::Warning => "!",
            CheckStatus::Error => "✗",
        };
        println!("{mark} {:<10} {}", check.id, check.message);
        if let Some(fix) = &check.fix {
            println!("  → {fix}");
        }
    }
    let errors = report
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Error)
        .count();
    let warnings = report
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Warning)
        .count();
    println!();
    match report.status {
        CheckStatus::Ok => println!("Result: all {} checks passed.", report.checks.len()),
        CheckStatus::Warning => println!("Result: usable, with {warnings} warning(s)."),
        CheckStatus::Error => {
            println!("Result: {errors} error(s), {warnings} warning(s); fix the ✗ lines first.");
        }
    }
}
