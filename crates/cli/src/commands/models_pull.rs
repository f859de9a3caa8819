//! `braincode models pull`.

use std::process::ExitCode;

/// Arguments of `braincode models pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// Which model (only `smollm2` is built in).
    #[arg(default_value = "smollm2")]
    pub name: String,
}

/// Runs the command.
pub fn execute(_args: PullArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode models pull` is not available in this build yet")
}
