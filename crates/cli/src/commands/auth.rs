//! `braincode auth`: show or change provider credentials in `auth.json`. Secrets are never
//! printed, and a key is never taken from the command line (it would land in shell history).

use std::io::{IsTerminal, Read, Write};
use std::process::{Command, ExitCode, Stdio};

use braincode_config::{AuthStore, CredentialKind, Home, provider_env_var};

mod login;

pub use login::LoginArgs;

/// `braincode auth` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum AuthCommand {
    /// Show which providers have credentials and of what kind (never the secrets).
    Status(StatusArgs),
    /// Store an API key for a provider; the key is read from standard input.
    Set(ProviderArgs),
    /// Delete the stored credential of a provider.
    Remove(ProviderArgs),
    /// Log in with a subscription (github-copilot, openai-codex) instead of an API key.
    Login(LoginArgs),
}

/// Arguments of `braincode auth status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A provider name argument.
#[derive(Debug, clap::Args)]
pub struct ProviderArgs {
    /// Provider name, as in models.json (`openai`, `anthropic`, `openrouter`, …).
    pub provider: String,
}

/// Runs the command.
pub fn execute(command: AuthCommand) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    let store = AuthStore::new(&home);
    match command {
        AuthCommand::Status(args) => status(&store, args.json),
        AuthCommand::Set(args) => set(&store, &args.provider),
        AuthCommand::Remove(args) => remove(&store, &args.provider),
        AuthCommand::Login(args) => login::login(&home, &args),
    }
}

fn status(store: &AuthStore, json: bool) -> anyhow::Result<ExitCode> {
    let status = store.status()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(ExitCode::SUCCESS);
    }
    if status.providers.is_empty() {
        println!("No credentials in {}.", store.path().display());
    } else {
        println!("Credentials in {}:", store.path().display());
        let width = status
            .providers
            .iter()
            .map(|p| p.provider.len())
            .max()
            .unwrap_or(0);
        for provider in &status.providers {
            let detail = match (provider.kind, provider.expires) {
                (CredentialKind::Oauth, Some(expires)) => format!(
                    " ({} login; access token expires {}, renewed on use)",
                    provider.oauth_provider_id.as_deref().unwrap_or("unknown"),
                    expiry_text(expires)
                ),
                (CredentialKind::ApiKey | CredentialKind::Oauth | CredentialKind::Unknown, _) => {
                    String::new()
                }
            };
            println!(
                "  {:<width$}  {}{detail}",
                provider.provider,
                provider.kind.as_str()
            );
        }
    }
    println!(
        "Keys are looked up in auth.json first, then in the model's apiKeyEnv variable, then in <PROVIDER>_API_KEY (e.g. {}).",
        provider_env_var("openrouter")
    );
    println!(
        "Add one with `braincode auth set <provider>` (the key is read from standard input), or log in with a subscription: `braincode auth login github-copilot|openai-codex`."
    );
    Ok(ExitCode::SUCCESS)
}

/// `at 2026-01-02 03:04 UTC` or `ago: expired at …`, for an expiry in ms since the epoch.
fn expiry_text(expires_ms: i64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(expires_ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| format!("{expires_ms} ms"));
    if expires_ms <= braincode_config::journal::now_ms() {
        format!("(expired) at {at}")
    } else {
        format!("at {at}")
    }
}

/// Turns terminal echo off while a key is typed, and back on when dropped.
struct EchoOff {
    active: bool,
}

impl EchoOff {
    fn new() -> Self {
        let active = Command::new("stty")
            .arg("-echo")
            .stdin(Stdio::inherit())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        Self { active }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if self.active {
            let _ = Command::new("stty")
                .arg("echo")
                .stdin(Stdio::inherit())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A key typed at the terminal (not echoed) or piped on standard input.
pub fn read_key(provider: &str) -> anyhow::Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("API key for {provider} (input hidden, then Enter): ");
        let _ = std::io::stderr().flush();
        let echo = EchoOff::new();
        let mut line = String::new();
        stdin.read_line(&mut line)?;
        drop(echo);
        eprintln!();
        Ok(line)
    } else {
        let mut text = String::new();
        stdin.lock().read_to_string(&mut text)?;
        Ok(text)
    }
}

fn set(store: &AuthStore, provider: &str) -> anyhow::Result<ExitCode> {
    let key = read_key(provider)?;
    store.set_api_key(provider, &key)?;
    println!(
        "Saved the API key for {} in {} (mode 0600).",
        provider.trim(),
        store.path().display()
    );
    Ok(ExitCode::SUCCESS)
}

fn remove(store: &AuthStore, provider: &str) -> anyhow::Result<ExitCode> {
    if store.remove(provider)? {
        println!(
            "Removed the credential of {} from {}.",
            provider.trim(),
            store.path().display()
        );
    } else {
        println!(
            "No credential for {} in {}; nothing to remove.",
            provider.trim(),
            store.path().display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
