//! `braincode bench`: measure Braincode's own speed. Each benchmark prints its figures and
//! the conditions they were measured under; none of them asserts a threshold.

mod acp;
mod baseline;
mod filler;
mod first_run;
mod fleet;
mod fleet_pool;
mod fold;
mod hello;
mod journal_gen;
mod local;
mod mcp;
pub(crate) mod overhead;
mod panel;
mod replay;
mod reply;
mod sandbox;
mod snapshot;
mod tokens;
mod tokens_cache;
mod tokens_model;
mod tokens_repo;
mod usage;
mod writers;
mod writers_worktrees;

use std::process::ExitCode;

/// `braincode bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Embedded local model: load time, prompt and generation speed, peak RSS.
    Local(local::LocalBenchArgs),
    /// Orchestration overhead of a full run against an instant scripted model.
    Overhead(overhead::OverheadBenchArgs),
    /// `@@session` snapshot of a large journal: time and peak RSS.
    Snapshot(snapshot::SnapshotBenchArgs),
    /// Wall time the OS sandbox adds to running a command.
    Sandbox(sandbox::SandboxBenchArgs),
    /// The patch baseline and summary with a big untracked file.
    Baseline(baseline::BaselineBenchArgs),
    /// Peak memory of a run whose model streams a huge reply.
    Reply(reply::ReplyBenchArgs),
    /// Reading and folding a large session journal into reports: time, MB/s, peak RSS.
    Fold(fold::FoldBenchArgs),
    /// `braincode replay` of a journaled multi-worker run: time and whether it was identical.
    Replay(replay::ReplayBenchArgs),
    /// MCP: first model request with a slow server, request bytes of lazy vs all schemas,
    /// tool-call round trip.
    Mcp(mcp::McpBenchArgs),
    /// Input tokens and request bytes of a multi-worker run: strict isolation vs a shared
    /// transcript.
    #[command(long_about = tokens::LONG_ABOUT)]
    Tokens(tokens::TokensBenchArgs),
    /// `braincode usage` over many large journals (default 1,000 sessions, 1 GB).
    Usage(usage::UsageBenchArgs),
    /// The control panel: start time and page weight.
    Panel(panel::PanelBenchArgs),
    /// A first "Say hello" to a remote model: request bytes, time to the request, wall, peak
    /// RSS.
    Hello(hello::HelloBenchArgs),
    /// Parallel writers: wall time of 3 writers vs 1, worktree start/add/remove on a
    /// 10,000-file repository, merge-back time, disk per writer.
    Writers(writers::WritersBenchArgs),
    /// The fleet on NATS: tasks per minute with 1, 2 and 4 workers, submit-to-start,
    /// redelivery after a worker is killed, idle worker RSS.
    Fleet(fleet::FleetBenchArgs),
    /// `braincode acp` as an editor sees it: prompt to first update, idle RSS.
    Acp(acp::AcpBenchArgs),
}

/// Runs the selected benchmark.
pub fn execute(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Local(args) => local::execute(args),
        BenchCommand::Acp(args) => acp::execute(args),
        BenchCommand::Overhead(args) => overhead::execute(args),
        BenchCommand::Snapshot(args) => snapshot::execute(args),
        BenchCommand::Sandbox(args) => sandbox::execute(args),
        BenchCommand::Baseline(args) => baseline::execute(args),
        BenchCommand::Reply(args) => reply::execute(args),
        BenchCommand::Fold(args) => fold::execute(args),
        BenchCommand::Replay(args) => replay::execute(args),
        BenchCommand::Mcp(args) => mcp::execute(args),
        BenchCommand::Tokens(args) => tokens::execute(args),
        BenchCommand::Usage(args) => usage::execute(&args),
        BenchCommand::Panel(args) => panel::execute(&args),
        BenchCommand::Hello(args) => hello::execute(&args),
        BenchCommand::Writers(args) => writers::execute(args),
        BenchCommand::Fleet(args) => fleet::execute(args),
    }
}

/// A field of `/proc/self/status` in KiB (`VmHWM:` = peak RSS, `VmRSS:` = current RSS): the
/// counters `getrusage` reports, read from procfs so the binary needs no FFI. `None` off Linux.
pub(crate) fn proc_status_kib(field: &str) -> Option<u64> {
    status_kib("/proc/self/status", field)
}

/// A field of a `/proc/<pid>/status` file in KiB (see [`proc_status_kib`]); `None` once the
/// process is gone.
pub(crate) fn status_kib(path: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(path).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Median of `values` (sorted in place); 0 when empty.
pub(crate) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs this binary again with `args` (a measurement in a process of its own, so its peak
/// memory is its own) and returns what it printed; a failed child is an error with its stderr.
pub(super) async fn run_self(args: &[&str]) -> anyhow::Result<String> {
    use anyhow::Context;
    let exe = std::env::current_exe().context("cannot find the braincode executable")?;
    let output = tokio::process::Command::new(exe)
        .args(args)
        .output()
        .await?;
    anyhow::ensure!(
        output.status.success(),
        "the measured run (`braincode {}`) failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
