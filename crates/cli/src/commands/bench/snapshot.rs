//! `braincode bench snapshot`.

use std::process::ExitCode;

/// Arguments of `braincode bench snapshot`.
#[derive(Debug, clap::Args)]
pub struct SnapshotBenchArgs {
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(_args: SnapshotBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode bench snapshot` is not available in this build yet")
}
