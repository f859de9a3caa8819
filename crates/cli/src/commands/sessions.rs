//! `braincode sessions`.

use std::process::ExitCode;

/// `braincode sessions` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List,
}

/// Runs the command.
pub fn execute(_args: SessionsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode sessions` is not available in this build yet")
}
