//! `braincode bench usage`: how long `braincode usage` takes over many large journals.
//!
//! One synthetic journal of realistic runs (see `journal_gen`) is written, then copied to
//! `--sessions` session files totalling about `--mb` MB in a temporary home; the usage summary
//! (by model, priced with the built-in catalogue) is then timed `--runs` times; the median is
//! reported. The files are in the page cache after the copy, as they are for a user who ran
//! those sessions recently.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use braincode_config::Home;
use braincode_config::usage::{UsageGroup, UsageQuery, summarize_usage};

use super::journal_gen::write_journal;
use super::median;

/// Arguments of `braincode bench usage`.
#[derive(Debug, clap::Args)]
pub struct UsageBenchArgs {
    /// Session journals.
    #[arg(long, default_value_t = 1_000)]
    pub sessions: u64,
    /// Their total size, in MB (10^6 bytes).
    #[arg(long, default_value_t = 1_000)]
    pub mb: u64,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(args: &UsageBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.sessions > 0 && args.runs > 0,
        "--sessions and --runs must be at least 1"
    );
    let dir = tempfile::tempdir().context("a temporary home")?;
    let home = Home::at(dir.path());
    let sessions = home.sessions_dir();
    std::fs::create_dir_all(&sessions)?;
    let per_session = (args.mb * 1_000_000 / args.sessions).max(1);
    let first = sessions.join("20260101-000000-s00000.jsonl");
    let written = write_journal(&first, per_session)?;
    for n in 1..args.sessions {
        std::fs::copy(
            &first,
            sessions.join(format!("20260101-000000-s{n:05}.jsonl")),
        )?;
    }
    let prices = braincode_config::usage::catalog_prices(&braincode_config::load_models(&home)?);
    let query = UsageQuery {
        since_ms: None,
        by: UsageGroup::Model,
        recent: 0,
    };
    let mut times = Vec::with_capacity(args.runs);
    let mut summary = None;
    for _ in 0..args.runs {
        let started = Instant::now();
        let done = summarize_usage(&home, &query, &prices)?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        summary = Some(done);
    }
    let summary = summary.context("no run")?;
    let median_ms = median(&mut times);
    let mb = summary.bytes_read as f64 / 1e6;
    let figures = serde_json::json!({
        "sessions": summary.files_read,
        "mb": mb,
        "calls": summary.total.calls,
        "costUsd": summary.total.cost_usd,
        "medianMs": median_ms,
        "mbPerSecond": mb / (median_ms / 1000.0),
        "recordsPerSession": written.records,
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        println!(
            "usage over {} sessions, {mb:.0} MB ({} model calls, ${:.2}): median {median_ms:.0} ms ({:.0} MB/s) over {} runs",
            summary.files_read,
            summary.total.calls,
            summary.total.cost_usd,
            mb / (median_ms / 1000.0),
            args.runs
        );
    }
    Ok(ExitCode::SUCCESS)
}
