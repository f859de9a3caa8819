//! `braincode run`.

use std::process::ExitCode;

/// Arguments of `braincode run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The task.
    #[arg(required = true)]
    pub prompt: Vec<String>,
}

/// Runs the command.
pub fn execute(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode run` is not available in this build yet")
}
