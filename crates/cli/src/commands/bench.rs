//! `braincode bench`.

use std::process::ExitCode;

/// `braincode bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Orchestration overhead with an instant scripted model.
    Overhead,
}

/// Runs the command.
pub fn execute(_args: BenchCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode bench` is not available in this build yet")
}
