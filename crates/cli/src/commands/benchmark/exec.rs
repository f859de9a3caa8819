//! `braincode benchmark exec`: each fixture project is copied into a fresh git repository,
//! its task is run end to end (plan, workers, primary, checks, review), and the outcome is
//! checked against the fixture's expectations, with the run's metrics: success, changed
//! files, diff size, checks, review, time, tool calls, tokens by phase, cost, fallbacks.
//! `--mode mock` (the default) answers with a scripted model and runs the checks for real;
//! `--mode live` uses the brain's own models. `--compare A B` runs the tasks on both brains
//! and ranks them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use braincode_config::Home;
use braincode_protocol::{FinalReport, Role};
use braincode_runtime::{PermissionMode, RoutingChoice, RunRequest, RunServices, run};
use serde::{Deserialize, Serialize};

use super::mock::{MockClients, MockScript, mock_model};
use super::report;
use crate::commands::bench::overhead::git_commit_all;

/// The built-in fixtures: small real projects in Rust, Python and Node.
const BUILT_IN: [&str; 5] = [
    include_str!("fixtures/rust-failing-test.json"),
    include_str!("fixtures/python-readme-edit.json"),
    include_str!("fixtures/node-auth-change.json"),
    include_str!("fixtures/node-dependency-change.json"),
    include_str!("fixtures/python-review-only.json"),
];

/// How the models answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecMode {
    /// A scripted model (no network); the checks still run.
    Mock,
    /// The brain's own models.
    Live,
}

/// Options of `braincode benchmark exec`.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// Only these fixture ids (default: every one).
    pub tasks: Vec<String>,
    /// Scripted model or the brain's own models.
    #[arg(long, value_enum, default_value = "mock")]
    pub mode: ExecMode,
    /// The brain to run (default: the brain runs use).
    #[arg(long, conflicts_with = "compare")]
    pub brain: Option<String>,
    /// Run every task on two brains and rank them.
    #[arg(long, num_args = 2, value_names = ["BRAIN_A", "BRAIN_B"])]
    pub compare: Option<Vec<String>>,
    /// More fixtures: a directory of `<id>/benchmark.json` + `<id>/project/`.
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// Keep each task's temporary repository (its path is printed).
    #[arg(long)]
    pub keep: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a fixture's run must end with.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expected {
    changed_files: Vec<String>,
    checks_status: String,
    review_decision: String,
    #[serde(default)]
    plan_roles: Vec<Role>,
}

/// One fixture: a project, a task and what must come of it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fixture {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    language: String,
    task: String,
    expected: Expected,
    /// Relative path → content (built-ins; a fixture directory has `project/` instead).
    #[serde(default)]
    project: BTreeMap<String, String>,
    #[serde(default)]
    mock: MockScript,
}

fn read_dir_files(
    root: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        if path.is_dir() {
            read_dir_files(root, &path, out)?;
        } else {
            let relative = path
                .strip_prefix(root)?
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{} is not a UTF-8 text file", path.display()))?;
            out.insert(relative, text);
        }
    }
    Ok(())
}

/// The built-in fixtures, then those of `--fixtures`, filtered by id.
fn load(args: &ExecArgs) -> anyhow::Result<Vec<Fixture>> {
    let mut fixtures = Vec::new();
    for text in BUILT_IN {
        fixtures.push(serde_json::from_str::<Fixture>(text).context("a built-in fixture")?);
    }
    if let Some(dir) = &args.fixtures {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("cannot read --fixtures {}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join("benchmark.json").is_file())
            .collect();
        dirs.sort();
        for fixture_dir in dirs {
            let manifest = fixture_dir.join("benchmark.json");
            let text = std::fs::read_to_string(&manifest)
                .with_context(|| format!("cannot read {}", manifest.display()))?;
            let mut fixture: Fixture = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not a benchmark manifest ({{id, title, task, expected: {{changedFiles, checksStatus, reviewDecision}}}})",
                    manifest.display()
                )
            })?;
            let project = fixture_dir.join("project");
            if project.is_dir() {
                read_dir_files(&project, &project, &mut fixture.project)?;
            }
            fixtures.push(fixture);
        }
    }
    let known: Vec<String> = fixtures.iter().map(|f| f.id.clone()).collect();
    let unknown: Vec<&str> = args
        .tasks
        .iter()
        .filter(|id| !known.contains(id))
        .map(String::as_str)
        .collect();
    anyhow::ensure!(
        unknown.is_empty(),
        "Unknown benchmark task id(s): {} (known: {})",
        unknown.join(", "),
        known.join(", ")
    );
    if !args.tasks.is_empty() {
        fixtures.retain(|f| args.tasks.contains(&f.id));
    }
    Ok(fixtures)
}

/// One check of one run against its fixture.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub passed: bool,
    pub expected: String,
    pub got: String,
}

/// One task run on one brain.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRun {
    pub task: String,
    pub title: String,
    pub language: String,
    pub brain: String,
    pub success: bool,
    pub status: String,
    pub checks: Vec<Check>,
    pub changed_files: Vec<String>,
    pub insertions: u64,
    pub deletions: u64,
    pub checks_status: String,
    pub review_decision: String,
    pub duration_ms: u64,
    pub tool_calls: u64,
    pub tokens: u64,
    pub tokens_by_phase: BTreeMap<String, u64>,
    pub primary_tokens: u64,
    pub brain_to_primary_ratio: Option<f64>,
    pub cost_usd: f64,
    pub approvals: u64,
    pub fallbacks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept_at: Option<String>,
}

fn checks_status(report: &FinalReport) -> String {
    match &report.checks {
        None => "not-run".into(),
        Some(summary) => summary.status.label().into(),
    }
}

fn review_decision(report: &FinalReport) -> String {
    report
        .review
        .as_ref()
        .map_or_else(|| "not-run".into(), |r| r.decision.as_str().into())
}

fn total(usage: &braincode_protocol::Usage) -> u64 {
    usage
        .total
        .max(usage.input + usage.output + usage.cache_read + usage.cache_write)
}

fn measure(
    fixture: &Fixture,
    brain: &str,
    report: &FinalReport,
    kept_at: Option<String>,
) -> TaskRun {
    let mut changed: Vec<String> = report
        .patch
        .as_ref()
        .map(|p| p.changed_files.iter().map(|f| f.path.clone()).collect())
        .unwrap_or_default();
    changed.sort();
    let mut expected_files = fixture.expected.changed_files.clone();
    expected_files.sort();
    let roles: Vec<Role> = report.routing.workers.iter().map(|w| w.role).collect();
    let (checks_status, review_decision) = (checks_status(report), review_decision(report));
    let mut checks = vec![
        Check {
            name: "changed_files",
            passed: changed == expected_files,
            expected: expected_files.join(", "),
            got: changed.join(", "),
        },
        Check {
            name: "checks_status",
            passed: checks_status == fixture.expected.checks_status,
            expected: fixture.expected.checks_status.clone(),
            got: checks_status.clone(),
        },
        Check {
            name: "review_decision",
            passed: review_decision == fixture.expected.review_decision,
            expected: fixture.expected.review_decision.clone(),
            got: review_decision.clone(),
        },
    ];
    if !fixture.expected.plan_roles.is_empty() {
        let all_present = fixture
            .expected
            .plan_roles
            .iter()
            .all(|r| roles.contains(r));
        checks.push(Check {
            name: "plan_roles",
            passed: all_present,
            expected: fixture
                .expected
                .plan_roles
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            got: roles
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let metrics = report.metrics.as_ref();
    let tokens = metrics.map_or(0, |m| total(&m.tokens.total));
    let tokens_by_phase: BTreeMap<String, u64> = metrics
        .map(|m| {
            m.tokens
                .by_phase
                .iter()
                .map(|(k, v)| (k.clone(), total(v)))
                .collect()
        })
        .unwrap_or_default();
    let primary_tokens = tokens_by_phase.get("primary").copied().unwrap_or(0);
    let diff = report.patch.as_ref().and_then(|p| p.diff_stats.as_ref());
    TaskRun {
        task: fixture.id.clone(),
        title: fixture.title.clone(),
        language: fixture.language.clone(),
        brain: brain.to_string(),
        success: checks.iter().all(|c| c.passed),
        status: report.status.as_str().to_string(),
        checks,
        changed_files: changed,
        insertions: diff.map_or(0, |d| d.insertions),
        deletions: diff.map_or(0, |d| d.deletions),
        checks_status,
        review_decision,
        duration_ms: metrics.map_or(0, |m| m.duration_ms),
        tool_calls: metrics.map_or(0, |m| m.tool_calls.total),
        tokens,
        brain_to_primary_ratio: (primary_tokens > 0).then(|| tokens as f64 / primary_tokens as f64),
        primary_tokens,
        tokens_by_phase,
        cost_usd: metrics.map_or(0.0, |m| m.tokens.cost_micro_usd as f64 / 1e6),
        // `--allow-edits` approves by policy; a person was never asked in a benchmark.
        approvals: 0,
        fallbacks: report
            .warnings
            .iter()
            .filter(|w| w.contains("fallback") || w.contains("falling back"))
            .count() as u64,
        kept_at,
    }
}

/// Copies the fixture's project into a fresh repository and runs its task.
async fn run_task(
    fixture: &Fixture,
    home: &Home,
    brain: &str,
    mode: ExecMode,
    keep: bool,
) -> anyhow::Result<TaskRun> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("braincode-benchmark-{}-", fixture.id))
        .tempdir()?;
    let repo = dir.path().join("repo");
    for (path, content) in &fixture.project {
        anyhow::ensure!(
            !path.starts_with('/') && !path.split('/').any(|part| part == ".."),
            "fixture {}: the project path {path:?} leaves the project",
            fixture.id
        );
        let file = repo.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&file, content)?;
    }
    std::fs::create_dir_all(&repo)?;
    git_commit_all(&repo, true, "benchmark fixture")?;
    // The suite's projects are what the user asked to measure, and their checks are part of
    // each task: trusted in the benchmark's own home (never the user's trust store).
    braincode_config::trust_project(home, &repo)
        .with_context(|| format!("trusting the fixture project of {}", fixture.id))?;
    let request = RunRequest {
        brain_id: Some(brain.to_string()),
        permission: PermissionMode::AllowEdits,
        // The mock model answers a router like any worker: plan with the heuristic there.
        routing: match mode {
            ExecMode::Mock => RoutingChoice::HeuristicOnly,
            ExecMode::Live => RoutingChoice::Auto,
        },
        ..RunRequest::new(fixture.task.clone(), repo.canonicalize()?)
    };
    let mut services = RunServices::new(home.clone());
    if mode == ExecMode::Mock {
        services.client_override = Some(Arc::new(MockClients(mock_model(fixture.mock.clone()))));
    }
    let report = run(request, services).await;
    let _ = tokio::task::spawn_blocking(braincode_tools::exec::process::settle_all_groups).await;
    let kept_at = keep.then(|| dir.keep().display().to_string());
    Ok(measure(fixture, brain, &report, kept_at))
}

/// A home for the runs: the user's configuration (brains, models, settings, credentials),
/// but its own sessions, so a benchmark leaves no sessions in the user's list. In mock mode
/// every model of the catalogue can call tools (the scripted model can), so a brain is
/// measured on what it plans and pays, not on its model's tool support.
fn run_home(user: &Home, dir: &Path, mode: ExecMode) -> anyhow::Result<Home> {
    let home = Home::at(dir.join("home"));
    std::fs::create_dir_all(home.root())?;
    for (from, to) in [
        (user.settings_path(), home.settings_path()),
        (user.brains_path(), home.brains_path()),
        (user.models_path(), home.models_path()),
        (user.auth_path(), home.auth_path()),
        (user.tools_path(), home.tools_path()),
    ] {
        if from.is_file() {
            std::fs::copy(&from, &to).with_context(|| format!("cannot copy {}", from.display()))?;
        }
    }
    if mode == ExecMode::Mock {
        let mut models = braincode_config::load_models(user)?;
        for model in &mut models {
            model.supports_tools = true;
        }
        let doc = braincode_config::ModelsDocument {
            models,
            ..Default::default()
        };
        braincode_config::save_models(&home, &doc)?;
    }
    // The embedded model's weights are shared, not copied.
    if user.models_dir().is_dir() {
        std::os::unix::fs::symlink(user.models_dir(), home.models_dir()).ok();
    }
    Ok(home)
}

/// Runs the command.
pub fn execute(args: &ExecArgs) -> anyhow::Result<ExitCode> {
    let fixtures = load(args)?;
    let user = Home::from_env().context("cannot locate the Braincode home")?;
    let brains: Vec<String> = match &args.compare {
        Some(pair) => pair.clone(),
        None => {
            let settings = braincode_runtime::load_settings(&user)?;
            let presets = braincode_runtime::load_brain_presets(&user)?;
            let selected =
                braincode_runtime::select_brain(&user, &presets, &settings, args.brain.as_deref())?;
            vec![selected.id]
        }
    };
    let scratch = tempfile::tempdir()?;
    let home = run_home(&user, scratch.path(), args.mode)?;
    {
        let presets = braincode_runtime::load_brain_presets(&home)?;
        for brain in &brains {
            braincode_brain::select_brain(&presets, brain)
                .with_context(|| format!("--compare/--brain names brain {brain:?}"))?;
        }
    }
    let runtime = super::super::tokio_runtime()?;
    let mut runs = Vec::new();
    for brain in &brains {
        for fixture in &fixtures {
            if !args.json {
                eprintln!("running {} on brain {brain}…", fixture.id);
            }
            runs.push(runtime.block_on(run_task(fixture, &home, brain, args.mode, args.keep))?);
        }
    }
    let summary = report::Summary::of(&runs, &brains, args.mode);
    let written = report::write(&user, &summary).ok();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", report::markdown(&summary));
        if let Some((md, json)) = written {
            println!("\nreports: {} and {}", md.display(), json.display());
        }
    }
    Ok(if runs.iter().all(|r| r.success) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
