//! MCP servers as `/mcp`, `braincode mcp` and `braincode doctor --mcp` show them: every
//! configured server (an untrusted project's too, read for display only and never started)
//! and a live check that connects to each startable server in parallel and says how it went.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{McpSandboxes, PlannedServer, plan_for, server_spec};
use braincode_config::{
    Home, McpServerConfig, McpSettings, ProjectTrust, Scope, read_project_mcp_file,
};
use braincode_mcp::{Hub, ServerState, ServerStatus, ToolInfo};
use braincode_protocol::secrets::{redact_secrets, register_secret};
use serde::Serialize;

/// How long a live check waits for each server (they are checked in parallel).
pub const CHECK_BUDGET: Duration = Duration::from_secs(8);

/// Why an untrusted project's servers do not start.
pub const UNTRUSTED_REASON: &str = "project not trusted (`braincode trust` starts its servers)";

/// Where a server stands after a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum McpCheckStatus {
    /// Connected; its tools were listed.
    Ok,
    /// It could not be started or reached.
    Failed,
    /// It does not start (disabled, untrusted, shadowed, misconfigured).
    Skipped,
    /// A check is under way.
    Checking,
    /// Startable, but no connection was attempted.
    NotChecked,
}

/// One configured server as a person sees it: where it comes from, how it is reached (never
/// an environment or header value) and how its check went.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerCheck {
    /// Its name (the key in the file).
    pub name: String,
    /// `project` or `user`.
    pub scope: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// The program and its arguments (stdio), as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The endpoint (http), as configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Names of the variables it sets (values are never shown).
    pub env: Vec<String>,
    /// Names of the HTTP headers it sends (values are never shown).
    pub headers: Vec<String>,
    /// When a run starts it (`eager`, `background`, `lazy`).
    pub loading: String,
    /// How agents see its tools (`lazy`, `eager`).
    pub schemas: String,
    /// The file it is configured in.
    pub source: String,
    /// How its check went.
    pub status: McpCheckStatus,
    /// Why it is skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `serverInfo.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// `serverInfo.version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// The negotiated protocol version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// How many tools it lists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<usize>,
    /// How long connecting took (or failing to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// What went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What to do about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Its tools (connected servers).
    #[serde(skip)]
    pub tools: Arc<Vec<ToolInfo>>,
}

impl McpServerCheck {
    /// The row of `planned` before any check: skipped with its reason, else not checked.
    pub fn of(planned: &PlannedServer) -> Self {
        let config = &planned.config;
        let command = config.command.as_ref().map(|program| {
            std::iter::once(program.as_str())
                .chain(config.args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        });
        Self {
            name: config.name.clone(),
            scope: config.scope.as_str().to_string(),
            transport: words(&config.transport),
            command: command.map(|c| redact_secrets(&c).into_owned()),
            url: config
                .url
                .as_deref()
                .map(|u| redact_secrets(u).into_owned()),
            env: config.env.keys().cloned().collect(),
            headers: config.http_headers.keys().cloned().collect(),
            loading: words(&planned.loading),
            schemas: words(&planned.schemas),
            source: config.source.display().to_string(),
            status: if planned.startable() {
                McpCheckStatus::NotChecked
            } else {
                McpCheckStatus::Skipped
            },
            reason: planned.skip.clone(),
            server_name: None,
            server_version: None,
            protocol_version: None,
            tool_count: None,
            latency_ms: None,
            error: None,
            fix: None,
            tools: Arc::new(Vec::new()),
        }
    }

    /// This row failed with `error` (and `fix`).
    fn failed(mut self, error: String, fix: Option<String>, latency_ms: Option<u64>) -> Self {
        self.status = McpCheckStatus::Failed;
        self.error = Some(redact_secrets(&error).into_owned());
        self.fix = fix;
        self.latency_ms = latency_ms;
        self
    }

    /// One line: the outcome in words (`ok · srv 1.0 · protocol … · 3 tools · 40 ms`,
    /// `failed: …`, `skipped: …`, `checking…`).
    pub fn status_words(&self) -> String {
        match self.status {
            McpCheckStatus::Ok => {
                let mut parts = vec!["ok".to_string()];
                match (&self.server_name, &self.server_version) {
                    (Some(name), Some(version)) => parts.push(format!("{name} {version}")),
                    (Some(name), None) => parts.push(name.clone()),
                    (None, Some(version)) => parts.push(format!("version {version}")),
                    (None, None) => {}
                }
                if let Some(protocol) = &self.protocol_version {
                    parts.push(format!("protocol {protocol}"));
                }
                if let Some(count) = self.tool_count {
                    parts.push(format!("{count} tool{}", if count == 1 { "" } else { "s" }));
                }
                if let Some(ms) = self.latency_ms {
                    parts.push(format!("{ms} ms"));
                }
                parts.join(" · ")
            }
            McpCheckStatus::Failed => format!(
                "failed{}: {}",
                self.latency_ms
                    .map(|ms| format!(" after {ms} ms"))
                    .unwrap_or_default(),
                self.error.as_deref().unwrap_or("unknown error")
            ),
            McpCheckStatus::Skipped => {
                format!(
                    "skipped: {}",
                    self.reason.as_deref().unwrap_or("not started")
                )
            }
            McpCheckStatus::Checking => "checking…".to_string(),
            McpCheckStatus::NotChecked => "not checked".to_string(),
        }
    }

    /// One line: mark, name (padded to `name_width`), scope, transport and status.
    pub fn headline(&self, name_width: usize) -> String {
        format!(
            "{} {:<name_width$}  {:<7} {:<5}  {}",
            self.mark(),
            self.name,
            self.scope,
            self.transport,
            self.status_words()
        )
    }

    /// The status mark: ✓ ok, ✗ failed, – skipped, … checking, · not checked.
    pub fn mark(&self) -> &'static str {
        match self.status {
            McpCheckStatus::Ok => "✓",
            McpCheckStatus::Failed => "✗",
            McpCheckStatus::Skipped => "–",
            McpCheckStatus::Checking => "…",
            McpCheckStatus::NotChecked => "·",
        }
    }
}

/// A config enum's serde name (`stdio`, `background`, `lazy`).
fn words<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Every configured server, planned: `loaded` (what a run loads: a trusted project's servers
/// and the user's) and, when `trust` says the project is not trusted, its own servers read for
/// display only, skipped. Also gives the warnings of reading that file.
pub fn configured_servers(
    home: &Home,
    project_root: &Path,
    trust: &ProjectTrust,
    loaded: &[McpServerConfig],
    settings: &McpSettings,
) -> (Vec<PlannedServer>, Vec<String>) {
    hide_secret_values(loaded);
    let mut planned = Vec::new();
    let mut warnings = Vec::new();
    let project_loaded = loaded.iter().any(|s| s.scope == Scope::Project);
    if !project_loaded && !trust.is_trusted() {
        let (untrusted, warned) = read_project_mcp_file(project_root);
        warnings.extend(warned);
        hide_secret_values(&untrusted);
        // Planned apart from the loaded servers: a server the project cannot start must not
        // shadow the user's server of the same name. Nothing in it is expanded or run.
        planned.extend(
            plan_for(home, &untrusted, settings, project_root)
                .into_iter()
                .map(|mut p| {
                    p.skip = Some(UNTRUSTED_REASON.to_string());
                    p
                }),
        );
    }
    planned.extend(plan_for(home, loaded, settings, project_root));
    (planned, warnings)
}

/// Registers the literal values of secret-named variables and credential headers of
/// `servers` as secrets, so no text shown (a server's stderr, an argument that repeats one)
/// can print them. (`${…}` references are not values; variables they name are registered by
/// their own names.)
fn hide_secret_values(servers: &[McpServerConfig]) {
    let credential_header = |name: &str| {
        let lower = name.to_ascii_lowercase();
        ["auth", "key", "token", "cookie", "secret", "session"]
            .iter()
            .any(|word| lower.contains(word))
    };
    for server in servers {
        let env = server
            .env
            .iter()
            .filter(|(name, _)| braincode_protocol::secrets::is_secret_env_name(name));
        let headers = server
            .http_headers
            .iter()
            .filter(|(name, _)| credential_header(name));
        for (_, value) in env.chain(headers) {
            if value.contains("${") {
                continue;
            }
            register_secret(value);
            // `Bearer <token>`: the token alone too.
            if let Some(last) = value.split_whitespace().last() {
                register_secret(last);
            }
        }
    }
}

/// Extra writable roots from `settings.sandbox.writablePaths` (absolute or `~/…`), as a run
/// reads them.
pub fn writable_roots(raw: &[String]) -> Vec<PathBuf> {
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    raw.iter()
        .filter_map(|raw| match (raw.strip_prefix("~/"), &user_home) {
            (Some(rest), Some(home)) => Some(home.join(rest)),
            _ => Some(PathBuf::from(raw)).filter(|p| p.is_absolute()),
        })
        .collect()
}

/// The MCP servers of a project as a run would plan them, with the problems found reading
/// their files and the sandbox's extra writable roots: what `braincode mcp` and the control
/// panel list and check.
#[derive(Debug, Clone)]
pub struct McpSetup {
    /// Every configured server (an untrusted project's too, never startable).
    pub planned: Vec<PlannedServer>,
    /// What reading the files found.
    pub warnings: Vec<String>,
    /// Extra writable roots of the sandbox.
    pub writable: Vec<PathBuf>,
}

impl McpSetup {
    /// Reads the user's and the project's MCP files under `settings`, with the caller's one
    /// trust verdict.
    pub fn read(
        home: &Home,
        project_root: &Path,
        trust: &ProjectTrust,
        settings: &braincode_config::Settings,
    ) -> Self {
        let (servers, mut warnings) = braincode_config::load_mcp_servers(home, project_root, trust);
        let (planned, warned) =
            configured_servers(home, project_root, trust, &servers, &settings.mcp);
        warnings.extend(warned);
        Self {
            planned,
            warnings,
            writable: writable_roots(&settings.sandbox.writable_paths),
        }
    }

    /// Checks `planned` (some or all of [`McpSetup::planned`]) live, each within `budget`.
    pub async fn check(
        &self,
        home: &Home,
        project_root: &Path,
        planned: &[PlannedServer],
        budget: Duration,
    ) -> Vec<McpServerCheck> {
        let context = CheckContext {
            home,
            project_root,
            writable: self.writable.clone(),
            budget,
        };
        check_servers(context, planned).await
    }
}

/// What a live check needs besides the servers.
pub struct CheckContext<'a> {
    /// The Braincode home.
    pub home: &'a Home,
    /// The project (stdio servers run in it).
    pub project_root: &'a Path,
    /// Extra writable roots of the sandbox.
    pub writable: Vec<PathBuf>,
    /// How long to wait for each server.
    pub budget: Duration,
}

/// Connects to every startable server of `planned` in parallel (each within `budget`), lists
/// their tools, stops them, and gives one row per server in order (skipped ones as skipped).
pub async fn check_servers(
    context: CheckContext<'_>,
    planned: &[PlannedServer],
) -> Vec<McpServerCheck> {
    let sandboxes = McpSandboxes::new(context.home, context.project_root, context.writable);
    let mut rows: Vec<McpServerCheck> = planned.iter().map(McpServerCheck::of).collect();
    let mut specs = Vec::new();
    let mut checked = Vec::new();
    for (index, server) in planned.iter().enumerate() {
        if !server.startable() {
            continue;
        }
        match server_spec(server, context.project_root, &sandboxes) {
            Ok(spec) => {
                specs.push(spec);
                checked.push(index);
            }
            Err(err) => rows[index] = rows[index].clone().failed(err, None, None),
        }
    }
    if specs.is_empty() {
        return rows;
    }
    let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    let hub = Hub::new(specs);
    let budget = context.budget;
    let states = futures::future::join_all(names.iter().map(|name| {
        let hub = hub.clone();
        async move {
            let started = Instant::now();
            let state = hub.wait(name, budget).await;
            (state, started.elapsed())
        }
    }))
    .await;
    hub.shutdown().await;
    for (index, (state, elapsed)) in checked.into_iter().zip(states) {
        rows[index] = outcome(rows[index].clone(), state, elapsed, budget);
    }
    rows
}

/// The row after the hub's answer.
fn outcome(
    row: McpServerCheck,
    state: Option<ServerState>,
    elapsed: Duration,
    budget: Duration,
) -> McpServerCheck {
    let elapsed_ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
    let Some(state) = state else {
        return row.failed("the server was not started".into(), None, None);
    };
    let latency = state.connect_ms.or(Some(elapsed_ms));
    match state.status {
        ServerStatus::Connected => {
            let info = state.info.unwrap_or_default();
            McpServerCheck {
                status: McpCheckStatus::Ok,
                server_name: info.name,
                server_version: info.version,
                protocol_version: info.protocol_version,
                tool_count: Some(state.tools.len()),
                latency_ms: latency,
                tools: state.tools,
                ..row
            }
        }
        ServerStatus::Failed => {
            let error = state.error;
            row.failed(
                error
                    .as_ref()
                    .map_or_else(|| "failed".to_string(), ToString::to_string),
                error.as_ref().and_then(braincode_mcp::McpError::fix),
                latency,
            )
        }
        ServerStatus::Connecting | ServerStatus::NotStarted => row.failed(
            format!("no answer within {} ms", budget.as_millis()),
            Some(
                "check that the server starts by hand; a slow server may need a higher \
                 `startupTimeoutMs`"
                    .into(),
            ),
            Some(elapsed_ms),
        ),
        ServerStatus::Stopped => row.failed("stopped before it answered".into(), None, latency),
    }
}

/// The rows of `planned` while a check runs: startable servers as checking.
pub fn checking_rows(planned: &[PlannedServer]) -> Vec<McpServerCheck> {
    planned
        .iter()
        .map(|server| {
            let mut row = McpServerCheck::of(server);
            if row.status == McpCheckStatus::NotChecked {
                row.status = McpCheckStatus::Checking;
            }
            row
        })
        .collect()
}
