//! Classified model errors with a message that says what to do.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What class of failure a model call hit. The class decides retries and fallbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No credential for the provider.
    MissingApiKey,
    /// The credential was refused (401/403).
    Auth,
    /// Too many requests (429) or quota exhausted.
    RateLimit,
    /// The request does not fit the model's context.
    ContextTooLong,
    /// The provider answered something we cannot parse, or the stream broke mid-way.
    InvalidResponse,
    /// Connection refused/reset, DNS, TLS.
    Network,
    /// The provider failed (5xx, overloaded).
    Server,
    /// The request was rejected (400, 404, unknown model).
    BadRequest,
    /// Nothing came back (no text, no tool call).
    EmptyReply,
    /// Idle or total timeout.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The model is misconfigured or not available locally (missing GGUF, bad catalogue entry).
    Config,
    /// The reply stream failed after part of the reply had already been handed to the caller:
    /// the connection was cut, the stream was malformed or ended early, no event came within
    /// the idle timeout, or the provider reported a transient error mid-stream.
    ///
    /// The client retries such failures itself only while nothing has reached the caller;
    /// past that point a retry would repeat text the caller already showed. A model call has
    /// no side effects, so the caller should discard the partial reply and re-issue the
    /// whole call on the same model (see [`ErrorKind::is_retryable_call`]); the failure
    /// underneath is in [`ModelError::cause`].
    StreamInterrupted,
}

impl ErrorKind {
    /// The JSON name of the kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::MissingApiKey => "missing_api_key",
            ErrorKind::Auth => "auth",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::ContextTooLong => "context_too_long",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::Network => "network",
            ErrorKind::Server => "server",
            ErrorKind::BadRequest => "bad_request",
            ErrorKind::EmptyReply => "empty_reply",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Config => "config",
            ErrorKind::StreamInterrupted => "stream_interrupted",
        }
    }

    /// Whether the same request may succeed if sent again (after a backoff).
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimit
                | ErrorKind::Network
                | ErrorKind::Server
                | ErrorKind::Timeout
                | ErrorKind::StreamInterrupted
        )
    }

    /// Whether the caller should re-issue the whole call on the same model: true only for
    /// [`ErrorKind::StreamInterrupted`], which the client could not retry because part of the
    /// reply had been delivered. Other retryable kinds were already retried by the client
    /// (up to `maxRetries`); re-issuing them repeats the wait, so fall back instead.
    pub const fn is_retryable_call(self) -> bool {
        matches!(self, ErrorKind::StreamInterrupted)
    }

    /// Whether the next model candidate is worth trying after this error.
    pub const fn allows_fallback(self) -> bool {
        !matches!(self, ErrorKind::Cancelled | ErrorKind::ContextTooLong)
    }

    /// What the user can do about it.
    pub const fn hint(self) -> &'static str {
        match self {
            ErrorKind::MissingApiKey => {
                "add a key with `braincode auth set <provider>` or set the provider's API key environment variable"
            }
            ErrorKind::Auth => {
                "check that the API key (or the subscription login) is valid and has access to this model"
            }
            ErrorKind::RateLimit => "wait a moment, or add a fallback model to this role's chain",
            ErrorKind::ContextTooLong => {
                "shorten the request or its @references, or start a new session with a handoff (@@<session>)"
            }
            ErrorKind::InvalidResponse => {
                "the endpoint may not speak this API; check the model's `api` and `baseUrl` in models.json"
            }
            ErrorKind::Network => "check the network and the model's `baseUrl`",
            ErrorKind::Server => "the provider is failing; try again later or use a fallback model",
            ErrorKind::BadRequest => "check the model id and its options in models.json",
            ErrorKind::EmptyReply => {
                "try again, or switch the model's `api` between openai-completions and openai-responses"
            }
            ErrorKind::Timeout => {
                "the model did not answer in time; try again, or raise the timeout setting the message names"
            }
            ErrorKind::Cancelled => "the run was cancelled",
            ErrorKind::Config => "run `braincode doctor` to see what is missing",
            ErrorKind::StreamInterrupted => {
                "the reply broke off mid-stream; discard the partial reply and send the call again, or use a fallback model if it keeps happening"
            }
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed model call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelError {
    /// Failure class.
    pub kind: ErrorKind,
    /// What happened (sanitized: no secrets, clipped provider bodies).
    pub message: String,
    /// HTTP status, when there was one.
    pub status: Option<u16>,
    /// Server-requested wait before retrying.
    pub retry_after: Option<Duration>,
    /// Catalogue id of the model, when known.
    pub model: Option<String>,
    /// For [`ErrorKind::StreamInterrupted`]: the class of the failure that broke the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<ErrorKind>,
}

impl ModelError {
    /// A new error of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            status: None,
            retry_after: None,
            model: None,
            cause: None,
        }
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// Sets the server-requested retry delay.
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// Sets the model id.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// This error, raised after `delivered` bytes of the reply reached the caller, as an
    /// [`ErrorKind::StreamInterrupted`] error whose `cause` is the original kind.
    pub fn interrupted(self, delivered: usize) -> Self {
        Self {
            kind: ErrorKind::StreamInterrupted,
            message: format!(
                "the reply broke off after {delivered} bytes had been delivered ({}: {})",
                self.kind, self.message
            ),
            cause: Some(self.kind),
            ..self
        }
    }

    /// A cancellation error.
    pub fn cancelled() -> Self {
        Self::new(ErrorKind::Cancelled, "cancelled")
    }

    /// The message plus what to do about it, for users.
    pub fn humanized(&self) -> String {
        let model = self
            .model
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        format!(
            "{}{model}: {} — {}",
            self.kind,
            self.message,
            self.kind.hint()
        )
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.model, self.status) {
            (Some(model), Some(status)) => write!(
                f,
                "{model}: {} (HTTP {status}): {}",
                self.kind, self.message
            ),
            (Some(model), None) => write!(f, "{model}: {}: {}", self.kind, self.message),
            (None, Some(status)) => write!(f, "{} (HTTP {status}): {}", self.kind, self.message),
            (None, None) => write!(f, "{}: {}", self.kind, self.message),
        }
    }
}

impl std::error::Error for ModelError {}
