//! The sessions an editor opened, and one prompt turn of a session.
//!
//! A session is a Braincode session (same id, same journal): each prompt is one run that
//! continues it, so `@@id`, `sessions show`, `replay` and the TUI see editor turns like any
//! other. One prompt runs at a time per session; a second while one runs is refused with a
//! JSON-RPC error saying so. A cancelled turn stops like Ctrl-C: the run writes its one final
//! answer and closes its journal, and the prompt answers `cancelled`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PromptResponse, SessionId as AcpSessionId, SessionNotification, SessionUpdate, StopReason,
    Usage,
};
use agent_client_protocol::{Client, Error};
use braincode_config::{Home, McpServerConfig};
use braincode_protocol::{FinalReport, FinalStatus, RunEvent, SessionId};
use braincode_runtime::{ChannelSubscriber, McpHubCache, PermissionMode, RunRequest, RunServices};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approve::AcpApprover;
use crate::files::{ClientFiles, FsOffer};
use crate::prompt::PromptParts;
use crate::updates::{Telling, Translator};

/// How long the end of the connection waits for cancelled runs to close their journals.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What every session of one `braincode acp` process shares.
pub struct Shared {
    /// The Braincode home.
    pub home: Home,
    /// How long a permission request waits for the editor.
    pub permission_timeout: Duration,
    /// The mode of a new session.
    pub default_mode: PermissionMode,
    /// Whether the run's commands may use the network.
    pub allow_network: bool,
    sessions: Mutex<HashMap<String, Session>>,
    /// The files the editor serves (said at `initialize`).
    fs_offer: Mutex<FsOffer>,
    /// Every run started, so the end of the connection can wait for their journals.
    runs: Mutex<Vec<JoinHandle<()>>>,
}

/// One open session.
pub struct Session {
    /// Its project.
    pub cwd: PathBuf,
    /// How much its runs may change.
    pub mode: PermissionMode,
    /// The brain its runs use (the default brain when none).
    pub brain: Option<String>,
    /// The editor's MCP servers for it.
    pub mcp: Vec<McpServerConfig>,
    hubs: Arc<McpHubCache>,
    running: Option<Running>,
}

struct Running {
    cancel: CancellationToken,
    reason: Arc<OnceLock<String>>,
}

impl Session {
    /// Whether a prompt is running in it.
    pub fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// A session of `cwd` in `mode`.
    pub fn new(cwd: PathBuf, mode: PermissionMode, mcp: Vec<McpServerConfig>) -> Self {
        Self {
            cwd,
            mode,
            brain: None,
            mcp,
            hubs: Arc::new(McpHubCache::default()),
            running: None,
        }
    }
}

impl Shared {
    /// The shared state of a server.
    pub fn new(
        home: Home,
        permission_timeout: Duration,
        default_mode: PermissionMode,
        allow_network: bool,
    ) -> Self {
        Self {
            home,
            permission_timeout,
            default_mode,
            allow_network,
            sessions: Mutex::new(HashMap::new()),
            fs_offer: Mutex::new(FsOffer::default()),
            runs: Mutex::new(Vec::new()),
        }
    }

    /// The open sessions (a poisoned lock still holds a usable map: every change to it is
    /// one insert or one field write).
    pub fn sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records what the editor said it serves at `initialize`.
    pub fn set_fs_offer(&self, offer: FsOffer) {
        *self
            .fs_offer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = offer;
    }

    fn fs_offer(&self) -> FsOffer {
        *self
            .fs_offer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stops the running prompt of `session`, if any, saying why.
    pub fn cancel(&self, session: &str, reason: &str) -> bool {
        let sessions = self.sessions();
        let Some(running) = sessions.get(session).and_then(|s| s.running.as_ref()) else {
            return false;
        };
        let _ = running.reason.set(reason.to_string());
        running.cancel.cancel();
        true
    }

    /// The end of the connection: every running prompt is cancelled, and each run is given
    /// [`SHUTDOWN_GRACE`] to write its final answer and close its journal.
    pub async fn shut_down(&self) {
        let ids: Vec<String> = self.sessions().keys().cloned().collect();
        for id in ids {
            self.cancel(&id, "the editor closed the connection");
        }
        let runs = std::mem::take(
            &mut *self
                .runs
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let all = futures_join(runs);
        if tokio::time::timeout(SHUTDOWN_GRACE, all).await.is_err() {
            tracing::warn!(
                "some runs did not end within {SHUTDOWN_GRACE:?} of the connection's end"
            );
        }
    }

    /// Starts one prompt turn in `session_id`: its run, whose events and answer the returned
    /// [`PromptTurn`] gives. Refused when the session is unknown or already running a prompt.
    pub fn start_prompt(
        self: &Arc<Self>,
        session_id: &AcpSessionId,
        parts: PromptParts,
        connection: &ConnectionTo<Client>,
    ) -> Result<PromptTurn, Error> {
        let key = session_id.0.to_string();
        let ours = SessionId::new(key.clone())
            .map_err(|err| Error::invalid_params().data(format!("session id {key:?}: {err}")))?;
        let mut sessions = self.sessions();
        let session = sessions
            .get_mut(&key)
            .ok_or_else(|| unknown_session(&key))?;
        if session.running.is_some() {
            return Err(Error::new(
                agent_client_protocol::ErrorCode::INVALID_REQUEST,
                format!(
                    "session {key} is already running a prompt: wait for its answer or send session/cancel first"
                ),
            ));
        }
        let cancel = CancellationToken::new();
        let reason = Arc::new(OnceLock::new());
        let (events, receiver) = mpsc::unbounded_channel();
        let mut services = RunServices::new(self.home.clone());
        services
            .subscribers
            .push(Arc::new(ChannelSubscriber(events)));
        services.cancel = cancel.clone();
        services.cancel_reason = reason.clone();
        services.mcp_hubs = Some(session.hubs.clone());
        services.extra_mcp_servers = session.mcp.clone();
        let offer = self.fs_offer();
        if offer != FsOffer::default() {
            services.editor_files = Some(Arc::new(ClientFiles {
                connection: connection.clone(),
                session_id: session_id.clone(),
                offer,
            }));
        }
        services.approver = Some(Arc::new(AcpApprover {
            connection: connection.clone(),
            session_id: session_id.clone(),
            project_root: session.cwd.clone(),
            timeout: self.permission_timeout,
            cancel: cancel.clone(),
        }));
        let request = RunRequest {
            session_id: Some(ours),
            brain_id: session.brain.clone(),
            permission: session.mode,
            allow_network: self.allow_network,
            images: parts.images,
            ..RunRequest::new(parts.text, session.cwd.clone())
        };
        let translator = Translator::new(Telling::Live, self.home.root(), &key, &session.cwd);
        session.running = Some(Running {
            cancel: cancel.clone(),
            reason,
        });
        drop(sessions);
        let run = tokio::spawn(braincode_runtime::run(request, services));
        let (done, finished) = tokio::sync::oneshot::channel();
        let watcher = tokio::spawn(async move {
            // The run itself never panics out (see `braincode_runtime::run`); a join error is
            // a runtime shutting down.
            let _ = done.send(run.await.map_err(|err| err.to_string()));
        });
        let mut runs = self
            .runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Only runs still going matter at the end: a long editor session keeps no list of
        // every prompt it ever ran.
        runs.retain(|run| !run.is_finished());
        runs.push(watcher);
        drop(runs);
        Ok(PromptTurn {
            shared: self.clone(),
            session_id: session_id.clone(),
            key,
            receiver,
            finished,
            translator,
            cancel,
        })
    }
}

/// A prompt turn under way: its events, then its answer.
pub struct PromptTurn {
    shared: Arc<Shared>,
    session_id: AcpSessionId,
    key: String,
    receiver: mpsc::UnboundedReceiver<RunEvent>,
    finished: tokio::sync::oneshot::Receiver<Result<FinalReport, String>>,
    translator: Translator,
    cancel: CancellationToken,
}

impl PromptTurn {
    /// Streams the run's updates to the editor, then gives the prompt's response.
    pub async fn finish(
        mut self,
        connection: &ConnectionTo<Client>,
    ) -> Result<PromptResponse, Error> {
        while let Some(event) = self.receiver.recv().await {
            let last = matches!(event, RunEvent::Final { .. });
            for update in self.translator.event(&event) {
                send(connection, &self.session_id, update);
            }
            if last {
                break;
            }
        }
        let report = (&mut self.finished).await;
        if let Some(session) = self.shared.sessions().get_mut(&self.key) {
            session.running = None;
        }
        let report = match report {
            Ok(Ok(report)) => report,
            Ok(Err(reason)) => return Err(Error::internal_error().data(reason)),
            Err(_) => return Err(Error::internal_error().data("the run ended without a report")),
        };
        let stop = match report.status {
            FinalStatus::Aborted => StopReason::Cancelled,
            FinalStatus::BudgetExceeded => StopReason::MaxTokens,
            _ if self.cancel.is_cancelled() => StopReason::Cancelled,
            FinalStatus::Approved
            | FinalStatus::ChangesRequested
            | FinalStatus::Blocked
            | FinalStatus::Answered
            | FinalStatus::ReadOnly
            | FinalStatus::NeedsClarification
            | FinalStatus::Failed => StopReason::EndTurn,
        };
        let mut response = PromptResponse::new(stop);
        if let Some(metrics) = &report.metrics {
            let total = &metrics.tokens.total;
            response = response.usage(
                Usage::new(total.total, total.input, total.output)
                    .cached_read_tokens(Some(total.cache_read))
                    .cached_write_tokens(Some(total.cache_write))
                    .thought_tokens((total.reasoning > 0).then_some(total.reasoning)),
            );
        }
        Ok(response)
    }
}

/// Sends one update; a closed connection is the end of the process, not an error of the run.
pub fn send(connection: &ConnectionTo<Client>, session: &AcpSessionId, update: SessionUpdate) {
    if let Err(err) =
        connection.send_notification(SessionNotification::new(session.clone(), update))
    {
        tracing::debug!("session/update not sent: {}", err.message);
    }
}

/// The error for a session this process does not have open.
pub fn unknown_session(id: &str) -> Error {
    Error::new(
        agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
        format!("no open session {id}: create one with session/new or open it with session/load"),
    )
}

async fn futures_join(runs: Vec<JoinHandle<()>>) {
    for run in runs {
        let _ = run.await;
    }
}
