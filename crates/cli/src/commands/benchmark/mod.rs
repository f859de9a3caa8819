//! `braincode benchmark`: how well a brain plans (and, later, executes) real tasks, as
//! opposed to `braincode bench`, which measures Braincode's own speed.

pub mod plan;

use std::process::ExitCode;

/// `braincode benchmark` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchmarkCommand {
    /// The planning benchmark: built-in tasks (EN and ZH) planned by the heuristic and,
    /// with `--router`, the brain's router; exit 1 when a plan misses an expectation.
    Plan(plan::PlanArgs),
}

/// Runs the command.
pub fn execute(command: BenchmarkCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchmarkCommand::Plan(args) => plan::execute(&args),
    }
}
