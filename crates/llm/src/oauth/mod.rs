//! Subscription logins (OAuth) and the requests made with their tokens.
//!
//! - [`copilot`]: GitHub's device-code flow, then the Copilot token exchange (also the
//!   refresh: the GitHub token is exchanged again).
//! - [`codex`]: ChatGPT's authorization code with PKCE and a loopback callback, a pasted
//!   redirect URL or code accepted too; refresh with `grant_type=refresh_token`.
//! - [`subscription_access`]: what a wire client needs from a login's credentials.
//!
//! Nothing here reads or writes files: callers persist the [`OauthCredentials`].

pub mod codex;
pub mod copilot;
mod error;
mod loopback;
mod pkce;

use std::time::Duration;

use braincode_protocol::{
    EXTRA_ACCOUNT_ID, EXTRA_API_BASE_URL, EXTRA_ENTERPRISE_DOMAIN, ModelApi, OauthCredentials,
    OauthProvider,
};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

pub use error::OauthError;
pub use pkce::{Pkce, random_state};

/// How long a login may wait for the user when the provider does not say (the PKCE flow).
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Time limit of one request to an authorization server.
pub const OAUTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// What a login shows the user while it waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginEvent {
    /// Open `verification_uri` and enter `user_code` (device flow).
    DeviceCode {
        /// The code to type.
        user_code: String,
        /// Where to type it.
        verification_uri: String,
    },
    /// Open `url` in a browser (authorization-code flow).
    AuthUrl {
        /// The authorization URL.
        url: String,
    },
    /// A line of progress.
    Progress(String),
}

/// Where login events go (dropped silently when nobody listens).
pub type LoginEvents = mpsc::UnboundedSender<LoginEvent>;

fn emit(events: &LoginEvents, event: LoginEvent) {
    let _ = events.send(event);
}

/// How a wire client reaches a model through a subscription.
#[derive(Clone, PartialEq, Eq)]
pub struct SubscriptionAccess {
    /// The bearer token.
    pub token: String,
    /// The wire the provider speaks.
    pub api: ModelApi,
    /// The API base URL (the endpoint path is appended to it as it is).
    pub base_url: String,
    /// Headers the provider needs.
    pub headers: Vec<(String, String)>,
}

impl std::fmt::Debug for SubscriptionAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionAccess")
            .field("api", &self.api)
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// The bearer token, wire, base URL and headers of a login's credentials.
pub fn subscription_access(
    provider: OauthProvider,
    credentials: &OauthCredentials,
) -> SubscriptionAccess {
    match provider {
        OauthProvider::GithubCopilot => SubscriptionAccess {
            token: credentials.access.clone(),
            api: ModelApi::OpenaiCompletions,
            base_url: credentials
                .extra_str(EXTRA_API_BASE_URL)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    copilot::default_api_base(credentials.extra_str(EXTRA_ENTERPRISE_DOMAIN))
                }),
            headers: copilot::api_headers(),
        },
        OauthProvider::OpenaiCodex => {
            let mut headers = codex::api_headers();
            if let Some(account) = credentials.extra_str(EXTRA_ACCOUNT_ID) {
                headers.push(("chatgpt-account-id".into(), account.to_string()));
            }
            SubscriptionAccess {
                token: credentials.access.clone(),
                api: ModelApi::OpenaiResponses,
                base_url: codex::CODEX_API_BASE.to_string(),
                headers,
            }
        }
    }
}

/// The HTTP client of the logins.
pub fn oauth_http() -> Result<reqwest::Client, OauthError> {
    reqwest::Client::builder()
        .timeout(OAUTH_REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|err| OauthError::Config(format!("cannot build the HTTP client: {err}")))
}

/// Sends `request` and reads its whole reply.
async fn send_raw(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<(reqwest::StatusCode, bytes::Bytes), OauthError> {
    let network = |err: reqwest::Error| OauthError::Network {
        url: url.to_string(),
        detail: err.without_url().to_string(),
    };
    let reply = request.send().await.map_err(network)?;
    let status = reply.status();
    let bytes = reply.bytes().await.map_err(network)?;
    Ok((status, bytes))
}

/// Parses a JSON reply of any status (OAuth errors come as JSON); a reply that is not JSON
/// is a bad reply (success) or an HTTP error (any other status).
fn parse_json<T: DeserializeOwned>(
    status: reqwest::StatusCode,
    bytes: &[u8],
    url: &str,
) -> Result<T, OauthError> {
    serde_json::from_slice::<T>(bytes).map_err(|err| {
        if status.is_success() {
            OauthError::BadReply {
                url: url.to_string(),
                detail: format!("not the expected JSON: {err}"),
            }
        } else {
            OauthError::Http {
                url: url.to_string(),
                status: status.as_u16(),
                detail: crate::clip_detail(&String::from_utf8_lossy(bytes), false),
            }
        }
    })
}

/// [`send_raw`] then [`parse_json`].
async fn send_json<T: DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<(reqwest::StatusCode, T), OauthError> {
    let (status, bytes) = send_raw(request, url).await?;
    Ok((status, parse_json(status, &bytes, url)?))
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
