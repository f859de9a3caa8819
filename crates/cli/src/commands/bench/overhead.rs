//! `braincode bench overhead`: what orchestration itself costs.
//!
//! A model that answers instantly (or after a fixed delay) stands in for every role, so the
//! figures are Braincode's own work: planning, packets, the worker pool, tools, hooks, the
//! journal and the report. Three measurements:
//! 1. a full run (router + 4 support workers + primary + review) with an instant model;
//! 2. the same with 100 ms per model call, to show independent workers overlap;
//! 3. peak RSS of a real `braincode run` process talking to an OpenAI-compatible endpoint
//!    (a loopback server started by this command), i.e. the wire client path.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_config::Home;
use braincode_llm::ModelClient;
use braincode_protocol::{ModelDefinition, Record, Usage, WorkerPhase};
use braincode_runtime::ClientOverride;
use braincode_runtime::{JournalTarget, MemoryJournal, RunRequest, RunServices, run};
use braincode_scripted::{CallKind, Reply, Script, ScriptedModel, ScriptedServer};
use serde::Serialize;
use serde_json::{Value, json};

use super::{median, proc_status_kib};

/// Arguments of `braincode bench overhead`.
#[derive(Debug, clap::Args)]
pub struct OverheadBenchArgs {
    /// Timed runs per measurement (after 3 warm-up runs).
    #[arg(long, default_value_t = 30)]
    pub runs: usize,
    /// Model latency for the parallelism measurement, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub delay_ms: u64,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: run once against this endpoint and print this process's peak RSS.
    #[arg(long, hide = true, value_name = "BASE_URL")]
    pub rss_child: Option<String>,
}

const PROMPT: &str = "Fix the session token validation in the backend and add a regression test";

/// What an instant model answers whoever asks (told apart by the shared kit's
/// [`CallKind`]: the schema the runtime requests and how its prompts begin).
pub(crate) fn reply_for(asker: CallKind) -> String {
    match asker {
        CallKind::Router => json!({
            "role": "backend",
            "workers": [
                {"role": "librarian", "goal": "Map the token code", "reason": "orientation"},
                {"role": "security", "goal": "Assess token checks", "reason": "auth"},
                {"role": "qa", "goal": "Plan the regression test", "reason": "tests"},
                {"role": "dba", "goal": "Check the session table", "reason": "storage"},
                {"role": "backend", "goal": "Fix the validation", "reason": "backend"}
            ],
            "todos": [
                {"id": "map", "title": "Map", "role": "librarian"},
                {"id": "assess", "title": "Assess", "role": "security"},
                {"id": "plan-test", "title": "Plan test", "role": "qa"},
                {"id": "check-db", "title": "Check table", "role": "dba"},
                {"id": "fix", "title": "Fix", "role": "backend"}
            ],
            "dependencies": [],
            "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
            "confidence": 0.9,
            "reason": "backend fix with security and test support"
        })
        .to_string(),
        CallKind::Review => json!({
            "taskId": "t", "parentId": "p", "progress": {"status": "completed", "summary": "ok"},
            "summary": "Looks right.", "artifacts": [], "risks": [], "nextQuestions": [],
            "decision": "approved", "confidence": 0.9, "rationale": "minimal change", "findings": [],
            "requiredChanges": [], "blockingIssues": [], "residualRisks": []
        })
        .to_string(),
        CallKind::Support => json!({
            "taskId": "t", "parentId": "p", "progress": {"status": "completed", "summary": "done"},
            "summary": "Token checks live in src/token.rs; empty tokens pass.",
            "artifacts": [{"kind": "file", "uri": "src/token.rs"}], "risks": ["empty tokens"], "nextQuestions": []
        })
        .to_string(),
        CallKind::Primary => "Validation now rejects empty tokens; a regression test covers it.".to_string(),
    }
}

/// An instant answer: `text`, with a fixed usage.
pub(crate) fn instant(text: String) -> Reply {
    Reply::text(text).with_usage(Usage::new(100, 20, 0, 0))
}

/// The script of a model that answers every request with [`reply_for`] its asker after
/// `delay` (cut short by cancellation).
pub(crate) fn instant_script(delay: Duration) -> Script {
    Script::from_fn(move |request| instant(reply_for(request.kind())).delayed(delay))
}

/// One model client for every model of the catalogue.
pub(super) struct SameClient(pub Arc<dyn ModelClient>);

impl ClientOverride for SameClient {
    fn client(&self, _definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(self.0.clone())
    }
}

/// `git add . && git commit` in a bench repository (after `git init` when `init`), with a
/// throwaway identity.
pub(crate) fn git_commit_all(repo: &Path, init: bool, message: &str) -> anyhow::Result<()> {
    let commit = [
        "-c",
        "user.email=b@b",
        "-c",
        "user.name=b",
        "commit",
        "-qm",
        message,
    ];
    let steps: Vec<&[&str]> = if init {
        vec![&["init", "-q"], &["add", "."], &commit]
    } else {
        vec![&["add", "."], &commit]
    };
    for args in steps {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(repo)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "git {args:?} failed in {}: {}",
            repo.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// A temp home whose `bench` brain sends every role to `bench/instant` at `base_url`, and a
/// small git repository to run in.
pub(super) fn fixture(base_url: &str) -> anyhow::Result<(tempfile::TempDir, PathBuf, PathBuf)> {
    let dir = tempfile::Builder::new()
        .prefix("braincode-bench-")
        .tempdir()?;
    let home = dir.path().join("home");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&home)?;
    std::fs::create_dir_all(repo.join("src"))?;
    std::fs::write(
        repo.join("src/token.rs"),
        "pub fn valid(t: &str) -> bool { !t.is_empty() }\n",
    )?;
    git_commit_all(&repo, true, "init")?;
    let model = json!({
        "id": "bench/instant", "provider": "bench", "modelId": "instant", "api": "openai-completions",
        "baseUrl": base_url, "contextWindow": 128000, "supportsTools": true
    });
    std::fs::write(
        home.join("models.json"),
        json!({"models": [model]}).to_string(),
    )?;
    let policy = json!({"modelId": "bench/instant", "fallbackModelIds": []});
    let roles: serde_json::Map<String, Value> = braincode_protocol::Role::ALL
        .iter()
        .map(|r| (r.as_str().to_string(), policy.clone()))
        .collect();
    let brain = json!({"id": "bench", "extends": "brain", "name": "Bench", "planner": policy, "roles": roles,
        "routing": {"maxParallelAgents": 5}});
    std::fs::write(
        home.join("brains.json"),
        json!({"brains": [brain]}).to_string(),
    )?;
    std::fs::write(
        home.join("settings.json"),
        json!({"version": 1, "defaultBrainId": "bench"}).to_string(),
    )?;
    Ok((dir, home, repo))
}

pub(super) fn request(repo: &Path) -> RunRequest {
    RunRequest::new(PROMPT, repo)
}

struct Timed {
    wall_ms: f64,
    support_ms: f64,
    model_calls: usize,
    workers: usize,
}

async fn timed_run(
    home: &Path,
    repo: &Path,
    delay: Duration,
    journal: JournalTarget,
) -> anyhow::Result<Timed> {
    let memory = MemoryJournal::default();
    let mut services = RunServices::new(Home::at(home));
    let model = ScriptedModel::new(instant_script(delay));
    services.client_override = Some(Arc::new(SameClient(model.client())));
    services.journal = match journal {
        JournalTarget::Session => JournalTarget::Session,
        _ => JournalTarget::Memory(memory.clone()),
    };
    let started = Instant::now();
    let report = run(request(repo), services).await;
    let wall_ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        report.status == braincode_protocol::FinalStatus::Approved,
        "the bench run ended {}: {}",
        report.status.as_str(),
        report.error.unwrap_or_default()
    );
    let entries = memory.entries();
    let support: Vec<i64> = entries
        .iter()
        .filter(|e| match &e.record {
            Record::WorkerStart(s) => s.phase == WorkerPhase::Support,
            Record::WorkerEnd(s) => s.phase == WorkerPhase::Support,
            _ => false,
        })
        .map(|e| e.timestamp)
        .collect();
    let support_ms = match (support.iter().min(), support.iter().max()) {
        (Some(a), Some(b)) => (b - a) as f64,
        _ => 0.0,
    };
    Ok(Timed {
        wall_ms,
        support_ms,
        model_calls: report
            .metrics
            .as_ref()
            .map_or(0, |m| m.tokens.calls as usize),
        workers: report.routing.workers.len(),
    })
}

#[derive(Serialize)]
struct Figures {
    runs: usize,
    instant_median_ms: f64,
    instant_p90_ms: f64,
    instant_with_session_journal_median_ms: f64,
    model_calls_per_run: usize,
    workers_per_run: usize,
    delay_ms: u64,
    delayed_median_ms: f64,
    delayed_support_phase_median_ms: f64,
    support_workers: usize,
    run_process_peak_rss_kib: Option<u64>,
}

/// Runs the benchmark.
pub fn execute(args: OverheadBenchArgs) -> anyhow::Result<ExitCode> {
    let runtime = super::super::tokio_runtime()?;
    if let Some(base_url) = args.rss_child {
        return runtime.block_on(rss_child(&base_url));
    }
    runtime.block_on(bench(args))
}

async fn bench(args: OverheadBenchArgs) -> anyhow::Result<ExitCode> {
    let runs = args.runs.max(1);
    let (_dir, home, repo) = fixture("http://127.0.0.1:9/v1")?;
    for _ in 0..3 {
        timed_run(&home, &repo, Duration::ZERO, JournalTarget::Disabled).await?;
    }
    let mut instant = Vec::new();
    let mut calls = 0;
    let mut workers = 0;
    for _ in 0..runs {
        let t = timed_run(&home, &repo, Duration::ZERO, JournalTarget::Disabled).await?;
        instant.push(t.wall_ms);
        calls = t.model_calls;
        workers = t.workers;
    }
    let mut with_journal = Vec::new();
    for _ in 0..runs {
        with_journal.push(
            timed_run(&home, &repo, Duration::ZERO, JournalTarget::Session)
                .await?
                .wall_ms,
        );
    }
    let delay = Duration::from_millis(args.delay_ms);
    let mut delayed = Vec::new();
    let mut support = Vec::new();
    for _ in 0..runs.min(10) {
        let t = timed_run(&home, &repo, delay, JournalTarget::Disabled).await?;
        delayed.push(t.wall_ms);
        support.push(t.support_ms);
    }
    let rss = rss_of_child_run().await.unwrap_or_else(|err| {
        eprintln!("peak RSS measurement skipped: {err:#}");
        None
    });
    let mut sorted = instant.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    let figures = Figures {
        runs,
        instant_median_ms: median(&mut instant),
        instant_p90_ms: p90,
        instant_with_session_journal_median_ms: median(&mut with_journal),
        model_calls_per_run: calls,
        workers_per_run: workers,
        delay_ms: args.delay_ms,
        delayed_median_ms: median(&mut delayed),
        delayed_support_phase_median_ms: median(&mut support),
        support_workers: 4,
        run_process_peak_rss_kib: rss,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        println!(
            "braincode bench overhead — router + 4 support workers + primary + review, {runs} runs"
        );
        println!(
            "  instant model, median:            {:.2} ms (p90 {:.2} ms; {} model calls, {} workers)",
            figures.instant_median_ms, figures.instant_p90_ms, calls, workers
        );
        println!(
            "  … with the session journal (fsync): {:.2} ms",
            figures.instant_with_session_journal_median_ms
        );
        println!(
            "  {} ms per model call, median run:  {:.0} ms",
            args.delay_ms, figures.delayed_median_ms
        );
        println!(
            "  … support phase (4 independent):  {:.0} ms ({:.1}× one call)",
            figures.delayed_support_phase_median_ms,
            figures.delayed_support_phase_median_ms / args.delay_ms.max(1) as f64
        );
        match rss {
            Some(kib) => println!(
                "  peak RSS of a `braincode run` process via the HTTP client: {:.1} MB",
                kib as f64 / 1024.0
            ),
            None => println!("  peak RSS: not measured"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn rss_of_child_run() -> anyhow::Result<Option<u64>> {
    // The instant replies over HTTP (OpenAI Chat Completions SSE on loopback).
    let server = ScriptedServer::bind(instant_script(Duration::ZERO)).await?;
    let output = super::run_self(&["bench", "overhead", "--rss-child", &server.base_url()]).await;
    drop(server);
    Ok(output?.trim().parse().ok())
}

async fn rss_child(base_url: &str) -> anyhow::Result<ExitCode> {
    let (_dir, home, repo) = fixture(base_url)?;
    let report = run(request(&repo), RunServices::new(Home::at(&home))).await;
    anyhow::ensure!(
        report.status == braincode_protocol::FinalStatus::Approved,
        "the measured run ended {}: {}",
        report.status.as_str(),
        report.error.unwrap_or_default()
    );
    println!("{}", proc_status_kib("VmHWM:").unwrap_or(0));
    Ok(ExitCode::SUCCESS)
}
