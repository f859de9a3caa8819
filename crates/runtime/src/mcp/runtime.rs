//! One run's MCP servers: started in the background when the run starts (never holding up
//! the first model request), per-role scoping, the tools each agent gets, `mcp_connect`
//! records as servers settle, and shutdown at the end of the run.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use braincode_brain::BrainModel;
use braincode_config::{Home, McpLoadingStrategy, McpSchemas, McpSettings};
use braincode_mcp::{Hub, ServerStatus, ToolInfo};
use braincode_protocol::{McpConnect, Record, Role};
use braincode_tools::{SharedTool, ToolMode};
use tokio::sync::OnceCell;

use super::plan::{McpSandboxes, PlannedServer, server_spec};
use super::report::connect_report;
use super::tools::{McpCall, McpSearch, McpTool, definition_of, exposed_name, offerable};
use crate::agent::ToolResolver;
use crate::sink::RunSink;

/// The longest servers wait for the run's first model request before they start.
const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(250);

/// MCP servers kept up across the runs of one interactive session: a run whose servers are
/// configured exactly as the previous run's reuses them (no restart, no second handshake);
/// a changed configuration stops the old servers and starts afresh. Stopped by
/// [`McpHubCache::shutdown`] when the session ends (dropping it kills them too).
#[derive(Default)]
pub struct McpHubCache {
    hub: tokio::sync::Mutex<Option<(String, Arc<Hub>)>>,
}

impl McpHubCache {
    /// An empty cache.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The hub for servers configured as `fingerprint` says, made by `make` when the cached
    /// one is for another configuration (which is stopped).
    async fn get(&self, fingerprint: String, make: impl FnOnce() -> Arc<Hub>) -> Arc<Hub> {
        let mut cached = self.hub.lock().await;
        if let Some((seen, hub)) = cached.as_ref()
            && *seen == fingerprint
        {
            return Arc::clone(hub);
        }
        if let Some((_, old)) = cached.take() {
            old.shutdown().await;
        }
        let hub = make();
        *cached = Some((fingerprint, Arc::clone(&hub)));
        hub
    }

    /// Stops the cached servers.
    pub async fn shutdown(&self) {
        if let Some((_, hub)) = self.hub.lock().await.take() {
            hub.shutdown().await;
        }
    }
}

/// The MCP servers of one run.
pub struct McpRuntime {
    planned: Vec<PlannedServer>,
    /// Per role: the servers its policy names (`None`: every unclaimed server).
    role_lists: Vec<(Role, Option<Vec<String>>)>,
    /// Servers some role's list names: they belong to those roles alone.
    claimed: BTreeSet<String>,
    settings: McpSettings,
    project_root: PathBuf,
    sandboxes: Mutex<Option<McpSandboxes>>,
    /// `None` inside: no servers are started (a replay serves their results from the journal).
    hub: OnceCell<Option<Arc<Hub>>>,
    live: bool,
    /// The session's hub cache (the TUI): servers outlive the run.
    cache: Option<Arc<McpHubCache>>,
    sink: RunSink,
    started: Instant,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The last report recorded (serialized): a report that says nothing new is not recorded
    /// again.
    last_report: Mutex<String>,
}

impl McpRuntime {
    /// The runtime of a run; nothing starts until [`McpRuntime::kick_off`]. `live` is false in
    /// a replay (no server is started).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        planned: Vec<PlannedServer>,
        settings: McpSettings,
        brain: &BrainModel,
        home: &Home,
        project_root: PathBuf,
        writable: Vec<PathBuf>,
        sink: RunSink,
        live: bool,
        cache: Option<Arc<McpHubCache>>,
    ) -> Arc<Self> {
        let role_lists: Vec<(Role, Option<Vec<String>>)> = Role::ALL
            .iter()
            .map(|role| (*role, brain.roles.get(*role).mcp_servers.clone()))
            .collect();
        let claimed = role_lists
            .iter()
            .filter_map(|(_, list)| list.as_ref())
            .flatten()
            .filter(|name| name.as_str() != "*")
            .cloned()
            .collect();
        Arc::new(Self {
            sandboxes: Mutex::new(Some(McpSandboxes::new(home, &project_root, writable))),
            planned,
            role_lists,
            claimed,
            settings,
            project_root,
            hub: OnceCell::new(),
            live,
            cache,
            sink,
            started: Instant::now(),
            writer: Mutex::new(None),
            last_report: Mutex::new(String::new()),
        })
    }

    /// Servers that may start, in configuration order.
    pub fn startable(&self) -> impl Iterator<Item = &PlannedServer> {
        self.planned.iter().filter(|server| server.startable())
    }

    /// Servers `role` may use (startable ones), in configuration order.
    pub fn visible(&self, role: Role) -> Vec<&PlannedServer> {
        let list = self
            .role_lists
            .iter()
            .find(|(r, _)| *r == role)
            .and_then(|(_, list)| list.as_ref());
        self.planned
            .iter()
            .filter(|server| server.startable())
            .filter(|server| {
                let name = server.name();
                let unclaimed = !self.claimed.contains(name);
                match list {
                    Some(list) => {
                        list.iter().any(|n| n == name)
                            || (unclaimed && list.iter().any(|n| n == "*"))
                    }
                    None => unclaimed,
                }
            })
            .collect()
    }

    /// The prompt line that tells an agent of `role` which MCP servers it has and how to use
    /// them.
    pub fn usage_note(&self, role: Role) -> String {
        let servers: Vec<&str> = self
            .visible(role)
            .into_iter()
            .map(PlannedServer::name)
            .collect();
        format!(
            "MCP servers you can use: {}. Find their tools with mcp_search and call them with mcp_call.",
            servers.join(", ")
        )
    }

    /// The hub, made on first need (building the sandboxes of stdio servers walks the
    /// project, so it never runs before the first model request is sent).
    pub async fn hub(&self) -> Option<Arc<Hub>> {
        if !self.live {
            return None;
        }
        self.hub
            .get_or_init(|| async {
                let sandboxes = self.sandboxes.lock().ok().and_then(|mut s| s.take());
                let planned = self.planned.clone();
                let root = self.project_root.clone();
                let built = tokio::task::spawn_blocking(move || {
                    let sandboxes = sandboxes?;
                    Some(
                        planned
                            .iter()
                            .filter_map(|p| {
                                server_spec(p, &root, &sandboxes)
                                    .ok()
                                    .map(|s| (p.name().to_string(), s))
                            })
                            .collect::<Vec<_>>(),
                    )
                })
                .await
                .ok()
                .flatten()?;
                let make = || Hub::new(built.into_iter().map(|(_, spec)| spec).collect());
                Some(match &self.cache {
                    Some(cache) => cache.get(self.fingerprint(), make).await,
                    None => make(),
                })
            })
            .await
            .clone()
    }

    /// What identifies this run's server configuration (names, commands, arguments,
    /// environment, URLs, headers, timeouts, sandboxing), for reusing a session's hub.
    fn fingerprint(&self) -> String {
        // Where an entry was read from does not change the server.
        let resolved: Vec<Option<braincode_config::McpServerConfig>> = self
            .planned
            .iter()
            .map(|planned| {
                planned
                    .resolved()
                    .map(|config| braincode_config::McpServerConfig {
                        source: PathBuf::new(),
                        ..config.clone()
                    })
            })
            .collect();
        format!(
            "{}|{}",
            self.project_root.display(),
            serde_json::to_string(&resolved).unwrap_or_default()
        )
    }

    /// The hub when `needed`.
    async fn hub_if(&self, needed: bool) -> Option<Arc<Hub>> {
        if needed { self.hub().await } else { None }
    }

    /// Why a startable server is not running yet.
    fn waiting_reason(&self, server: &PlannedServer) -> String {
        if server.loading == McpLoadingStrategy::Lazy {
            "lazy: starts on first use".into()
        } else if self.claimed.contains(server.name()) {
            "starts when a role that may use it runs".into()
        } else {
            "not started".into()
        }
    }

    /// Records the servers' outcomes when they changed since the last report.
    fn record_report(&self, hub: Option<&Hub>) {
        let states = hub.map(Hub::states);
        let report = connect_report(
            &self.planned,
            states.as_deref(),
            self.settings.loading,
            &|server| self.waiting_reason(server),
        );
        let text = serde_json::to_string(&report).unwrap_or_default();
        if let Ok(mut last) = self.last_report.lock() {
            if *last == text {
                return;
            }
            *last = text;
        }
        self.sink.record(Record::McpConnect(McpConnect { report }));
    }

    /// Starts the run's MCP work: a replay re-emits the journaled reports; a live run records
    /// the first report and, in the background, makes the hub and starts every unclaimed
    /// non-lazy server, recording a report each time a server connects or fails.
    pub fn kick_off(self: &Arc<Self>, journaled: Vec<McpConnect>) {
        if self.planned.is_empty() {
            return;
        }
        if !self.live {
            for record in journaled {
                self.sink.record(Record::McpConnect(record));
            }
            return;
        }
        self.record_report(None);
        if !self.planned.iter().any(PlannedServer::startable) {
            return;
        }
        let this = Arc::clone(self);
        let task = tokio::spawn(async move {
            // Starting processes competes for the CPU: the run's first model request goes out
            // first (or a moment passes, when hooks hold it up).
            tokio::select! {
                () = this.sink.first_model_request() => {}
                () = tokio::time::sleep(FIRST_REQUEST_GRACE) => {}
            }
            let Some(hub) = this.hub().await else {
                return;
            };
            let mut changes = hub.subscribe();
            // An agent may have started (and waited for) its eager servers before this task
            // subscribed: what they became is reported now, not lost with their events.
            this.record_report(Some(&hub));
            for server in &this.planned {
                if server.startable()
                    && server.loading != McpLoadingStrategy::Lazy
                    && !this.claimed.contains(server.name())
                {
                    hub.start(server.name());
                }
            }
            loop {
                match changes.recv().await {
                    Ok(state)
                        if matches!(
                            state.status,
                            ServerStatus::Connected | ServerStatus::Failed
                        ) =>
                    {
                        this.record_report(Some(&hub));
                    }
                    Ok(_) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        this.record_report(Some(&hub));
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        if let Ok(mut writer) = self.writer.lock() {
            *writer = Some(task);
        }
    }

    /// The tools an agent of `role` gets in tool mode `mode`, and the resolver of MCP tools
    /// it may call by name. Starts the role's non-lazy servers; waits for its `eager` ones up
    /// to the run's startup budget (counted from the run's start).
    pub async fn agent_tools(
        self: &Arc<Self>,
        role: Role,
        mode: ToolMode,
    ) -> (Vec<SharedTool>, Option<Arc<dyn ToolResolver>>) {
        let visible: Vec<PlannedServer> = self.visible(role).into_iter().cloned().collect();
        if visible.is_empty() {
            return (Vec::new(), None);
        }
        let names: Vec<String> = visible.iter().map(|s| s.name().to_string()).collect();
        let mut tools: Vec<SharedTool> = Vec::new();
        // Unclaimed background servers are the run's to start (after its first request);
        // this agent starts its own claimed ones and waits for eager ones. With nothing to
        // start or list now, the hub is not even made yet.
        let starts_here = |server: &PlannedServer| {
            server.loading == McpLoadingStrategy::Eager
                || (server.loading == McpLoadingStrategy::Background
                    && self.claimed.contains(server.name()))
        };
        let needs_hub = visible
            .iter()
            .any(|s| starts_here(s) || s.schemas == McpSchemas::Eager);
        if let Some(hub) = self.hub_if(needs_hub).await {
            for server in visible.iter().filter(|s| starts_here(s)) {
                hub.start(server.name());
            }
            let budget = Duration::from_millis(self.settings.startup_budget_ms)
                .saturating_sub(self.started.elapsed());
            let eager = visible
                .iter()
                .filter(|s| s.loading == McpLoadingStrategy::Eager)
                .map(|s| hub.wait(s.name(), budget));
            futures::future::join_all(eager).await;
            for server in visible.iter().filter(|s| s.schemas == McpSchemas::Eager) {
                let Some(state) = hub.state(server.name()) else {
                    continue;
                };
                if state.status != ServerStatus::Connected {
                    continue;
                }
                for info in state.tools.iter() {
                    let definition = definition_of(server.name(), info);
                    if mode.allows(definition.permission) && offerable(&definition) {
                        tools.push(Arc::new(McpTool {
                            runtime: Arc::clone(self),
                            server: server.name().to_string(),
                            tool: info.name.clone(),
                            definition,
                        }));
                    }
                }
            }
        }
        tools.push(Arc::new(McpSearch::new(
            Arc::clone(self),
            names.clone(),
            mode,
        )));
        tools.push(Arc::new(McpCall::new()));
        let resolver: Arc<dyn ToolResolver> = Arc::new(McpResolver {
            runtime: Arc::clone(self),
            servers: names,
            mode,
        });
        (tools, Some(resolver))
    }

    /// The tools of `servers` (starting and waiting for them as needed), or why a server has
    /// none.
    pub async fn tools_of(
        &self,
        servers: &[&String],
    ) -> Vec<(String, Result<Arc<Vec<ToolInfo>>, String>)> {
        let Some(hub) = self.hub().await else {
            return servers
                .iter()
                .map(|s| ((*s).clone(), Err("not started in a replay".to_string())))
                .collect();
        };
        let waits = servers.iter().map(|server| {
            let hub = Arc::clone(&hub);
            async move {
                let state = hub.wait(server, Duration::from_secs(120)).await;
                let result = match state {
                    None => Err("not configured".to_string()),
                    Some(state) => match state.status {
                        ServerStatus::Connected => Ok(state.tools),
                        ServerStatus::Connecting | ServerStatus::NotStarted => {
                            Err("still connecting".to_string())
                        }
                        ServerStatus::Failed | ServerStatus::Stopped => Err(state
                            .error
                            .map_or_else(|| "stopped".to_string(), |e| e.to_string())),
                    },
                };
                ((*server).clone(), result)
            }
        });
        futures::future::join_all(waits).await
    }

    /// Stops recording and every server. Called once, when the run ends.
    pub async fn shutdown(&self) {
        if let Some(task) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            task.abort();
        }
        // The run's last word on its servers: what connected or failed after the last event
        // the background writer saw (or before it ever ran) is not left out of the report.
        if self.live
            && let Some(Some(hub)) = self.hub.get()
        {
            self.record_report(Some(hub));
        }
        // A session's servers stay up for its next run.
        if self.cache.is_none()
            && let Some(Some(hub)) = self.hub.get()
        {
            hub.shutdown().await;
        }
    }
}

/// Resolves `mcp__<server>__<tool>` names an agent calls (through `mcp_call` or directly).
struct McpResolver {
    runtime: Arc<McpRuntime>,
    servers: Vec<String>,
    mode: ToolMode,
}

#[async_trait]
impl ToolResolver for McpResolver {
    async fn resolve(&self, name: &str) -> Option<Result<SharedTool, String>> {
        if !name.starts_with("mcp__") {
            return None;
        }
        Some(self.resolve_mcp(name).await)
    }
}

impl McpResolver {
    async fn resolve_mcp(&self, name: &str) -> Result<SharedTool, String> {
        let server = self
            .servers
            .iter()
            .filter(|server| name.starts_with(&exposed_name(server, "")))
            .max_by_key(|server| server.len())
            .ok_or_else(|| {
                format!(
                    "{name:?} is not a tool of an MCP server you can use ({}); find tools with mcp_search",
                    self.servers.join(", ")
                )
            })?;
        let Some(hub) = self.runtime.hub().await else {
            // A replay: the journal has the result; only the name is needed.
            return Ok(Arc::new(McpTool {
                runtime: Arc::clone(&self.runtime),
                server: server.clone(),
                tool: name.to_string(),
                definition: braincode_tools::ToolDefinition {
                    name: name.to_string(),
                    description: String::new(),
                    parameters: serde_json::json!({"type": "object"}),
                    permission: braincode_tools::ToolPermission::Write,
                    risk: braincode_tools::ToolRisk::Medium,
                },
            }));
        };
        let state = hub
            .wait(server, Duration::from_secs(120))
            .await
            .ok_or_else(|| format!("MCP server {server} is not configured"))?;
        if state.status != ServerStatus::Connected {
            return Err(format!(
                "MCP server {server} is unavailable: {}",
                state
                    .error
                    .map_or_else(|| "still connecting".to_string(), |e| e.to_string())
            ));
        }
        let info = state
            .tools
            .iter()
            .find(|info| exposed_name(server, &info.name) == name)
            .ok_or_else(|| {
                format!("MCP server {server} has no tool {name:?}; find its tools with mcp_search")
            })?;
        let definition = definition_of(server, info);
        if !self.mode.allows(definition.permission) {
            return Err(format!(
                "{name} may change things (its server does not mark it read-only), and this agent may only read"
            ));
        }
        Ok(Arc::new(McpTool {
            runtime: Arc::clone(&self.runtime),
            server: server.clone(),
            tool: info.name.clone(),
            definition,
        }))
    }
}
