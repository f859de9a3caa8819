//! `braincode doctor`: checks the home, every config file, the default brain, credentials,
//! git and the project, and gives a fix for each problem. Exit code 1 when anything is an
//! error; warnings alone exit 0.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use braincode_config::{
    AuthStore, ConfigError, Home, KeySource, Settings, load_brains, load_hooks, load_mcp_servers,
    load_models, load_settings, read_json_file, resolve_api_key_with_source,
};
use braincode_protocol::{ModelDefinition, Role};
use serde::Serialize;

use super::sessions::project_root_of;

/// Arguments of `braincode doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory to check (default: the current directory's project).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
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

struct Checks(Vec<DoctorCheck>);

impl Checks {
    fn push(
        &mut self,
        id: impl Into<String>,
        status: CheckStatus,
        message: impl Into<String>,
        fix: Option<String>,
    ) {
        self.0.push(DoctorCheck {
            id: id.into(),
            status,
            message: message.into(),
            fix,
        });
    }

    fn ok(&mut self, id: impl Into<String>, message: impl Into<String>) {
        self.push(id, CheckStatus::Ok, message, None);
    }

    fn warn(&mut self, id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) {
        self.push(id, CheckStatus::Warning, message, Some(fix.into()));
    }

    fn error(&mut self, id: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) {
        self.push(id, CheckStatus::Error, message, Some(fix.into()));
    }

    /// Records a config-file error with a fix that points at the exact place.
    fn config_error(&mut self, id: &str, err: &ConfigError) {
        let fix = match err {
            ConfigError::InsecurePermissions { path, .. } => {
                format!("chmod 600 {}", path.display())
            }
            ConfigError::Syntax { path, location, .. }
            | ConfigError::Field { path, location, .. }
            | ConfigError::Invalid { path, location, .. } => format!(
                "edit {}{location}{}, or move the file away to use the defaults",
                path.display(),
                location
                    .field
                    .as_deref()
                    .map(|f| format!(" (field {f})"))
                    .unwrap_or_default()
            ),
            other => match other.path() {
                Some(path) => format!("check that {} is a readable file", path.display()),
                None => "set BRAINCODE_HOME to a writable directory".into(),
            },
        };
        self.error(id, err.to_string(), fix);
    }
}

/// Runs the command.
pub fn execute(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let project = match &args.project {
        Some(dir) => project_root_of(dir),
        None => project_root_of(&std::env::current_dir()?),
    };
    let report = diagnose(&home, &project);
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
            checks.config_error("settings", &err);
            None
        }
    };
    let brains = match load_brains(home) {
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
            checks.config_error("brains", &err);
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
            checks.config_error("models", &err);
            None
        }
    };
    match read_json_file::<serde_json::Map<String, serde_json::Value>>(&home.tools_path()) {
        Ok(_) => checks.ok(
            "tools",
            format!("tools.json {}", file_state(&home.tools_path())),
        ),
        Err(err) => checks.config_error("tools", &err),
    }
    match load_hooks(home, project) {
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
        Err(err) => checks.config_error("hooks", &err),
    }
    let (servers, mcp_warnings) = load_mcp_servers(home, project);
    if !mcp_warnings.is_empty() {
        checks.warn(
            "mcp",
            mcp_warnings.join("; "),
            "fix the JSON of the named file (it is skipped until then)",
        );
    } else {
        checks.ok(
            "mcp",
            format!(
                "{} MCP server(s) configured (no live connection attempted)",
                servers.len()
            ),
        );
    }
    match braincode_config::check_trust(home, project) {
        (_, Some(err)) => checks.config_error("trust", &err),
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

fn check_home(home: &Home, checks: &mut Checks) {
    let root = home.root();
    match std::fs::metadata(root) {
        Ok(meta) if meta.is_dir() => match std::fs::read_dir(root) {
            // Runs write journals here: a home that can be read but not written loses them.
            // An unnamed temporary file tests that and leaves nothing behind.
            Ok(_) => match tempfile::tempfile_in(root) {
                Ok(_) => checks.ok(
                    "home",
                    format!("{} is readable and writable", root.display()),
                ),
                Err(err) => checks.error(
                    "home",
                    format!(
                        "{} is read-only ({err}): runs cannot save their sessions",
                        root.display()
                    ),
                    format!(
                        "make it writable (chmod u+w {}) or point BRAINCODE_HOME at a writable directory",
                        root.display()
                    ),
                ),
            },
            Err(err) => checks.error(
                "home",
                format!("{} cannot be read: {err}", root.display()),
                format!("chmod u+rwx {}", root.display()),
            ),
        },
        Ok(_) => checks.error(
            "home",
            format!("{} is not a directory", root.display()),
            format!(
                "move {} away, or set BRAINCODE_HOME to a directory",
                root.display()
            ),
        ),
        Err(_) => checks.ok(
            "home",
            format!(
                "{} does not exist yet (it is created on the first write; defaults are used)",
                root.display()
            ),
        ),
    }
}

fn check_brain(
    home: &Home,
    settings: &Settings,
    brains: &[braincode_brain::BrainPreset],
    models: &[ModelDefinition],
    checks: &mut Checks,
) {
    let brain = match braincode_brain::select_brain(brains, &settings.default_brain_id) {
        Ok(brain) => {
            checks.ok(
                "brain",
                format!("default brain {:?} resolves ({})", brain.id, brain.name),
            );
            brain
        }
        Err(err) => {
            checks.error(
                "brain",
                err.to_string(),
                format!(
                    "set defaultBrainId in {} to an existing brain, or fix brains.json",
                    home.settings_path().display()
                ),
            );
            return;
        }
    };
    // Which roles use each model, in first-use order.
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut note = |model: String, user: String| {
        if !uses.contains_key(&model) {
            order.push(model.clone());
        }
        uses.entry(model).or_default().push(user);
    };
    for model in brain.router_policy().chain() {
        note(model, "planner".into());
    }
    for role in Role::ALL {
        for model in brain.policy(role).chain() {
            note(model, role.as_str().to_string());
        }
    }
    let mut usable: BTreeMap<String, bool> = BTreeMap::new();
    for model_id in &order {
        let users = uses
            .get(model_id)
            .map(|u| {
                if u.len() > 4 {
                    format!("{} and {} more", u[..3].join(", "), u.len() - 3)
                } else {
                    u.join(", ")
                }
            })
            .unwrap_or_default();
        let id = format!("model:{model_id}");
        let Some(definition) = models.iter().find(|m| &m.id == model_id) else {
            checks.warn(
                id,
                format!(
                    "{model_id} (used by {users}) is not in the model catalogue; it is skipped"
                ),
                format!(
                    "add {model_id} to {} or change the brain",
                    home.models_path().display()
                ),
            );
            usable.insert(model_id.clone(), false);
            continue;
        };
        if definition.is_local() {
            match braincode_llm_local::resolve_model_path(definition, &home.models_dir()) {
                Ok(path) => checks.ok(
                    id,
                    format!("{model_id} (local) found at {}", path.display()),
                ),
                Err(_) => checks.warn(
                    id,
                    format!("{model_id} (local, used by {users}) is not pulled yet"),
                    "braincode models pull",
                ),
            }
            usable.insert(model_id.clone(), true);
            continue;
        }
        match resolve_api_key_with_source(
            home,
            &definition.provider,
            definition.api_key_env.as_deref(),
        ) {
            Ok(Some(found)) => {
                let source = match &found.source {
                    KeySource::AuthFile => "auth.json".to_string(),
                    KeySource::Env(name) => format!("${name}"),
                };
                checks.ok(
                    id,
                    format!(
                        "{model_id}: API key for {} from {source}",
                        definition.provider
                    ),
                );
                usable.insert(model_id.clone(), true);
            }
            Ok(None) => {
                let var = definition
                    .api_key_env
                    .clone()
                    .unwrap_or_else(|| braincode_config::provider_env_var(&definition.provider));
                checks.warn(
                    id,
                    format!(
                        "{model_id} (used by {users}): no API key for provider {}",
                        definition.provider
                    ),
                    format!(
                        "braincode auth set {}   (or export {var}=...)",
                        definition.provider
                    ),
                );
                usable.insert(model_id.clone(), false);
            }
            Err(err) => {
                checks.config_error(&id, &err);
                usable.insert(model_id.clone(), false);
            }
        }
    }
    // A role whose whole chain is unusable cannot run at all.
    let mut dead: Vec<String> = Vec::new();
    let is_usable = |chain: Vec<String>| {
        chain
            .iter()
            .any(|m| usable.get(m).copied().unwrap_or(false))
    };
    if !is_usable(brain.router_policy().chain()) {
        dead.push("planner".into());
    }
    for role in Role::ALL {
        if matches!(role, Role::ImageMaker | Role::Pet) {
            continue;
        }
        if !is_usable(brain.policy(role).chain()) {
            dead.push(role.as_str().to_string());
        }
    }
    if dead.is_empty() {
        checks.ok("roles", "every role has at least one usable model");
    } else {
        checks.error(
            "roles",
            format!("no usable model (missing keys or catalogue entries) for: {}", dead.join(", ")),
            "add the missing API keys (braincode auth set <provider>) or pick another brain in settings.json",
        );
    }
}

fn git_output(args: &[&str], dir: &Path) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

fn check_git(project: &Path, checks: &mut Checks) {
    let dir = if project.is_dir() {
        project
    } else {
        Path::new(".")
    };
    match git_output(&["--version"], dir) {
        Some(version) => checks.ok("git", version),
        None => {
            checks.warn(
                "git",
                "git is not installed or not on PATH: no patch summaries, checks or review of changes",
                "install git",
            );
            return;
        }
    }
    match git_output(&["rev-parse", "--show-toplevel"], dir) {
        Some(top) => checks.ok(
            "project",
            format!(
                "{} is a git repository (top level {top})",
                project.display()
            ),
        ),
        None => checks.warn(
            "project",
            format!(
                "{} is not a git repository: changes cannot be summarized or reviewed",
                project.display()
            ),
            format!("git init {}", project.display()),
        ),
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
