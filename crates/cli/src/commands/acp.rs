//! `braincode acp`: Braincode as an Agent Client Protocol agent, for editors (Zed, JetBrains,
//! Neovim, Emacs) that start it and speak JSON-RPC on its stdin/stdout.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use braincode_acp::{AcpOptions, Stdio};
use braincode_config::Home;
use clap::Args;

/// `braincode acp` options.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The permission mode new sessions start in.
    #[command(flatten)]
    pub start: super::start_mode::StartMode,
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
        default_mode: args.start.mode(),
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
