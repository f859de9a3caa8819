//! `braincode models`.

use std::process::ExitCode;

/// `braincode models` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List the model catalogue.
    List,
}

/// Runs the command.
pub fn execute(_args: ModelsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode models` is not available in this build yet")
}
