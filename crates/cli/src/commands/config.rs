//! `braincode config` (alias `serve`): the local control panel in the browser. It listens on
//! 127.0.0.1 only and prints an address carrying a one-time token; without the token every
//! request is refused.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

use anyhow::Context;
use braincode_config::Home;
use braincode_server::{ServeOptions, start};

/// Options of `braincode config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// Port on 127.0.0.1 (default: settings.json's `configServer.port` when the file names
    /// one, else any free one; 0 is any free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// The project whose permissions, MCP servers, hooks and routing the panel shows
    /// (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Print the address without opening a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Show the fleet's sessions too, live.
    #[command(flatten)]
    pub fleet: super::fleet::FleetJournals,
}

/// Runs the command: serves until Ctrl-C or SIGTERM.
pub fn execute(args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let project_root = super::project_root(args.project.as_deref())?;
    let port = match args.port {
        Some(port) => port,
        None => saved_port(&home)?,
    };
    let runtime = super::tokio_runtime()?;
    runtime.block_on(async {
        if args.fleet.url.is_some() {
            // The fleet's journals reach the sessions directory as they are written: the
            // panel's sessions page sees fleet runs live.
            let fleet = args.fleet.clone();
            let home = home.clone();
            tokio::spawn(async move {
                if let Err(err) = fleet.mirror(&home, true).await {
                    eprintln!("fleet sessions are not shown: {err:#}");
                }
            });
        }
        let panel = start(ServeOptions {
            home,
            project_root,
            port,
            token: None,
        })
        .await?;
        let url = panel.url();
        {
            // Whoever started the panel may stop reading once it has the address: a closed
            // stdout must not stop the server.
            let mut stdout = std::io::stdout().lock();
            let _ = write!(
                stdout,
                "Braincode control panel: {url}\nOnly this address opens it (it carries the access token). Ctrl-C stops it.\n"
            );
            let _ = stdout.flush();
        }
        if !args.no_open && std::io::stdout().is_terminal() {
            open_browser(&url);
        }
        wait_for_stop().await;
        panel.shutdown().await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The port settings.json names (`configServer.port`, as the panel's Settings page writes
/// it), or 0 (any free port) when it names none: the default 14580 is not taken unasked, so
/// two panels started without a port do not collide. The panel always listens on 127.0.0.1.
fn saved_port(home: &Home) -> anyhow::Result<u16> {
    let settings = braincode_config::load_settings(home)?;
    let Ok(text) = std::fs::read_to_string(home.settings_path()) else {
        return Ok(0);
    };
    let named = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .is_some_and(|value| value["configServer"]["port"].is_u64());
    Ok(if named {
        settings.config_server.port
    } else {
        0
    })
}

/// Hands the address to the desktop's browser; a failure only means the user opens it.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("(could not start {opener}: open the address above in your browser)");
    }
}

async fn wait_for_stop() {
    #[cfg(unix)]
    {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_the_one_settings_names_else_any_free_one() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        assert_eq!(saved_port(&home).unwrap(), 0, "no settings.json");
        std::fs::write(home.settings_path(), "{\"mode\": \"auto\"}").unwrap();
        assert_eq!(saved_port(&home).unwrap(), 0, "no configServer.port");
        std::fs::write(
            home.settings_path(),
            "{\"configServer\": {\"port\": 15123}}",
        )
        .unwrap();
        assert_eq!(saved_port(&home).unwrap(), 15123);
        std::fs::write(home.settings_path(), "{\"configServer\": {\"port\": 0}}").unwrap();
        assert!(
            saved_port(&home).is_err(),
            "a broken settings.json is an error"
        );
    }
}
