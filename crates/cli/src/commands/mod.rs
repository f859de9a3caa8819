//! One module per command. Each exposes its clap arguments and an `execute` function that
//! returns the process exit code.

pub mod acp;
pub mod auth;
pub mod bench;
pub mod benchmark;
pub mod checks;
pub mod config;
pub mod doctor;
pub mod fleet;
pub mod mcp;
pub mod mcp_add;
pub mod models;
pub mod models_pull;
pub mod permissions;
pub mod replay;
pub mod run;
pub mod sessions;
pub mod start_mode;
pub mod trust;
pub mod tui;
pub mod undo;
pub mod usage;

/// Routes `tracing` output to stderr, filtered by `BRAINCODE_LOG` (default: warnings only,
/// and nothing from the MCP SDK: Braincode reports every MCP failure itself, with its cause).
/// The interactive session owns the terminal: its logs go to `<home>/logs/session.log`
/// instead (a line on the screen would break the drawing).
pub fn init_tracing(interactive: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BRAINCODE_LOG")
        // The ACP crate warns of every bad request it answers (the editor gets the error).
        .unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("warn,rmcp=off,agent_client_protocol=error")
        });
    if interactive {
        let file = braincode_config::Home::from_env().ok().and_then(|home| {
            std::fs::create_dir_all(home.logs_dir()).ok()?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(home.logs_dir().join("session.log"))
                .ok()
        });
        let _ = match file {
            Some(file) => tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::sync::Mutex::new(file))
                .with_ansi(false)
                .with_target(false)
                .try_init(),
            None => tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(std::io::sink)
                .try_init(),
        };
        return;
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: logs and CI output stay plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// The project a command works in: `--project DIR` or the current directory, canonical,
/// and a directory.
pub fn project_root(project: Option<&std::path::Path>) -> anyhow::Result<std::path::PathBuf> {
    use anyhow::Context;
    let root = match project {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("project directory {} is not accessible", root.display()))?;
    if !root.is_dir() {
        anyhow::bail!("{} is not a directory", root.display());
    }
    Ok(root)
}

/// Builds the async runtime for commands that talk to models or run processes.
pub fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
