//! `braincode mcp add tavily`: web search in one step, as the TypeScript panel's Tavily
//! button did it. The key goes to auth.json (0600, atomic); the server entry in the user's
//! mcp.json refers to it (`${BRAINCODE_AUTH:tavily}`) and never holds it.

use std::process::ExitCode;

use braincode_config::{
    Added, AuthStore, Home, OnExisting, TAVILY, TavilyKey, provider_env_var, setup_tavily,
};

/// A server `braincode mcp add` knows how to configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpPreset {
    /// Tavily web search (`tavily-mcp`): the key from --key, TAVILY_API_KEY or auth.json.
    Tavily,
}

/// `braincode mcp add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server to add.
    pub preset: McpPreset,
    /// Its API key (`-`: read it from standard input, which keeps it out of shell history).
    /// Without it, TAVILY_API_KEY, else the key auth.json already has.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    /// Replace an existing server of the same name in mcp.json.
    #[arg(long)]
    pub force: bool,
}

/// Where the key came from, as the confirmation says it.
enum KeySource {
    Argument,
    Environment(String),
    Stored,
}

/// Runs `braincode mcp add`.
pub fn execute(args: &AddArgs) -> anyhow::Result<ExitCode> {
    let home = Home::from_env()?;
    match args.preset {
        McpPreset::Tavily => add_tavily(&home, args),
    }
}

fn add_tavily(home: &Home, args: &AddArgs) -> anyhow::Result<ExitCode> {
    let store = AuthStore::new(home);
    let env_var = provider_env_var(TAVILY);
    let (key, source) = match args.key.as_deref() {
        Some("-") => (Some(super::auth::read_key(TAVILY)?), KeySource::Argument),
        Some(key) => (Some(key.to_string()), KeySource::Argument),
        None => match std::env::var(&env_var) {
            Ok(key) if !key.trim().is_empty() => {
                (Some(key), KeySource::Environment(env_var.clone()))
            }
            _ => (None, KeySource::Stored),
        },
    };
    let on_existing = if args.force {
        OnExisting::Replace
    } else {
        OnExisting::Refuse
    };
    let given = match &key {
        Some(key) => TavilyKey::Given(key),
        None => TavilyKey::Stored,
    };
    let added = setup_tavily(home, given, on_existing)?;
    println!(
        "{} MCP server {TAVILY} in {} (npx -y tavily-mcp@latest, network allowed).",
        match added {
            Added::New => "Added",
            Added::Replaced => "Replaced",
        },
        home.mcp_path().display()
    );
    let from = match source {
        KeySource::Argument => "saved".to_string(),
        KeySource::Environment(var) => format!("saved from {var}"),
        KeySource::Stored => "already there".to_string(),
    };
    println!(
        "Its key is in {} (mode 0600, {from}); mcp.json refers to it as ${{BRAINCODE_AUTH:{TAVILY}}}.",
        store.path().display()
    );
    println!(
        "Agents search the web with mcp__{TAVILY}__tavily_search; results are reused within a run. `braincode mcp test {TAVILY}` checks the server."
    );
    Ok(ExitCode::SUCCESS)
}
