//! `braincode doctor`.

use std::process::ExitCode;

/// Arguments of `braincode doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn execute(_args: DoctorArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode doctor` is not available in this build yet")
}
