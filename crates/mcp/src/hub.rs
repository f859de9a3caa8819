//! The hub: every server of a run, connected in the background, restarted once, stopped at
//! the end.

mod slot;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::McpError;
use crate::connection::{CONNECTION_CLOSED, Delivery};
use crate::types::{Arguments, CallOutput, ServerInfo, ServerSpec, ToolInfo};
use slot::Slot;

/// State changes a slow subscriber may fall behind by before it misses some.
const EVENT_BUFFER: usize = 256;
/// How long shutdown waits for connect tasks to wind down after their servers were stopped.
const TASK_GRACE: Duration = Duration::from_secs(5);

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerStatus {
    /// Nobody asked for it yet.
    NotStarted,
    /// Connecting (first start or restart).
    Connecting,
    /// Connected; its tools are known.
    Connected,
    /// It failed (to connect, or died and its restart failed / was used up).
    Failed,
    /// Stopped by [`Hub::shutdown`].
    Stopped,
}

/// A snapshot of one server.
#[derive(Debug, Clone)]
pub struct ServerState {
    /// Its name.
    pub name: String,
    /// Its status.
    pub status: ServerStatus,
    /// What it said in `initialize` (connected servers).
    pub info: Option<ServerInfo>,
    /// Its tools (connected servers; empty otherwise).
    pub tools: Arc<Vec<ToolInfo>>,
    /// The last failure (failed servers; also kept after a successful restart).
    pub error: Option<McpError>,
    /// How long the last connect took.
    pub connect_ms: Option<u64>,
    /// Restarts done so far (at most one).
    pub restarts: u32,
}

/// Every server of one run (or one `braincode mcp` command).
pub struct Hub {
    /// In configuration order; a repeated name keeps its first spec.
    slots: Vec<Arc<Slot>>,
    by_name: HashMap<String, usize>,
    events: broadcast::Sender<ServerState>,
    stopping: CancellationToken,
}

impl Hub {
    /// A hub for `specs`; nothing is started yet.
    pub fn new(specs: Vec<ServerSpec>) -> Arc<Hub> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let stopping = CancellationToken::new();
        let mut slots = Vec::with_capacity(specs.len());
        let mut by_name = HashMap::with_capacity(specs.len());
        for spec in specs {
            if by_name.contains_key(&spec.name) {
                continue;
            }
            by_name.insert(spec.name.clone(), slots.len());
            slots.push(Arc::new(Slot::new(spec, events.clone(), stopping.clone())));
        }
        Arc::new(Hub {
            slots,
            by_name,
            events,
            stopping,
        })
    }

    fn slot(&self, name: &str) -> Option<&Arc<Slot>> {
        self.by_name.get(name).and_then(|&i| self.slots.get(i))
    }

    /// The configured server names, in the order given.
    pub fn names(&self) -> Vec<String> {
        self.slots.iter().map(|s| s.spec.name.clone()).collect()
    }

    /// Starts connecting `name` in the background if it has not been started. Unknown names
    /// are ignored.
    pub fn start(self: &Arc<Self>, name: &str) {
        if let Some(slot) = self.slot(name) {
            slot.start();
        }
    }

    /// Starts `name` if needed and waits until it is connected or failed, or `budget` has
    /// passed; returns its state then (maybe still `Connecting`).
    pub async fn wait(self: &Arc<Self>, name: &str, budget: Duration) -> Option<ServerState> {
        let slot = self.slot(name)?;
        slot.start();
        Some(slot.settle(budget).await)
    }

    /// The state of one server.
    pub fn state(&self, name: &str) -> Option<ServerState> {
        self.slot(name).map(|s| s.snapshot())
    }

    /// Every server's state, in configuration order.
    pub fn states(&self) -> Vec<ServerState> {
        self.slots.iter().map(|s| s.snapshot()).collect()
    }

    /// Every change of any server's state (connected, failed, restarting, stopped).
    pub fn subscribe(&self) -> broadcast::Receiver<ServerState> {
        self.events.subscribe()
    }

    /// Calls `tool` on `server`: starts it and waits for it (up to its startup timeout) if
    /// needed; a server found dead is restarted once per hub and the call goes on; a call
    /// that fails because the server died mid-call is not retried (it may have had effects):
    /// the error says so and the next call restarts the server.
    ///
    /// After [`Hub::shutdown`], calls fail at once with [`McpError::Cancelled`].
    pub async fn call(
        self: &Arc<Self>,
        server: &str,
        tool: &str,
        arguments: Arguments,
        cancel: &CancellationToken,
    ) -> Result<CallOutput, McpError> {
        let slot = self
            .slot(server)
            .ok_or_else(|| McpError::UnknownServer(server.to_string()))?;
        let mut resent = false;
        loop {
            let (conn, generation) = slot.ready(cancel).await?;
            if !conn.tools().iter().any(|t| t.name == tool) {
                return Err(McpError::UnknownTool {
                    server: server.to_string(),
                    tool: tool.to_string(),
                });
            }
            // The arguments are kept for a resend only in the rare case one is possible.
            let result = conn
                .call_tracked(tool, arguments.clone(), slot.spec.call_timeout, cancel)
                .await;
            let (error, delivery) = match result {
                Ok(output) => return Ok(output),
                Err(failure) => failure,
            };
            if !is_death(&error) {
                return Err(error);
            }
            slot.died(generation, error.clone()).await;
            // Dead before our request was written: it was found dead, so it is restarted
            // (once) and the call goes on. Dead after: the call may have had effects.
            if delivery == Delivery::MaybeSent || resent {
                return Err(error);
            }
            resent = true;
        }
    }

    /// Stops every server (in parallel) and waits until they are gone. Later calls fail.
    pub async fn shutdown(&self) {
        self.stopping.cancel();
        let mut conns = Vec::new();
        let mut tasks = Vec::new();
        for slot in &self.slots {
            let (conn, slot_tasks) = slot.stop();
            conns.extend(conn);
            tasks.extend(slot_tasks);
        }
        join_all(conns.iter().map(|c| c.close())).await;
        let _ = tokio::time::timeout(TASK_GRACE, join_all(tasks)).await;
    }
}

/// Whether a call failed because the server is gone.
fn is_death(error: &McpError) -> bool {
    match error {
        McpError::Exited { .. } => true,
        McpError::Protocol { message, .. } => message == CONNECTION_CLOSED,
        _ => false,
    }
}
