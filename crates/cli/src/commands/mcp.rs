//! `braincode mcp`: the configured MCP servers and their health (`list`), one server's
//! connection (`test`) and its tools as agents see them (`tools`). An untrusted project's
//! servers are listed, never started. Environment and header values are never printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use braincode_config::Home;
use braincode_mcp::ToolInfo;
use braincode_runtime::{CHECK_BUDGET, McpCheckStatus, McpServerCheck, McpSetup};
use braincode_runtime::{PlannedServer, exposed_name};
use serde::Serialize;
use serde_json::{Value, json};

/// `braincode mcp` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum McpCommand {
    /// Every configured server (project and user) with its status; connects to each one
    /// that may start (in parallel, 8 s each) unless --no-connect.
    List(ListArgs),
    /// Connect to one server, list its tools and say how it went.
    Test(ServerArgs),
    /// A server's tools as agents see them (`mcp__<server>__<tool>`).
    Tools(ToolsArgs),
    /// Add a known server to the user's mcp.json: `tavily` (web search; its key goes to
    /// auth.json).
    Add(super::mcp_add::AddArgs),
}

/// `braincode mcp list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// Show the configuration only; start nothing.
    #[arg(long)]
    pub no_connect: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// `braincode mcp test`.
#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// The server's name (the key in mcp.json).
    pub name: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
}

/// `braincode mcp tools`.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// The server and output options.
    #[command(flatten)]
    pub server: ServerArgs,
    /// Print each tool's input schema.
    #[arg(long)]
    pub schemas: bool,
}

/// Runs the command.
pub fn execute(cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::List(args) => list(&args),
        McpCommand::Test(args) => test(&args),
        McpCommand::Tools(args) => tools(&args),
        McpCommand::Add(args) => super::mcp_add::execute(&args),
    }
}

/// What every subcommand reads: the home, the project, the planned servers and the
/// sandbox's extra writable roots.
pub struct Loaded {
    /// The Braincode home.
    pub home: Home,
    /// The project root.
    pub project_root: PathBuf,
    /// The planned servers, the problems reading their files and the sandbox's roots.
    pub setup: McpSetup,
}

impl Loaded {
    /// Reads the MCP files and settings.json with the loaders a run uses.
    pub fn read(home: Home, project_root: PathBuf) -> anyhow::Result<Self> {
        let settings = braincode_runtime::load_settings(&home)?;
        let (trust, _) = braincode_config::check_trust(&home, &project_root);
        Ok(Self::with_settings(home, project_root, &trust, &settings))
    }

    /// The same with settings already read.
    pub fn with_settings(
        home: Home,
        project_root: PathBuf,
        trust: &braincode_config::ProjectTrust,
        settings: &braincode_config::Settings,
    ) -> Self {
        let setup = McpSetup::read(&home, &project_root, trust, settings);
        Self {
            home,
            project_root,
            setup,
        }
    }

    pub fn check(
        &self,
        planned: &[PlannedServer],
        budget: Duration,
    ) -> anyhow::Result<Vec<McpServerCheck>> {
        let runtime = super::tokio_runtime()?;
        let rows =
            runtime.block_on(
                self.setup
                    .check(&self.home, &self.project_root, planned, budget),
            );
        runtime.shutdown_timeout(Duration::from_millis(500));
        Ok(rows)
    }
}

fn load(project: Option<&Path>) -> anyhow::Result<Loaded> {
    let home = Home::from_env().context("cannot locate the Braincode home")?;
    let project_root = super::project_root(project)?;
    Loaded::read(home, project_root)
}

fn list(args: &ListArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(args.project.as_deref())?;
    let rows = if args.no_connect {
        loaded
            .setup
            .planned
            .iter()
            .map(McpServerCheck::of)
            .collect()
    } else {
        loaded.check(&loaded.setup.planned, CHECK_BUDGET)?
    };
    let failed = rows.iter().any(|r| r.status == McpCheckStatus::Failed);
    if args.json {
        let value = json!({
            "project": loaded.project_root.display().to_string(),
            "connected": !args.no_connect,
            "servers": rows,
            "warnings": loaded.setup.warnings,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        for warning in &loaded.setup.warnings {
            eprintln!("warning: {warning}");
        }
        print_list(&rows, args.no_connect);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_list(rows: &[McpServerCheck], no_connect: bool) {
    if rows.is_empty() {
        println!(
            "no MCP servers configured: add them to ~/.braincode/mcp.json or the project's .mcp.json"
        );
        return;
    }
    for row in rows {
        print_server(row);
    }
    let count = |status| rows.iter().filter(|r| r.status == status).count();
    println!();
    if no_connect {
        println!(
            "{} server(s): {} startable, {} skipped (not connected: --no-connect)",
            rows.len(),
            count(McpCheckStatus::NotChecked),
            count(McpCheckStatus::Skipped)
        );
    } else {
        println!(
            "{} server(s): {} ok, {} failed, {} skipped",
            rows.len(),
            count(McpCheckStatus::Ok),
            count(McpCheckStatus::Failed),
            count(McpCheckStatus::Skipped)
        );
    }
}

/// A server's block: status line, fix, and how it is configured.
fn print_server(row: &McpServerCheck) {
    println!("{}", row.headline(0));
    if let Some(fix) = &row.fix {
        println!("    → {fix}");
    }
    if let Some(command) = &row.command {
        println!("    command: {command}");
    }
    if let Some(url) = &row.url {
        println!("    url: {url}");
    }
    if !row.env.is_empty() {
        println!("    env: {}", row.env.join(", "));
    }
    if !row.headers.is_empty() {
        println!("    headers: {}", row.headers.join(", "));
    }
    println!(
        "    loading {} · schemas {} · {}",
        row.loading, row.schemas, row.source
    );
}

/// The one server named `name` (a startable one first, when a name is used twice), or the
/// exit code of a usage error (2) after saying which names there are.
fn find<'a>(loaded: &'a Loaded, name: &str) -> Result<&'a PlannedServer, ExitCode> {
    let mut matching = loaded.setup.planned.iter().filter(|p| p.name() == name);
    let first = matching.clone().next();
    match matching.find(|p| p.startable()).or(first) {
        Some(server) => Ok(server),
        None => {
            let names: Vec<&str> = loaded
                .setup
                .planned
                .iter()
                .map(PlannedServer::name)
                .collect();
            if names.is_empty() {
                eprintln!(
                    "error: no MCP server named {name:?}: no servers are configured \
                     (~/.braincode/mcp.json, the project's .mcp.json)"
                );
            } else {
                eprintln!(
                    "error: no MCP server named {name:?}; configured: {}",
                    names.join(", ")
                );
            }
            Err(ExitCode::from(2))
        }
    }
}

/// Connects to one server: its row (skipped rows as they are).
fn check_one(loaded: &Loaded, server: &PlannedServer) -> anyhow::Result<McpServerCheck> {
    if !server.startable() {
        return Ok(McpServerCheck::of(server));
    }
    // The server's own startup timeout decides; the budget only bounds a hung hub.
    let budget = server.config.startup_timeout_ms.map_or(
        braincode_mcp::DEFAULT_STARTUP_TIMEOUT,
        Duration::from_millis,
    ) + Duration::from_secs(1);
    let mut rows = loaded.check(std::slice::from_ref(server), budget)?;
    rows.pop()
        .context("the check gave no result for the server")
}

fn test(args: &ServerArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(args.project.as_deref())?;
    let server = match find(&loaded, &args.name) {
        Ok(server) => server,
        Err(code) => return Ok(code),
    };
    let row = check_one(&loaded, server)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&row)?);
    } else {
        print_server(&row);
    }
    Ok(exit_of(&row))
}

fn exit_of(row: &McpServerCheck) -> ExitCode {
    if row.status == McpCheckStatus::Ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// One tool as agents see it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolView<'a> {
    /// `mcp__<server>__<tool>`.
    name: String,
    /// The server's own name for it.
    tool: &'a str,
    /// Whether it is a read (no approval) or may change things.
    read_only: bool,
    /// `read-only` or `needs approval`.
    approval: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_schema: Option<&'a Value>,
}

/// Whether agents may call `tool` without approval, before any user rule: the runtime's
/// own rule (`readOnlyHint`, not destructive, no mutating verb in its name).
fn is_read_only(server: &str, tool: &ToolInfo) -> bool {
    !braincode_tools::requires_approval(
        &braincode_runtime::definition_of(server, tool),
        &Value::Object(serde_json::Map::new()),
        &braincode_tools::PolicyEvaluation::default(),
    )
}

fn tool_view<'a>(server: &str, tool: &'a ToolInfo, schemas: bool) -> ToolView<'a> {
    let read_only = is_read_only(server, tool);
    ToolView {
        name: exposed_name(server, &tool.name),
        tool: &tool.name,
        read_only,
        approval: if read_only {
            "read-only"
        } else {
            "needs approval"
        },
        title: tool.title.as_deref(),
        description: &tool.description,
        input_schema: schemas.then_some(&tool.input_schema),
    }
}

fn tools(args: &ToolsArgs) -> anyhow::Result<ExitCode> {
    let loaded = load(args.server.project.as_deref())?;
    let server = match find(&loaded, &args.server.name) {
        Ok(server) => server,
        Err(code) => return Ok(code),
    };
    let row = check_one(&loaded, server)?;
    let views: Vec<ToolView<'_>> = row
        .tools
        .iter()
        .map(|tool| tool_view(&row.name, tool, args.schemas))
        .collect();
    if args.server.json {
        let value = json!({
            "server": &row,
            "tools": views,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(exit_of(&row));
    }
    if row.status != McpCheckStatus::Ok {
        print_server(&row);
        return Ok(exit_of(&row));
    }
    let how = if row.schemas == "eager" {
        "offered to agents with their schemas"
    } else {
        "agents find them with mcp_search and call them with mcp_call"
    };
    println!(
        "{} ({}, {}): {} tool(s), {how}",
        row.name,
        row.scope,
        row.transport,
        views.len()
    );
    let width = views
        .iter()
        .map(|v| v.name.chars().count())
        .max()
        .unwrap_or(0);
    for view in &views {
        let first_line = view
            .description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .or(view.title)
            .unwrap_or("");
        println!(
            "  {:<width$}  {:<14}  {first_line}",
            view.name, view.approval
        );
        if let Some(schema) = view.input_schema {
            let pretty = serde_json::to_string_pretty(schema)?;
            for line in pretty.lines() {
                println!("      {line}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
