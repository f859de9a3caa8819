//! `braincode permissions`.

use std::process::ExitCode;

/// `braincode permissions` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum PermissionsCommand {
    /// Show the decision for a hypothetical tool call and the rules that matched.
    Check,
}

/// Runs the command.
pub fn execute(_args: PermissionsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`braincode permissions` is not available in this build yet")
}
