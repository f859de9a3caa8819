//! Interactive and background command sessions shared by `exec_command`, `write_stdin`,
//! `list_background` and `kill_background`.
//!
//! Each session is a `sh -c` child leading its own process group, with its stdout and stderr
//! merged into one tail buffer (`[stderr] ` before stderr lines). Callers read the output
//! produced since their last read. Foreground sessions die at their timeout; background
//! sessions only when an explicit timeout expires, on `kill_background`, when the run is
//! cancelled, or when the manager is dropped. Each session's process group is owned by a
//! [`ProcessGroup`] guard held by its waiter task, so a runtime that shuts down (dropping the
//! task) kills the whole group too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::process::{
    ExitInfo, ProcessGroup, drain, prepare, terminate_group, terminate_group_detached,
};
use crate::text::{TailBuffer, render_tail_bytes};

/// Limits of a session manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecLimits {
    /// Running foreground sessions at once.
    pub max_foreground: usize,
    /// Running background sessions at once.
    pub max_background: usize,
    /// How long a finished session stays readable.
    pub ttl: Duration,
    /// Output kept per session (bytes).
    pub buffer_bytes: usize,
}

impl Default for ExecLimits {
    fn default() -> Self {
        Self {
            max_foreground: 16,
            max_background: 8,
            ttl: Duration::from_secs(5 * 60),
            buffer_bytes: 512_000,
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// Shell text.
    pub command: String,
    /// Shell program (`sh`, `bash`, …).
    pub shell: String,
    /// Working directory (already checked to be inside the project).
    pub workdir: std::path::PathBuf,
    /// Background session.
    pub background: bool,
    /// Kill after this long (`None`: never, for background sessions).
    pub timeout: Option<Duration>,
    /// The OS sandbox the session runs in (`None`: a person approved running it unconfined).
    pub sandbox: Option<Arc<braincode_sandbox::Sandbox>>,
}

/// A snapshot of a session after waiting on it.
#[derive(Debug, Clone)]
pub struct SessionRead {
    /// Session id.
    pub id: u64,
    /// Command text.
    pub command: String,
    /// Background session.
    pub background: bool,
    /// How it ended, if it did.
    pub exit: Option<ExitInfo>,
    /// Killed by its timeout.
    pub timed_out: bool,
    /// Killed on request or by cancellation.
    pub killed: bool,
    /// Output since the previous read (tail-capped, with an omission marker).
    pub output: String,
    /// Bytes of that output that were dropped.
    pub omitted_bytes: u64,
}

/// One line of `list_background`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Session id.
    pub id: u64,
    /// Command text.
    pub command: String,
    /// Background session.
    pub background: bool,
    /// How it ended, if it did.
    pub exit: Option<ExitInfo>,
    /// Time since start.
    pub elapsed: Duration,
}

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Too many running sessions of that kind.
    #[error(
        "too many running {kind} sessions ({limit}); poll or stop one first (list_background, kill_background)"
    )]
    TooMany {
        /// `foreground` or `background`.
        kind: &'static str,
        /// The limit.
        limit: usize,
    },
    /// No such session.
    #[error("unknown session id {0}; list_background shows the running sessions")]
    Unknown(u64),
    /// stdin is closed.
    #[error("session {0} is not writable: {1}")]
    NotWritable(u64, String),
    /// The process could not start.
    #[error("could not start `{command}`: {error}")]
    Spawn {
        /// Command text.
        command: String,
        /// OS error.
        error: std::io::Error,
    },
}

struct OutputState {
    buffer: TailBuffer,
    read_position: u64,
    stdout_at_line_start: bool,
    stderr_at_line_start: bool,
}

struct Session {
    id: u64,
    command: String,
    background: bool,
    started: Instant,
    pgid: i32,
    output: Mutex<OutputState>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    exit: watch::Receiver<Option<ExitInfo>>,
    finished_at: Mutex<Option<Instant>>,
    timed_out: AtomicBool,
    killed: AtomicBool,
}

impl Session {
    fn exit(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    fn append(&self, data: &[u8], stderr: bool) {
        let Ok(mut state) = self.output.lock() else {
            return;
        };
        if !stderr {
            state.buffer.push(data);
            state.stdout_at_line_start = data.last() == Some(&b'\n');
            return;
        }
        let mut prefixed = Vec::with_capacity(data.len() + 16);
        let mut at_line_start = state.stderr_at_line_start;
        for &byte in data {
            if at_line_start {
                prefixed.extend_from_slice(b"[stderr] ");
            }
            prefixed.push(byte);
            at_line_start = byte == b'\n';
        }
        state.stderr_at_line_start = at_line_start;
        state.buffer.push(&prefixed);
    }

    fn read_new(&self, max_bytes: usize) -> (String, u64) {
        let Ok(mut state) = self.output.lock() else {
            return (String::new(), 0);
        };
        let (bytes, lost) = state.buffer.since(state.read_position);
        state.read_position = state.buffer.total();
        let (bytes, extra) = if bytes.len() > max_bytes {
            let cut = bytes.len() - max_bytes;
            (bytes[cut..].to_vec(), cut as u64)
        } else {
            (bytes, 0)
        };
        let omitted = lost + extra;
        (render_tail_bytes(&bytes, omitted), omitted)
    }
}

/// The session manager: one per run, shared by every agent's exec tools.
pub struct ExecSessions {
    limits: ExecLimits,
    table: Mutex<BTreeMap<u64, Arc<Session>>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for ExecSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSessions")
            .field("limits", &self.limits)
            .field("sessions", &self.table.lock().map(|t| t.len()).unwrap_or(0))
            .finish()
    }
}

impl Default for ExecSessions {
    fn default() -> Self {
        Self::new(ExecLimits::default())
    }
}

impl ExecSessions {
    /// A manager with the given limits.
    pub fn new(limits: ExecLimits) -> Self {
        Self {
            limits,
            table: Mutex::new(BTreeMap::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
        }
    }

    fn get(&self, id: u64) -> Result<Arc<Session>, SessionError> {
        self.table
            .lock()
            .ok()
            .and_then(|table| table.get(&id).cloned())
            .ok_or(SessionError::Unknown(id))
    }

    fn remove(&self, id: u64) {
        if let Ok(mut table) = self.table.lock() {
            table.remove(&id);
        }
    }

    /// Forgets finished sessions older than the TTL.
    fn prune(&self) {
        let ttl = self.limits.ttl;
        if let Ok(mut table) = self.table.lock() {
            table.retain(|_, session| {
                session
                    .finished_at
                    .lock()
                    .ok()
                    .and_then(|at| *at)
                    .is_none_or(|at| at.elapsed() < ttl)
            });
        }
    }

    /// Starts a session. `cancel` kills its process group when it fires.
    pub fn spawn(
        &self,
        request: SpawnRequest,
        cancel: &CancellationToken,
    ) -> Result<u64, SessionError> {
        self.prune();
        let running = |background: bool| {
            self.table
                .lock()
                .map(|table| {
                    table
                        .values()
                        .filter(|s| s.background == background && s.exit().is_none())
                        .count()
                })
                .unwrap_or(0)
        };
        let (kind, limit) = if request.background {
            ("background", self.limits.max_background)
        } else {
            ("foreground", self.limits.max_foreground)
        };
        if running(request.background) >= limit {
            return Err(SessionError::TooMany { kind, limit });
        }
        let mut command = super::process::confined_command(
            request.sandbox.as_deref(),
            &request.shell,
            &["-c", &request.command],
            &request.workdir,
        );
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        prepare(&mut command);
        let mut child = command.spawn().map_err(|error| SessionError::Spawn {
            command: request.command.clone(),
            error,
        })?;
        // The waiter task owns the group: however that task ends (the child exits, a kill,
        // the runtime shutting down), nothing of the session outlives it.
        let mut group = ProcessGroup::adopt(child.id());
        let pgid = group.as_ref().map_or(0, ProcessGroup::pgid);
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (exit_tx, exit_rx) = watch::channel(None);
        let session = Arc::new(Session {
            id,
            command: request.command.clone(),
            background: request.background,
            started: Instant::now(),
            pgid,
            output: Mutex::new(OutputState {
                buffer: TailBuffer::new(self.limits.buffer_bytes),
                read_position: 0,
                stdout_at_line_start: true,
                stderr_at_line_start: true,
            }),
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
            exit: exit_rx,
            finished_at: Mutex::new(None),
            timed_out: AtomicBool::new(false),
            killed: AtomicBool::new(false),
        });
        let mut readers = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            readers.push(spawn_reader(stdout, session.clone(), false));
        }
        if let Some(stderr) = child.stderr.take() {
            readers.push(spawn_reader(stderr, session.clone(), true));
        }
        let waiter_session = session.clone();
        let cancel = cancel.clone();
        let timeout = request.timeout;
        tokio::spawn(async move {
            let session = waiter_session;
            let expiry = async {
                match timeout {
                    Some(timeout) => tokio::time::sleep(timeout).await,
                    None => std::future::pending::<()>().await,
                }
            };
            let status = tokio::select! {
                status = child.wait() => status.ok(),
                () = expiry => {
                    session.timed_out.store(true, Ordering::SeqCst);
                    if let Some(group) = group.as_mut() {
                        group.terminate().await;
                    }
                    child.wait().await.ok()
                }
                () = cancel.cancelled() => {
                    session.killed.store(true, Ordering::SeqCst);
                    if let Some(group) = group.as_mut() {
                        group.terminate().await;
                    }
                    child.wait().await.ok()
                }
            };
            drain(session.pgid, readers).await;
            if let Some(group) = group.as_mut() {
                group.release();
            }
            if let Ok(mut stdin) = session.stdin.try_lock() {
                stdin.take();
            }
            if let Ok(mut finished) = session.finished_at.lock() {
                *finished = Some(Instant::now());
            }
            let exit = status.map(ExitInfo::from_status).unwrap_or_default();
            let _ = exit_tx.send(Some(exit));
        });
        if let Ok(mut table) = self.table.lock() {
            table.insert(id, session);
        }
        Ok(id)
    }

    /// Waits up to `wait` for the session to exit (returning early if it does or `cancel`
    /// fires) and returns the output produced since the last read. A finished session is
    /// forgotten once read.
    pub async fn read(
        &self,
        id: u64,
        wait: Duration,
        max_bytes: usize,
        cancel: &CancellationToken,
    ) -> Result<SessionRead, SessionError> {
        let session = self.get(id)?;
        let mut exit = session.exit.clone();
        if exit.borrow().is_none() && !wait.is_zero() {
            tokio::select! {
                _ = tokio::time::timeout(wait, exit.wait_for(Option::is_some)) => {}
                () = cancel.cancelled() => {}
            }
        }
        let (output, omitted_bytes) = session.read_new(max_bytes);
        let exit = session.exit();
        if exit.is_some() {
            self.remove(id);
        }
        Ok(SessionRead {
            id,
            command: session.command.clone(),
            background: session.background,
            exit,
            timed_out: session.timed_out.load(Ordering::SeqCst),
            killed: session.killed.load(Ordering::SeqCst),
            output,
            omitted_bytes,
        })
    }

    /// Writes to a session's stdin.
    pub async fn write(&self, id: u64, chars: &str) -> Result<(), SessionError> {
        let session = self.get(id)?;
        if session.exit().is_some() {
            return Err(SessionError::NotWritable(
                id,
                "the process has exited".into(),
            ));
        }
        let mut stdin = session.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(SessionError::NotWritable(id, "its stdin is closed".into()));
        };
        let result = async {
            pipe.write_all(chars.as_bytes()).await?;
            pipe.flush().await
        }
        .await;
        result.map_err(|error| {
            stdin.take();
            SessionError::NotWritable(id, error.to_string())
        })
    }

    /// Every known session, oldest first.
    pub fn list(&self) -> Vec<SessionInfo> {
        self.prune();
        self.table
            .lock()
            .map(|table| {
                table
                    .values()
                    .map(|s| SessionInfo {
                        id: s.id,
                        command: s.command.clone(),
                        background: s.background,
                        exit: s.exit(),
                        elapsed: s.started.elapsed(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Stops a session's process group (SIGTERM, SIGKILL after 1 s) and returns its last
    /// output.
    pub async fn kill(&self, id: u64, max_bytes: usize) -> Result<SessionRead, SessionError> {
        let session = self.get(id)?;
        if session.exit().is_none() {
            session.killed.store(true, Ordering::SeqCst);
            terminate_group(session.pgid).await;
        }
        let never = CancellationToken::new();
        self.read(id, Duration::from_secs(5), max_bytes, &never)
            .await
    }

    /// Stops every running session, all groups at once.
    pub async fn kill_all(&self) {
        let sessions: Vec<Arc<Session>> = self
            .table
            .lock()
            .map(|t| t.values().cloned().collect())
            .unwrap_or_default();
        let mut kills = tokio::task::JoinSet::new();
        for session in sessions.into_iter().filter(|s| s.exit().is_none()) {
            session.killed.store(true, Ordering::SeqCst);
            kills.spawn(terminate_group(session.pgid));
        }
        while kills.join_next().await.is_some() {}
    }

    /// Process group ids of running sessions (for tests and diagnostics).
    pub fn process_groups(&self) -> Vec<i32> {
        self.table
            .lock()
            .map(|t| {
                t.values()
                    .filter(|s| s.exit().is_none())
                    .map(|s| s.pgid)
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for ExecSessions {
    fn drop(&mut self) {
        let groups = self
            .table
            .get_mut()
            .map(|t| {
                t.values()
                    .filter(|s| s.exit().is_none())
                    .map(|s| s.pgid)
                    .collect()
            })
            .unwrap_or_default();
        terminate_group_detached(groups);
    }
}

fn spawn_reader<R>(reader: R, session: Arc<Session>, stderr: bool) -> tokio::task::JoinHandle<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    super::process::pump_chunks(reader, move |chunk| session.append(chunk, stderr))
}
