//! `braincode trust [DIR]`: let a project's hooks, MCP servers, settings and checks run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use braincode_config::{Home, TrustState, check_trust, trust_project, untrust_project};

/// Arguments of `braincode trust`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "A project's .agents/hooks.json, .mcp.json and .braincode/*.json can run \
commands on your machine. They stay off until you trust the project, and a file that changes \
afterwards needs trust again. Read them before you trust a repository you did not write."
)]
pub struct TrustArgs {
    /// The project (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Show whether the project is trusted and which files trust covers; change nothing.
    #[arg(long, conflicts_with = "revoke")]
    pub status: bool,
    /// Forget the trust given to this project.
    #[arg(long)]
    pub revoke: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Trusts a project and says what that enabled (also used by `run --trust`).
pub fn trust_and_report(home: &Home, dir: &Path) -> anyhow::Result<String> {
    let files = trust_project(home, dir)?;
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    Ok(if files.is_empty() {
        format!(
            "trusted {} (it has no hooks, MCP servers, settings or checks yet; any added later will need trust again)",
            root.display()
        )
    } else {
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        format!("trusted {}: {}", root.display(), names.join(", "))
    })
}

/// Runs the command.
pub fn execute(args: TrustArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let dir = match args.dir {
        Some(dir) => dir,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !dir.is_dir() {
        anyhow::bail!("{} is not a directory", dir.display());
    }
    if args.revoke {
        let removed = untrust_project(&home, &dir)?;
        println!(
            "{}",
            if removed {
                format!("{}: trust revoked", dir.display())
            } else {
                format!("{}: was not trusted", dir.display())
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.status {
        let (trust, error) = check_trust(&home, &dir);
        if let Some(error) = error {
            eprintln!("warning: {error}");
        }
        if args.json {
            println!("{}", serde_json::to_string_pretty(&trust)?);
            return Ok(ExitCode::SUCCESS);
        }
        let line = match &trust.state {
            TrustState::NothingToTrust => {
                "nothing to trust: no hooks, MCP servers, settings or checks".to_string()
            }
            TrustState::Trusted => "trusted".to_string(),
            TrustState::Untrusted { .. } => trust.notice().unwrap_or_default(),
        };
        println!("{}: {line}", trust.root.display());
        return Ok(ExitCode::SUCCESS);
    }
    println!("{}", trust_and_report(&home, &dir)?);
    Ok(ExitCode::SUCCESS)
}
