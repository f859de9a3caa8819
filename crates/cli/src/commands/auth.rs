//! `braincode auth`.

use std::process::ExitCode;

/// `braincode auth` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuthCommand {
    /// Show which providers have credentials (never the secrets).
    Status,
}

/// Runs the command.
pub fn execute(_args: AuthCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode auth` is not available in this build yet")
}
