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
    let cli = match Cli::try_parse() {
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
    let result = match command {
        Command::Run(args) => commands::run::execute(args),
        Command::Tui(args) => commands::tui::execute(args),
        Command::Replay(args) => commands::replay::execute(args),
        Command::Sessions(cmd) => commands::sessions::execute(cmd),
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
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            let message = format!("error: {err:#}");
            eprintln!("{}", braincode_protocol::secrets::redact_secrets(&message));
            ExitCode::from(1)
        }
    }
}
