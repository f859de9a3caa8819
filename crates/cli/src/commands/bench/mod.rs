//! `braincode bench`: measure Braincode's own speed. Each benchmark prints its figures and
//! the conditions they were measured under; none of them asserts a threshold.

mod local;
mod overhead;
mod snapshot;

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
}

/// Runs the selected benchmark.
pub fn execute(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Local(args) => local::execute(args),
        BenchCommand::Overhead(args) => overhead::execute(args),
        BenchCommand::Snapshot(args) => snapshot::execute(args),
    }
}
