//! `braincode bench overhead`.

use std::process::ExitCode;

/// Arguments of `braincode bench overhead`.
#[derive(Debug, clap::Args)]
pub struct OverheadBenchArgs {
    /// Print the figures as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the benchmark.
pub fn execute(_args: OverheadBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode bench overhead` is not available in this build yet")
}
