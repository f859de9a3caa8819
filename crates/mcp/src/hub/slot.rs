//! One server's place in the hub: its state behind a short-held lock, the connect task, the
//! restart rule, and the signals that wake waiters and subscribers.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{ServerState, ServerStatus};
use crate::McpError;
use crate::connection::{CONNECTION_CLOSED, Connection};
use crate::types::{ServerInfo, ServerSpec, ToolInfo};

/// Beyond its startup timeout, how long a caller waits for a connect to report (the connect
/// itself stops at the timeout; this covers stopping the process).
const WAIT_SLACK: Duration = Duration::from_secs(3);
/// Restarts a hub grants one server.
const MAX_RESTARTS: u32 = 1;

/// A connection and the generation it belongs to (a restart starts a new generation, so news
/// of an old connection's death is ignored).
pub(super) type Ready = (Arc<Connection>, u64);

pub(super) struct Slot {
    pub(super) spec: ServerSpec,
    state: Mutex<SlotState>,
    /// Bumped on every change: waiters wake on it.
    changed: watch::Sender<u64>,
    events: broadcast::Sender<ServerState>,
    /// Cancelled by [`super::Hub::shutdown`]: stops connects in flight.
    stopping: CancellationToken,
}

struct SlotState {
    status: ServerStatus,
    generation: u64,
    conn: Option<Arc<Connection>>,
    info: Option<ServerInfo>,
    tools: Arc<Vec<ToolInfo>>,
    error: Option<McpError>,
    connect_ms: Option<u64>,
    restarts: u32,
    /// Connect tasks (each goes on watching its process once connected).
    tasks: Vec<JoinHandle<()>>,
}

impl Slot {
    pub(super) fn new(
        spec: ServerSpec,
        events: broadcast::Sender<ServerState>,
        stopping: CancellationToken,
    ) -> Slot {
        Slot {
            spec,
            state: Mutex::new(SlotState {
                status: ServerStatus::NotStarted,
                generation: 0,
                conn: None,
                info: None,
                tools: Arc::new(Vec::new()),
                error: None,
                connect_ms: None,
                restarts: 0,
                tasks: Vec::new(),
            }),
            changed: watch::Sender::new(0),
            events,
            stopping,
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot_of(&self, st: &SlotState) -> ServerState {
        ServerState {
            name: self.spec.name.clone(),
            status: st.status,
            info: st.info.clone(),
            tools: Arc::clone(&st.tools),
            error: st.error.clone(),
            connect_ms: st.connect_ms,
            restarts: st.restarts,
        }
    }

    pub(super) fn snapshot(&self) -> ServerState {
        self.snapshot_of(&self.lock())
    }

    /// Tells subscribers and wakes waiters. Called with the lock held, so events keep the
    /// order of changes (neither send blocks).
    fn publish(&self, st: &SlotState) {
        let _ = self.events.send(self.snapshot_of(st));
        self.changed
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    /// Starts connecting if nobody asked yet.
    pub(super) fn start(self: &Arc<Self>) {
        let mut st = self.lock();
        if st.status == ServerStatus::NotStarted {
            self.begin_connect(&mut st);
        }
    }

    fn begin_connect(self: &Arc<Self>, st: &mut SlotState) {
        st.generation = st.generation.wrapping_add(1);
        st.status = ServerStatus::Connecting;
        st.conn = None;
        st.info = None;
        st.tools = Arc::new(Vec::new());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                st.tasks.retain(|task| !task.is_finished());
                let task = runtime.spawn(connect_task(Arc::clone(self), st.generation));
                st.tasks.push(task);
            }
            Err(_) => {
                st.status = ServerStatus::Failed;
                st.error = Some(McpError::Protocol {
                    message: "no async runtime to start the server in".to_string(),
                    stderr_tail: String::new(),
                });
            }
        }
        self.publish(st);
    }

    /// A connect of `generation` ended.
    async fn connected(
        &self,
        generation: u64,
        result: Result<Connection, McpError>,
        took: Duration,
    ) {
        let leftover = {
            let mut st = self.lock();
            if st.generation != generation || st.status != ServerStatus::Connecting {
                // Stopped (or superseded) meanwhile: nobody wants this connection.
                result.ok()
            } else {
                match result {
                    Ok(conn) => {
                        tracing::debug!(server = %self.spec.name, ms = took.as_millis(), tools = conn.tools().len(), "MCP server connected");
                        st.info = Some(conn.info().clone());
                        st.tools = Arc::new(conn.tools().to_vec());
                        st.conn = Some(Arc::new(conn));
                        st.status = ServerStatus::Connected;
                        st.connect_ms = Some(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
                    }
                    Err(error) => {
                        tracing::debug!(server = %self.spec.name, %error, "MCP server failed to connect");
                        st.status = ServerStatus::Failed;
                        st.error = Some(error);
                    }
                }
                self.publish(&st);
                None
            }
        };
        if let Some(conn) = leftover {
            conn.close().await;
        }
    }

    /// The connection of `generation` died with `error`: restart once, or fail for good.
    pub(super) async fn died(self: &Arc<Self>, generation: u64, error: McpError) {
        let dead = {
            let mut st = self.lock();
            if st.generation != generation || st.status != ServerStatus::Connected {
                return;
            }
            let dead = st.conn.take();
            let restart = st.restarts < MAX_RESTARTS;
            tracing::debug!(server = %self.spec.name, %error, restart, "MCP server died");
            st.error = Some(error);
            if restart {
                st.restarts += 1;
                self.begin_connect(&mut st);
            } else {
                st.status = ServerStatus::Failed;
                st.info = None;
                st.tools = Arc::new(Vec::new());
                self.publish(&st);
            }
            dead
        };
        if let Some(conn) = dead {
            // Reap what is left of it (its process group).
            conn.close().await;
        }
    }

    /// Waits for this server's state to settle (connected, failed or stopped), up to `budget`.
    pub(super) async fn settle(&self, budget: Duration) -> ServerState {
        let deadline = tokio::time::Instant::now() + budget;
        let mut changes = self.changed.subscribe();
        loop {
            {
                let st = self.lock();
                if !matches!(
                    st.status,
                    ServerStatus::Connecting | ServerStatus::NotStarted
                ) {
                    return self.snapshot_of(&st);
                }
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return self.snapshot();
            }
        }
    }

    /// A live connection for a call: starts, waits for, or restarts the server as needed.
    pub(super) async fn ready(
        self: &Arc<Self>,
        cancel: &CancellationToken,
    ) -> Result<Ready, McpError> {
        let budget = self.spec.startup_timeout + WAIT_SLACK;
        let deadline = tokio::time::Instant::now() + budget;
        let mut changes = self.changed.subscribe();
        let mut waited = false;
        loop {
            let dead = {
                let mut st = self.lock();
                match st.status {
                    ServerStatus::Stopped => return Err(McpError::Cancelled),
                    ServerStatus::Connected => match &st.conn {
                        Some(conn) if conn.is_alive() => {
                            return Ok((Arc::clone(conn), st.generation));
                        }
                        Some(conn) => Some((Arc::clone(conn), st.generation)),
                        None => return Err(down(st.error.clone())),
                    },
                    ServerStatus::NotStarted => {
                        self.begin_connect(&mut st);
                        None
                    }
                    ServerStatus::Connecting => None,
                    ServerStatus::Failed if waited => {
                        return Err(st.error.clone().unwrap_or_else(|| down(None)));
                    }
                    ServerStatus::Failed if st.restarts < MAX_RESTARTS => {
                        st.restarts += 1;
                        self.begin_connect(&mut st);
                        None
                    }
                    ServerStatus::Failed => return Err(down(st.error.clone())),
                }
            };
            if let Some((conn, generation)) = dead {
                // Found dead before the call: learn how it died, restart it (once) and go on.
                let error = conn.death_error().await;
                self.died(generation, error).await;
                continue;
            }
            waited = true;
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(McpError::Cancelled),
                changed = tokio::time::timeout_at(deadline, changes.changed()) => {
                    if changed.is_err() {
                        return Err(McpError::Timeout {
                            what: "startup".to_string(),
                            after_ms: u64::try_from(budget.as_millis()).unwrap_or(u64::MAX),
                            stderr_tail: String::new(),
                        });
                    }
                }
            }
        }
    }

    /// Marks the server stopped; returns its connection and tasks for the caller to end.
    pub(super) fn stop(&self) -> (Option<Arc<Connection>>, Vec<JoinHandle<()>>) {
        let mut st = self.lock();
        st.generation = st.generation.wrapping_add(1);
        let conn = st.conn.take();
        let tasks = std::mem::take(&mut st.tasks);
        if st.status != ServerStatus::Stopped {
            st.status = ServerStatus::Stopped;
            st.info = None;
            st.tools = Arc::new(Vec::new());
            self.publish(&st);
        }
        (conn, tasks)
    }
}

/// [`McpError::Down`] carrying the failure that took the server down.
fn down(last: Option<McpError>) -> McpError {
    McpError::Down {
        last: Box::new(last.unwrap_or_else(|| McpError::Protocol {
            message: CONNECTION_CLOSED.to_string(),
            stderr_tail: String::new(),
        })),
    }
}

/// Connects, reports, then (stdio) watches the process to report its death. Holds the slot
/// only weakly while watching, so a dropped hub drops its connections (killing them).
async fn connect_task(slot: Arc<Slot>, generation: u64) {
    let started = Instant::now();
    let result = Connection::connect(&slot.spec, &slot.stopping).await;
    let exit_watch = result.as_ref().ok().and_then(Connection::exit_watch);
    slot.connected(generation, result, started.elapsed()).await;
    let Some(exit_watch) = exit_watch else {
        return;
    };
    let slot: Weak<Slot> = {
        let weak = Arc::downgrade(&slot);
        drop(slot);
        weak
    };
    let exit = exit_watch.exited().await;
    let error = exit_watch.exit_error(exit).await;
    if let Some(slot) = slot.upgrade() {
        slot.died(generation, error).await;
    }
}
