//! `braincode bench baseline`: what taking the patch baseline and the patch summary costs
//! in a repository with a big untracked file (a dataset, a model, a core dump). A file over
//! the hashing limit is identified by its size and modification time, never read.

use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use super::median;

/// Arguments of `braincode bench baseline`.
#[derive(Debug, clap::Args)]
pub struct BaselineBenchArgs {
    /// Size of the untracked file, in MiB (a sparse file: it takes no disk space).
    #[arg(long, default_value_t = 1024)]
    pub size_mib: u64,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 10)]
    pub runs: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(args: BaselineBenchArgs) -> anyhow::Result<ExitCode> {
    let repo = tempfile::tempdir().context("creating a temporary repository")?;
    let root = repo.path().canonicalize()?;
    let status = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&root)
        .stdout(Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "git init failed");
    std::fs::write(root.join("small.txt"), "small\n")?;
    let big = std::fs::File::create(root.join("big.bin"))?;
    big.set_len(args.size_mib * 1024 * 1024)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let runs = args.runs.max(1);
    let mut captures = Vec::with_capacity(runs);
    let mut summaries = Vec::with_capacity(runs);
    let mut pre_existing = 0;
    for index in 0..=runs {
        let started = Instant::now();
        let baseline = runtime
            .block_on(braincode_runtime::PatchBaseline::capture(&root))
            .context("no baseline: is git installed, and an OS sandbox available?")?;
        let capture_ms = started.elapsed().as_secs_f64() * 1_000.0;
        let started = Instant::now();
        let summary = runtime
            .block_on(baseline.summarize(&root))
            .context("no patch summary")?;
        let summary_ms = started.elapsed().as_secs_f64() * 1_000.0;
        pre_existing = summary.pre_existing_changed_files.len();
        // The first round starts git's confined shell: it is not timed.
        if index > 0 {
            captures.push(capture_ms);
            summaries.push(summary_ms);
        }
    }
    let capture_ms = median(&mut captures);
    let summary_ms = median(&mut summaries);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "sizeMib": args.size_mib,
                "runs": runs,
                "baselineMs": capture_ms,
                "summaryMs": summary_ms,
                "preExistingFiles": pre_existing,
            }))?
        );
    } else {
        println!(
            "patch baseline with a {} MiB untracked file, {runs} runs, median: baseline {capture_ms:.2} ms, summary {summary_ms:.2} ms ({pre_existing} file(s) seen as already dirty, not as the run's)",
            args.size_mib
        );
    }
    Ok(ExitCode::SUCCESS)
}
