//! Why a login or a refresh failed, in words a user can act on.

/// A failed login or refresh.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OauthError {
    /// The user refused the authorization.
    #[error("the authorization was denied{}: nothing was saved", detail_suffix(.detail))]
    Denied {
        /// The provider's description, if any.
        detail: String,
    },
    /// The code expired before the user entered it.
    #[error(
        "the login code expired before it was entered: nothing was saved; start the login again"
    )]
    Expired,
    /// The user (or the panel) cancelled.
    #[error("the login was cancelled: nothing was saved")]
    Cancelled,
    /// The user took too long.
    #[error(
        "the login timed out after {seconds} s without an answer: nothing was saved; start it again"
    )]
    Timeout {
        /// How long it waited.
        seconds: u64,
    },
    /// The callback's `state` is not the one this login sent (another login, or a forged
    /// redirect).
    #[error(
        "the redirect's state does not match this login (a stale tab or a forged redirect): nothing was saved; start the login again"
    )]
    StateMismatch,
    /// A pasted redirect URL or code that holds no code.
    #[error(
        "no authorization code in {input:?}: paste the whole redirect URL (http://localhost…/auth/callback?code=…) or the code"
    )]
    NoCode {
        /// What was pasted (clipped).
        input: String,
    },
    /// The server answered something that is not a valid token reply.
    #[error("{url} gave a bad reply: {detail}")]
    BadReply {
        /// The endpoint.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// An HTTP error status.
    #[error("{url} answered HTTP {status}: {detail}")]
    Http {
        /// The endpoint.
        url: String,
        /// The status code.
        status: u16,
        /// The reply body (clipped).
        detail: String,
    },
    /// The server could not be reached.
    #[error("cannot reach {url}: {detail}")]
    Network {
        /// The endpoint.
        url: String,
        /// The transport error.
        detail: String,
    },
    /// The login cannot start (bad endpoint, busy port…).
    #[error("{0}")]
    Config(String),
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}
