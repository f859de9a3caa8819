//! The `braincode` binary: a multi-agent coding assistant that routes each part of a task to
//! the model that fits it.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod commands;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Braincode: one Brain plans, isolated specialist workers help, one agent acts and answers.
///
/// With no command, on a terminal, `braincode` opens the interactive session in the current
/// project (the same as `braincode tui`). Words that are not a command are a task:
/// `braincode explain this repo` is `braincode run explain this repo`.
#[derive(Debug, Parser)]
#[command(
    name = "braincode",
    version,
    about,
    long_about = None,
    propagate_version = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The interactive session's options (`braincode --continue` reopens this project's
    /// latest session).
    #[command(flatten)]
    session: commands::tui::TuiArgs,
    /// Run one task and print its answer, without the interactive session (the same as
    /// `braincode run <task>`).
    #[arg(short = 'p', long = "print", value_name = "TASK")]
    print: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a task: plan, isolated workers, primary agent, review, one final answer.
    Run(commands::run::RunArgs),
    /// The interactive session: requests, live workers, approvals, slash commands.
    Tui(commands::tui::TuiArgs),
    /// Run a journaled run's orchestration again from its journal (no network, nothing run).
    Replay(commands::replay::ReplayArgs),
    /// List and inspect session journals.
    #[command(subcommand)]
    Sessions(commands::sessions::SessionsCommand),
    /// Many runs on many machines: a task queue and workers on NATS JetStream.
    Fleet(Box<commands::fleet::FleetArgs>),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim,
    /// Emacs) that start Braincode as their agent.
    Acp(commands::acp::AcpArgs),
    /// Check the configuration, credentials and tools, with a fix for each problem.
    Doctor(commands::doctor::DoctorArgs),
    /// List, test, discover and pull models.
    #[command(subcommand)]
    Models(commands::models::ModelsCommand),
    /// Show or change provider credentials (secrets are never printed).
    #[command(subcommand)]
    Auth(commands::auth::AuthCommand),
    /// Explain permission decisions.
    #[command(subcommand)]
    Permissions(commands::permissions::PermissionsCommand),
    /// List MCP servers and their health, test one, show its tools.
    #[command(subcommand)]
    Mcp(commands::mcp::McpCommand),
    /// List the project's checks, or run those the current changes select.
    #[command(subcommand)]
    Checks(commands::checks::ChecksCommand),
    /// Trust a project: let its hooks, MCP servers, settings and checks run.
    Trust(commands::trust::TrustArgs),
    /// Put back the files a run changed.
    Undo(commands::undo::UndoArgs),
    /// The control panel in the browser: models, brains, routing, permissions, MCP, hooks,
    /// sessions (live) and usage, on 127.0.0.1 behind a one-time token.
    #[command(alias = "serve")]
    Config(commands::config::ConfigArgs),
    /// Tokens and cost across sessions, by day, role, model, project or session.
    Usage(commands::usage::UsageArgs),
    /// How well a brain plans: the planning benchmark.
    #[command(subcommand)]
    Benchmark(commands::benchmark::BenchmarkCommand),
    /// Measure Braincode's own speed.
    #[command(subcommand)]
    Bench(commands::bench::BenchCommand),
    /// Words that are not a command: a task (`braincode explain this repo`).
    #[command(external_subcommand)]
    Task(Vec<String>),
}

/// `braincode run …` by itself: the headless path parses with the `run` command alone (see
/// [`run_only`]).
#[derive(Debug, Parser)]
#[command(name = "braincode", version, propagate_version = true)]
struct RunOnly {
    #[command(subcommand)]
    command: RunOnlyCommand,
}

#[derive(Debug, Subcommand)]
enum RunOnlyCommand {
    Run(commands::run::RunArgs),
}

/// The arguments of `braincode run …`, parsed without building every other command's
/// arguments (in a fresh process that is megabytes of code pages and part of the time to the
/// first model request). `None` for any other command line and for anything but a successful
/// parse (help, version, a usage error), which the whole parser then reports as always.
fn run_only(args: &[std::ffi::OsString]) -> Option<commands::run::RunArgs> {
    if args.get(1).is_none_or(|arg| arg != "run") {
        return None;
    }
    match RunOnly::try_parse_from(args) {
        Ok(RunOnly {
            command: RunOnlyCommand::Run(run),
        }) => Some(run),
        Err(_) => None,
    }
}

/// `braincode <words…>` whose first word is no command: the `run` command of those words
/// (flags among them are `run`'s), or, for a single word that reads as a mistyped command,
/// the usage error that names the command (exit 2).
fn task_command(words: Vec<String>) -> Result<commands::run::RunArgs, ExitCode> {
    if let [word] = words.as_slice() {
        let cli = Cli::command();
        let names = cli
            .get_subcommands()
            .flat_map(|c| std::iter::once(c.get_name()).chain(c.get_all_aliases()));
        if let Some(command) = commands::run::words::typo_of(word, names) {
            eprintln!(
                "error: unrecognized subcommand '{word}'\n\n  tip: a similar subcommand exists: '{command}'\n  tip: to run it as a task: braincode run {word}\n\nFor more information, try '--help'."
            );
            return Err(ExitCode::from(2));
        }
    }
    let args = ["braincode", "run"]
        .map(String::from)
        .into_iter()
        .chain(words);
    match Cli::try_parse_from(args) {
        Ok(Cli {
            command: Some(Command::Run(args)),
            ..
        }) => Ok(args),
        Ok(_) => Err(ExitCode::from(2)),
        Err(err) => {
            let _ = err.print();
            Err(ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2)))
        }
    }
}

/// A closed standard output (`braincode sessions list | head -1`) ends the process quietly
/// with 141, as git and other Unix tools do, whatever command was printing (Rust's `print!`
/// panics on `EPIPE`, and SIGPIPE stays ignored so that sockets and child pipes report
/// errors instead of killing Braincode); every other panic is reported as before.
fn exit_quietly_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    // Inside the sandbox, the network allowlist's bridge (not a user command).
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == braincode_sandbox::netbridge::BRIDGE_COMMAND)
    {
        return match braincode_sandbox::netbridge::bridge_main(&args[2..]) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(message) => {
                eprintln!("braincode network bridge: {message}");
                ExitCode::from(126)
            }
        };
    }
    exit_quietly_on_closed_stdout();
    if let Some(run) = run_only(&args) {
        braincode_protocol::secrets::register_environment_secrets();
        commands::init_tracing(false);
        return finish(commands::run::execute(run));
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            // clap prints help/version to stdout (exit 0) and usage errors to stderr (exit 2).
            let code = err.exit_code();
            let _ = err.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    // Every credential in the environment is redacted wherever text leaves the process.
    braincode_protocol::secrets::register_environment_secrets();
    let interactive = cli.command.is_none() && cli.print.is_none()
        || matches!(cli.command, Some(Command::Tui(_)));
    commands::init_tracing(interactive);
    let command = match (cli.command, cli.print) {
        (Some(command), None) => command,
        (None, Some(task)) => match Cli::try_parse_from(cli.session.as_run_args(&task)) {
            Ok(Cli {
                command: Some(command),
                ..
            }) => command,
            _ => return ExitCode::from(2),
        },
        (Some(_), Some(_)) => {
            eprintln!("error: -p/--print runs one task by itself; it does not go with a command");
            return ExitCode::from(2);
        }
        (None, None) => Command::Tui(cli.session),
    };
    finish(match command {
        Command::Run(args) => commands::run::execute(args),
        Command::Tui(args) => commands::tui::execute(args),
        Command::Replay(args) => commands::replay::execute(args),
        Command::Sessions(cmd) => commands::sessions::execute(cmd),
        Command::Fleet(args) => commands::fleet::execute(args),
        Command::Acp(args) => commands::acp::execute(args),
        Command::Doctor(args) => commands::doctor::execute(args),
        Command::Models(cmd) => commands::models::execute(cmd),
        Command::Auth(cmd) => commands::auth::execute(cmd),
        Command::Permissions(cmd) => commands::permissions::execute(cmd),
        Command::Mcp(cmd) => commands::mcp::execute(cmd),
        Command::Checks(cmd) => commands::checks::execute(cmd),
        Command::Trust(args) => commands::trust::execute(args),
        Command::Undo(args) => commands::undo::execute(args),
        Command::Usage(args) => commands::usage::execute(&args),
        Command::Config(args) => commands::config::execute(args),
        Command::Bench(cmd) => commands::bench::execute(cmd),
        Command::Benchmark(cmd) => commands::benchmark::execute(cmd),
        Command::Task(words) => match task_command(words) {
            Ok(args) => commands::run::execute(args),
            Err(code) => return code,
        },
    })
}

/// The exit code of a command's result; an error is printed (secrets redacted) and exits 1.
fn finish(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(err) => {
            let message = format!("error: {err:#}");
            eprintln!("{}", braincode_protocol::secrets::redact_secrets(&message));
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `run` fast path reads every command line exactly as the whole parser does, and
    /// leaves help, version and usage errors to it.
    #[test]
    fn run_only_parses_as_the_whole_parser() {
        let lines: [&[&str]; 7] = [
            &["run", "Say", "hello"],
            &["run", "--json", "--brain", "b", "--mode", "radical", "x"],
            &[
                "run",
                "-y",
                "--allow-network=registries",
                "--max-cost",
                "$0.5",
                "x",
            ],
            &["run", "--resume", "abc"],
            &[
                "run",
                "--prompt-file",
                "p.txt",
                "--project",
                "/tmp",
                "--trust",
            ],
            &["run", "-c", "--summary-only", "--", "-x", "y"],
            &[
                "run",
                "--allow-edits",
                "--max-tokens",
                "100",
                "--dry-run",
                "--heuristic",
                "t",
            ],
        ];
        for line in lines {
            let argv: Vec<std::ffi::OsString> = std::iter::once("braincode")
                .chain(line.iter().copied())
                .map(Into::into)
                .collect();
            let fast = run_only(&argv).unwrap();
            let Some(Command::Run(whole)) = Cli::try_parse_from(&argv).unwrap().command else {
                panic!("{line:?} is not a run");
            };
            assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{line:?}");
        }
        for line in [
            &["run"][..],
            &["run", "--help"],
            &["run", "--version"],
            &["run", "--json", "--events", "x"],
            &["run", "--bogus", "x"],
            &["runx", "x"],
            &["sessions", "list"],
            &[],
        ] {
            let argv: Vec<std::ffi::OsString> = std::iter::once("braincode")
                .chain(line.iter().copied())
                .map(Into::into)
                .collect();
            assert!(run_only(&argv).is_none(), "{line:?}");
        }
    }
}
