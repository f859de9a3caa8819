//! `braincode acp`: Braincode as an Agent Client Protocol agent, for editors (Zed, JetBrains,
//! Neovim, Emacs) that start it and speak JSON-RPC on its stdin/stdout.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use braincode_acp::{AcpOptions, Stdio};
use braincode_config::Home;
use braincode_runtime::PermissionMode;
use clap::Args;

/// `braincode acp` options.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// New sessions start in `edits` mode (edits apply, sandboxed commands run). The default
    /// is `ask`: each edit and command asks in the editor. The editor's mode switch changes
    /// a session's mode (read-only, ask, edits, yes).
    #[arg(long, group = "permission")]
    pub allow_edits: bool,
    /// New sessions start in `read-only` mode.
    #[arg(long, group = "permission")]
    pub read_only: bool,
    /// New sessions start in `yes` mode: every tool call runs without asking (in the OS
    /// sandbox; permission deny rules still apply).
    #[arg(long, short = 'y', group = "permission")]
    pub yes: bool,
    /// Seconds a permission request waits for an answer before the call is blocked.
    #[arg(long, default_value_t = braincode_acp::DEFAULT_PERMISSION_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub permission_timeout: u64,
    /// Let commands reach the network (the OS sandbox cuts it off otherwise).
    #[arg(long)]
    pub allow_network: bool,
}

/// Serves ACP on stdin/stdout until the editor closes stdin.
pub fn execute(args: AcpArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let options = AcpOptions {
        home,
        permission_timeout: Duration::from_secs(args.permission_timeout),
        default_mode: if args.yes {
            PermissionMode::Yes
        } else if args.allow_edits {
            PermissionMode::AllowEdits
        } else if args.read_only {
            PermissionMode::ReadOnly
        } else {
            PermissionMode::Ask
        },
        allow_network: args.allow_network,
        stop: tokio_util::sync::CancellationToken::new(),
    };
    let runtime = super::tokio_runtime()?;
    runtime.block_on(async move {
        // An editor stops its agent with SIGTERM (often a second after closing stdin): the
        // runs still end with their final answer and a closed journal.
        let stop = options.stop.clone();
        tokio::spawn(async move {
            let mut term =
                match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                    Ok(term) => term,
                    Err(err) => {
                        tracing::warn!("SIGTERM cannot be watched: {err}");
                        return;
                    }
                };
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            stop.cancel();
        });
        braincode_acp::serve(options, Stdio::new())
            .await
            .map_err(|err| anyhow::anyhow!("ACP connection failed: {}", err.message))
    })?;
    Ok(ExitCode::SUCCESS)
}
