//! `braincode bench replay`: how long `braincode replay` takes to run a journaled run again.
//!
//! One orchestrated run (router, `--workers` support workers, a primary that reads a file,
//! review) is made in process against a scripted model and journaled to a real session file
//! in a temporary home. That run is then replayed `--iterations` times with
//! [`braincode_runtime::replay`]: no model, no tool, no hook, every reply and result
//! from the journal, the records compared with the original's. The goal is ≤ 50 ms per
//! replay; the figure is printed next to it and never fails the command.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use braincode_config::Home;
use braincode_protocol::{FinalStatus, Record, SessionId, Usage, WorkerPhase};
use braincode_runtime::{ReplayOutcome, replay};
use braincode_runtime::{RunServices, run};
use braincode_scripted::{CallKind, Reply, Script, ScriptedModel};
use serde::Serialize;
use serde_json::{Value, json};

use super::median;
use super::overhead::{SameClient, fixture, reply_for, request};

/// Arguments of `braincode bench replay`.
#[derive(Debug, clap::Args)]
pub struct ReplayBenchArgs {
    /// Support workers the scripted router asks for.
    #[arg(long, default_value_t = 4)]
    pub workers: usize,
    /// Timed replays (after one warm-up replay).
    #[arg(long, default_value_t = 20)]
    pub iterations: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
    /// Keep the temporary home with the journaled session (its path is printed).
    #[arg(long)]
    pub keep: bool,
}

/// The replay time this benchmark is measured against (issue 12).
const GOAL_MS: f64 = 50.0;

const SESSION: &str = "bench-replay";

/// Support roles the router names, in order (the primary is `backend`).
const SUPPORT_ROLES: [&str; 8] = [
    "librarian",
    "security",
    "qa",
    "dba",
    "frontend",
    "devops",
    "designer",
    "oracle",
];

/// The router decision: `workers` support roles and a backend primary, no dependencies.
fn router_decision(workers: usize) -> String {
    let support = &SUPPORT_ROLES[..workers.min(SUPPORT_ROLES.len())];
    let mut planned: Vec<Value> = support
        .iter()
        .map(|role| json!({"role": role, "goal": format!("Support the token fix as {role}"), "reason": role}))
        .collect();
    planned.push(json!({"role": "backend", "goal": "Fix the validation", "reason": "backend"}));
    let mut todos: Vec<Value> = support
        .iter()
        .map(|role| json!({"id": format!("support-{role}"), "title": format!("{role} support"), "role": role}))
        .collect();
    todos.push(json!({"id": "fix", "title": "Fix", "role": "backend"}));
    json!({
        "role": "backend",
        "workers": planned,
        "todos": todos,
        "dependencies": [],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.9,
        "reason": "backend fix with support"
    })
    .to_string()
}

/// A model that answers at once: the router with [`router_decision`], workers and the
/// primary first with a `read_file` call (when offered) and then with their answer, the
/// reviewer with an approval.
fn scripted_model(workers: usize) -> ScriptedModel {
    ScriptedModel::new(Script::from_fn(move |request| {
        let who = request.kind();
        let offers_read = request.tools.iter().any(|t| t == "read_file");
        let reply = if matches!(who, CallKind::Support | CallKind::Primary)
            && offers_read
            && request.tool_results().is_empty()
        {
            Reply::text("Reading the token code first.")
                .with_tool_call_raw("read_file", r#"{"path":"src/token.rs"}"#)
        } else {
            Reply::text(match who {
                CallKind::Router => router_decision(workers),
                other => reply_for(other),
            })
        };
        reply.with_usage(Usage::new(100, 20, 0, 0))
    }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Figures {
    iterations: usize,
    support_workers: usize,
    model_calls: usize,
    tool_calls: u64,
    journal_records: usize,
    original_run_ms: f64,
    replay_median_ms: f64,
    replay_p90_ms: f64,
    replay_min_ms: f64,
    goal_ms: f64,
    identical: bool,
    replayed_records: usize,
    replay_status: String,
    divergence: Option<Value>,
}

/// Runs the benchmark.
pub fn execute(args: ReplayBenchArgs) -> anyhow::Result<ExitCode> {
    let runtime = super::super::tokio_runtime()?;
    runtime.block_on(bench(args))
}

async fn bench(args: ReplayBenchArgs) -> anyhow::Result<ExitCode> {
    let iterations = args.iterations.max(1);
    let (dir, home_dir, repo) = fixture("http://127.0.0.1:9/v1")?;
    widen_parallelism(&home_dir, args.workers + 1)?;
    let home = Home::at(&home_dir);
    let session = SessionId::new(SESSION)?;

    let mut services = RunServices::new(home.clone());
    services.client_override = Some(Arc::new(SameClient(scripted_model(args.workers).client())));
    let mut run_request = request(&repo);
    run_request.session_id = Some(session.clone());
    let started = Instant::now();
    let report = run(run_request, services).await;
    let original_run_ms = started.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(
        report.status == FinalStatus::Approved,
        "the journaled run ended {}: {}",
        report.status.as_str(),
        report.error.unwrap_or_default()
    );
    let journal = braincode_config::journal::read_journal(&home.session_path(&session))
        .context("cannot read the journaled run back")?;
    let support_workers = journal
        .entries
        .iter()
        .filter(|e| matches!(&e.record, Record::WorkerStart(s) if s.phase == WorkerPhase::Support))
        .count();
    let model_calls = journal
        .entries
        .iter()
        .filter(|e| matches!(e.record, Record::ModelReply(_)))
        .count();

    // One warm-up replay (page cache, lazy statics), then the timed ones.
    let mut last: ReplayOutcome = replay_once(&home, &session).await?;
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        last = replay_once(&home, &session).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let p90 = sorted[(sorted.len() * 9 / 10).min(sorted.len() - 1)];
    let divergence = last.divergence.as_ref().map(|d| {
        json!({
            "position": d.position,
            "lane": d.lane,
            "expected": d.expected,
            "actual": d.actual,
        })
    });
    let figures = Figures {
        iterations,
        support_workers,
        model_calls,
        tool_calls: report.metrics.as_ref().map_or(0, |m| m.tool_calls.total),
        journal_records: journal.entries.len(),
        original_run_ms,
        replay_median_ms: median(&mut times),
        replay_p90_ms: p90,
        replay_min_ms: sorted[0],
        goal_ms: GOAL_MS,
        identical: last.divergence.is_none(),
        replayed_records: last.replayed_records,
        replay_status: last.report.status.as_str().to_string(),
        divergence,
    };
    if args.keep {
        eprintln!("home kept at {}", dir.keep().join("home").display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "braincode bench replay — router + {} support workers + primary + review, {} replays",
        figures.support_workers, iterations
    );
    println!(
        "  journaled run:   {} records, {} model replies, {} tool calls (original run {:.2} ms)",
        figures.journal_records, figures.model_calls, figures.tool_calls, original_run_ms
    );
    println!(
        "  replay, median:  {:.2} ms (p90 {:.2} ms, min {:.2} ms) — goal ≤ {GOAL_MS:.0} ms: {}",
        figures.replay_median_ms,
        figures.replay_p90_ms,
        figures.replay_min_ms,
        if figures.replay_median_ms <= GOAL_MS {
            "met"
        } else {
            "not met"
        }
    );
    match &last.divergence {
        None => println!(
            "  identical:       yes ({} records replayed, report {})",
            figures.replayed_records, figures.replay_status
        ),
        Some(d) => {
            println!(
                "  identical:       NO — first divergence at record {} in lane `{}` ({} records replayed, report {})",
                d.position, d.lane, figures.replayed_records, figures.replay_status
            );
            let shown = |v: &Option<Value>| {
                v.as_ref()
                    .map_or_else(|| "(none)".to_string(), Value::to_string)
            };
            println!("    expected: {}", shown(&d.expected));
            println!("    actual:   {}", shown(&d.actual));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn replay_once(home: &Home, session: &SessionId) -> anyhow::Result<ReplayOutcome> {
    replay(home, session, None, RunServices::new(home.clone()))
        .await
        .context("the replay could not start")
}

/// Lets the bench brain run `agents` workers at once (the fixture allows 5).
fn widen_parallelism(home: &std::path::Path, agents: usize) -> anyhow::Result<()> {
    let path = home.join("brains.json");
    let mut brains: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    if let Some(list) = brains["brains"].as_array_mut() {
        for brain in list {
            brain["routing"]["maxParallelAgents"] = json!(agents.max(5));
        }
    }
    std::fs::write(&path, brains.to_string())?;
    Ok(())
}
