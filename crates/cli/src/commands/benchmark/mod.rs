//! `braincode benchmark`: how well a brain plans and executes real tasks, as
//! opposed to `braincode bench`, which measures Braincode's own speed.

pub mod exec;
mod mock;
pub mod plan;
mod report;

use std::process::ExitCode;

/// `braincode benchmark` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum BenchmarkCommand {
    /// The planning benchmark: built-in tasks (EN and ZH) planned by the heuristic and,
    /// with `--router`, the brain's router; exit 1 when a plan misses an expectation.
    Plan(plan::PlanArgs),
    /// The execution benchmark: small real projects (Rust, Python, Node) run end to end in a
    /// temporary git repository, checked against what must come of them; `--compare A B`
    /// ranks two brains.
    Exec(exec::ExecArgs),
}

/// Runs the command.
pub fn execute(command: BenchmarkCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchmarkCommand::Plan(args) => plan::execute(&args),
        BenchmarkCommand::Exec(args) => exec::execute(&args),
    }
}
