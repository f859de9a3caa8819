//! Login sessions of the panel: each runs one subscription login in the background, and the
//! page polls its public state (`starting → pending → completed | failed | cancelled`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use braincode_llm::oauth::{LOGIN_TIMEOUT, LoginEvent, OauthError};
use braincode_protocol::OauthProvider;
use braincode_runtime::{LoginChannels, LoginRequest, SubscriptionError, subscription_login};
use serde::Serialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::AppState;

/// Progress messages kept per session (the most recent ones).
pub const MAX_MESSAGES: usize = 10;
/// How long a finished session can still be polled.
pub const KEEP_FINISHED: Duration = Duration::from_secs(30 * 60);
/// How long starting a login waits for its URL or device code before answering.
pub const START_WAIT: Duration = Duration::from_millis(5_000);
/// How often that wait looks.
pub const START_POLL: Duration = Duration::from_millis(50);

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Starting,
    Pending,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn finished(self) -> bool {
        match self {
            Status::Starting | Status::Pending => false,
            Status::Completed | Status::Failed | Status::Cancelled => true,
        }
    }
}

/// What the page sees of a session (never a token).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionState {
    pub id: String,
    pub oauth_provider_id: &'static str,
    pub status: Status,
    pub uses_callback_server: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_uri: Option<String>,
    pub messages: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the saved access token expires (ms since the epoch), once completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<i64>,
}

struct Session {
    state: SessionState,
    cancel: CancellationToken,
    paste: mpsc::UnboundedSender<String>,
    finished_at: Option<Instant>,
}

/// Every login session of this panel.
#[derive(Default)]
pub(crate) struct LoginSessions {
    sessions: Mutex<HashMap<String, Session>>,
}

impl std::fmt::Debug for LoginSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoginSessions")
    }
}

/// Why a session action was refused.
pub(crate) enum SessionRefusal {
    Unknown,
    Finished,
    NoManualCode,
}

impl LoginSessions {
    fn locked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        match self.sessions.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn prune(sessions: &mut HashMap<String, Session>) {
        sessions.retain(|_, s| s.finished_at.is_none_or(|at| at.elapsed() < KEEP_FINISHED));
    }

    /// The public state of session `id`.
    pub(crate) fn get(&self, id: &str) -> Option<SessionState> {
        let mut sessions = self.locked();
        Self::prune(&mut sessions);
        sessions.get(id).map(|s| s.state.clone())
    }

    fn update(&self, id: &str, change: impl FnOnce(&mut Session)) {
        if let Some(session) = self.locked().get_mut(id) {
            change(session);
        }
    }

    /// Hands a pasted redirect URL or code to a waiting callback login.
    pub(crate) fn paste(&self, id: &str, code: String) -> Result<SessionState, SessionRefusal> {
        let sessions = self.locked();
        let session = sessions.get(id).ok_or(SessionRefusal::Unknown)?;
        if session.state.status.finished() {
            return Err(SessionRefusal::Finished);
        }
        if !session.state.uses_callback_server {
            return Err(SessionRefusal::NoManualCode);
        }
        let _ = session.paste.send(code);
        Ok(session.state.clone())
    }

    /// Asks a login to stop; `false` when there is no such session.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        match self.locked().get(id) {
            Some(session) => {
                session.cancel.cancel();
                true
            }
            None => false,
        }
    }
}

fn push_message(state: &mut SessionState, message: String) {
    state.messages.push(message);
    let extra = state.messages.len().saturating_sub(MAX_MESSAGES);
    state.messages.drain(..extra);
}

fn apply(state: &mut SessionState, event: LoginEvent) {
    match event {
        LoginEvent::DeviceCode {
            user_code,
            verification_uri,
        } => {
            state.status = Status::Pending;
            state.user_code = Some(user_code);
            state.verification_uri = Some(verification_uri);
        }
        LoginEvent::AuthUrl { url } => {
            state.status = Status::Pending;
            state.auth_url = Some(url);
        }
        LoginEvent::Progress(message) => push_message(state, message),
    }
}

/// Starts a login in the background and answers once it shows its URL or code (or after
/// [`START_WAIT`]).
pub(crate) async fn start(
    app: &AppState,
    provider: OauthProvider,
    enterprise_domain: String,
    oauth: braincode_config::OauthSettings,
) -> SessionState {
    let id = crate::guard::random_token()[..16].to_string();
    let cancel = app.shutdown.child_token();
    let (paste, pasted) = mpsc::unbounded_channel();
    let state = SessionState {
        id: id.clone(),
        oauth_provider_id: provider.id(),
        status: Status::Starting,
        uses_callback_server: provider.uses_callback_server(),
        auth_url: None,
        user_code: None,
        verification_uri: None,
        messages: Vec::new(),
        error: None,
        expires: None,
    };
    {
        let mut sessions = app.oauth_logins.locked();
        LoginSessions::prune(&mut sessions);
        sessions.insert(
            id.clone(),
            Session {
                state,
                cancel: cancel.clone(),
                paste,
                finished_at: None,
            },
        );
    }
    let task_app = app.clone();
    let task_id = id.clone();
    tokio::spawn(async move {
        let (events, mut shown) = mpsc::unbounded_channel();
        let forward = {
            let (app, id) = (task_app.clone(), task_id.clone());
            tokio::spawn(async move {
                while let Some(event) = shown.recv().await {
                    app.oauth_logins.update(&id, |s| apply(&mut s.state, event));
                }
            })
        };
        let result = subscription_login(
            &task_app.home,
            &oauth,
            LoginRequest {
                provider,
                enterprise_domain,
                timeout: LOGIN_TIMEOUT,
            },
            LoginChannels {
                events,
                pasted,
                cancel,
            },
        )
        .await;
        let _ = forward.await;
        task_app.oauth_logins.update(&task_id, |session| {
            let state = &mut session.state;
            match result {
                Ok(credentials) => {
                    state.status = Status::Completed;
                    state.expires = Some(credentials.expires);
                }
                Err(SubscriptionError::Login(OauthError::Cancelled)) => {
                    state.status = Status::Cancelled;
                    state.error = Some(OauthError::Cancelled.to_string());
                }
                Err(err) => {
                    state.status = Status::Failed;
                    state.error = Some(
                        braincode_protocol::secrets::redact_secrets(&err.to_string()).into_owned(),
                    );
                }
            }
            session.finished_at = Some(Instant::now());
        });
    });
    wait_while(app, &id, |status| status == Status::Starting).await
}

/// Waits up to [`START_WAIT`] while `keep_waiting` holds for the session's status.
pub(crate) async fn wait_while(
    app: &AppState,
    id: &str,
    keep_waiting: impl Fn(Status) -> bool,
) -> SessionState {
    let started = Instant::now();
    loop {
        let Some(state) = app.oauth_logins.get(id) else {
            // Pruned only long after finishing: cannot happen within the wait.
            return SessionState {
                id: id.to_string(),
                oauth_provider_id: "",
                status: Status::Failed,
                uses_callback_server: false,
                auth_url: None,
                user_code: None,
                verification_uri: None,
                messages: Vec::new(),
                error: Some("the login session is gone".into()),
                expires: None,
            };
        };
        if !keep_waiting(state.status) || started.elapsed() >= START_WAIT {
            return state;
        }
        tokio::time::sleep(START_POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_last_messages_are_kept() {
        let mut state = SessionState {
            id: "x".into(),
            oauth_provider_id: "github-copilot",
            status: Status::Starting,
            uses_callback_server: false,
            auth_url: None,
            user_code: None,
            verification_uri: None,
            messages: Vec::new(),
            error: None,
            expires: None,
        };
        for i in 0..15 {
            apply(&mut state, LoginEvent::Progress(format!("m{i}")));
        }
        assert_eq!(state.messages.len(), MAX_MESSAGES);
        assert_eq!(state.messages[0], "m5");
        apply(
            &mut state,
            LoginEvent::DeviceCode {
                user_code: "C".into(),
                verification_uri: "U".into(),
            },
        );
        assert_eq!(state.status, Status::Pending);
    }
}
