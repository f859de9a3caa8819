//! `braincode bench local`.

use std::process::ExitCode;

/// Arguments of `braincode bench local`.
#[derive(Debug, clap::Args)]
pub struct LocalBenchArgs {
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(_args: LocalBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode bench local` is not available in this build yet")
}
