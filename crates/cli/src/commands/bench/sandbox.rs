//! `braincode bench sandbox`: the wall time the OS sandbox adds to a command (`true`), per
//! backend available here, against the same command run plainly; and what confining
//! Braincode's own git adds to a `git status` (the wrapper that switches the repository's
//! programs off included).

use std::ffi::OsString;
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use braincode_sandbox::{Sandbox, SandboxKind, SandboxPolicy};
use serde_json::json;

use super::median;

/// Arguments of `braincode bench sandbox`.
#[derive(Debug, clap::Args)]
pub struct SandboxBenchArgs {
    /// Timed runs per variant (the median is reported).
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also time, on this project, the sandbox's setup (its walk for secret files and
    /// protected paths) and the protected-path check made after every command.
    #[arg(long, value_name = "DIR")]
    pub project: Option<std::path::PathBuf>,
}

/// Median milliseconds of `runs` calls of `work` (after one untimed call).
fn time_calls(runs: usize, mut work: impl FnMut()) -> f64 {
    work();
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            work();
            started.elapsed().as_secs_f64() * 1_000.0
        })
        .collect();
    median(&mut times)
}

/// The setup and protected-path check timings on `project` (see [`SandboxBenchArgs::project`]).
fn guard_row(project: &std::path::Path, home: &std::path::Path, runs: usize) -> serde_json::Value {
    let user_home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let policy = || SandboxPolicy::for_project(project, user_home.as_deref(), home);
    let setup_ms = time_calls(runs.min(10), || {
        let _ = Sandbox::new(policy());
    });
    match Sandbox::new(policy()) {
        Ok(sandbox) => {
            let check_ms = time_calls(runs, || {
                let _ = sandbox.check_protected();
            });
            json!({"project": project.display().to_string(), "setupMs": setup_ms, "checkMs": check_ms})
        }
        Err(err) => {
            json!({"project": project.display().to_string(), "unavailable": err.to_string()})
        }
    }
}

fn time_runs(runs: usize, make: impl FnMut() -> Command) -> anyhow::Result<Vec<f64>> {
    time_command(runs, "`true`", make)
}

/// Wall times of `runs` runs of the command `make` builds (after one untimed run), each of
/// which must succeed.
fn time_command(
    runs: usize,
    what: &str,
    mut make: impl FnMut() -> Command,
) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(runs);
    // One untimed warm-up run (page cache, probe).
    for index in 0..=runs {
        let mut command = make();
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let started = Instant::now();
        let status = command
            .status()
            .with_context(|| format!("running {what}"))?;
        let elapsed = started.elapsed().as_secs_f64() * 1_000.0;
        anyhow::ensure!(status.success(), "{what} failed: {status}");
        if index > 0 {
            times.push(elapsed);
        }
    }
    Ok(times)
}

/// `git status` in a small repository with a dirty file: plain, and as Braincode runs it
/// (confined, drivers off).
fn git_row(runs: usize) -> anyhow::Result<serde_json::Value> {
    let repo = tempfile::tempdir().context("creating a temporary repository")?;
    let root = repo.path().canonicalize()?;
    let git = |args: &[&str]| -> anyhow::Result<()> {
        let status = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "git {args:?} failed");
        Ok(())
    };
    git(&["init", "-q"])?;
    for index in 0..50 {
        std::fs::write(root.join(format!("f{index}.txt")), format!("{index}\n"))?;
    }
    git(&["add", "."])?;
    git(&[
        "-c",
        "user.name=b",
        "-c",
        "user.email=b@e",
        "commit",
        "-qm",
        "c",
    ])?;
    std::fs::write(root.join("f0.txt"), "changed\n")?;
    let args = ["status", "--porcelain=v1", "-z", "--untracked-files=all"];
    let mut plain = time_command(runs, "git status", || {
        let mut command = Command::new("git");
        command.args(args).current_dir(&root);
        command
    })?;
    let plain_ms = median(&mut plain);
    match braincode_tools::git_safe::git_command(&root, &args) {
        Ok(_) => {
            let mut confined = time_command(runs, "confined git status", || {
                // Checked just above; a sandbox that vanished mid-run fails the timing.
                braincode_tools::git_safe::git_command(&root, &args)
                    .unwrap_or_else(|_| Command::new("false"))
            })?;
            let confined_ms = median(&mut confined);
            // The way a run asks: one kept confined shell per project, a query per line.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let served_ms = time_calls(runs, || {
                let _ = runtime.block_on(braincode_tools::git_host::query(
                    &root,
                    &args,
                    std::time::Duration::from_secs(30),
                ));
            });
            Ok(
                json!({"plainMs": plain_ms, "confinedMs": confined_ms, "extraMs": confined_ms - plain_ms, "servedMs": served_ms}),
            )
        }
        Err(reason) => Ok(json!({"plainMs": plain_ms, "unavailable": reason})),
    }
}

/// Runs the benchmark.
pub fn execute(args: SandboxBenchArgs) -> anyhow::Result<ExitCode> {
    let project = tempfile::tempdir().context("creating a temporary project")?;
    let braincode_home = tempfile::tempdir().context("creating a temporary home")?;
    let policy = SandboxPolicy::for_project(
        &project.path().canonicalize()?,
        std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .as_deref(),
        braincode_home.path(),
    );
    let runs = args.runs.max(1);
    let mut plain = time_runs(runs, || Command::new("true"))?;
    let plain_ms = median(&mut plain);
    let mut rows = vec![json!({"variant": "plain", "medianMs": plain_ms, "extraMs": 0.0})];
    for kind in [SandboxKind::Bubblewrap, SandboxKind::Landlock] {
        match Sandbox::with_kind(policy.clone(), kind) {
            Ok(sandbox) => {
                let mut times = time_runs(runs, || {
                    sandbox.command("true".as_ref(), &[] as &[OsString], project.path())
                })?;
                let ms = median(&mut times);
                rows.push(json!({
                    "variant": kind.to_string(),
                    "medianMs": ms,
                    "extraMs": ms - plain_ms,
                    "describe": sandbox.describe(),
                }));
            }
            Err(err) => {
                rows.push(json!({"variant": kind.to_string(), "unavailable": err.to_string()}));
            }
        }
    }
    let mut guards = vec![guard_row(
        &project.path().canonicalize()?,
        braincode_home.path(),
        runs,
    )];
    if let Some(dir) = &args.project {
        let dir = dir
            .canonicalize()
            .with_context(|| format!("--project {}", dir.display()))?;
        guards.push(guard_row(&dir, braincode_home.path(), runs));
    }
    let git = git_row(runs)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"runs": runs, "results": rows, "protectedPaths": guards, "gitStatus": git})
            )?
        );
    } else {
        println!("`true`, {runs} runs each, median wall time from spawn to exit:");
        for row in &rows {
            match row.get("medianMs").and_then(serde_json::Value::as_f64) {
                Some(ms) => println!(
                    "  {:<11} {ms:>7.2} ms  (+{:.2} ms)",
                    row["variant"].as_str().unwrap_or_default(),
                    row["extraMs"].as_f64().unwrap_or_default()
                ),
                None => println!(
                    "  {:<11} unavailable: {}",
                    row["variant"].as_str().unwrap_or_default(),
                    row["unavailable"].as_str().unwrap_or_default()
                ),
            }
        }
        match (git["confinedMs"].as_f64(), git["plainMs"].as_f64()) {
            (Some(confined), Some(plain)) => println!(
                "Braincode's own `git status` (50 files, 1 dirty): plain {plain:.2} ms, confined {confined:.2} ms  (+{:.2} ms), from the kept confined shell {:.2} ms  (+{:.2} ms)",
                confined - plain,
                git["servedMs"].as_f64().unwrap_or_default(),
                git["servedMs"].as_f64().unwrap_or_default() - plain
            ),
            _ => println!(
                "Braincode's own git: unavailable: {}",
                git["unavailable"].as_str().unwrap_or_default()
            ),
        }
        println!("sandbox setup (project walk) and protected-path check after each command:");
        for row in &guards {
            match (row["setupMs"].as_f64(), row["checkMs"].as_f64()) {
                (Some(setup), Some(check)) => println!(
                    "  setup {setup:>7.2} ms, check {check:>6.2} ms  {}",
                    row["project"].as_str().unwrap_or_default()
                ),
                _ => println!(
                    "  unavailable: {}",
                    row["unavailable"].as_str().unwrap_or_default()
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
