//! One subscription login from start to auth.json, shared by `braincode auth login` and the
//! control panel.

use std::time::Duration;

use braincode_config::{AuthStore, Home, OauthEntry, OauthSettings};
use braincode_llm::oauth::codex::ManualCodes;
use braincode_llm::oauth::copilot::GithubHost;
use braincode_llm::oauth::{LoginEvents, codex, copilot, oauth_http};
use braincode_protocol::{OauthCredentials, OauthProvider};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{SubscriptionError, codex_endpoints, copilot_endpoints};

/// What to log in to.
#[derive(Debug, Clone)]
pub struct LoginRequest {
    /// The provider.
    pub provider: OauthProvider,
    /// GitHub Enterprise domain (Copilot only; empty for github.com).
    pub enterprise_domain: String,
    /// How long the authorization-code flow waits for the browser.
    pub timeout: Duration,
}

/// How the login talks to whoever started it.
pub struct LoginChannels {
    /// Progress, the URL to open or the code to enter.
    pub events: LoginEvents,
    /// Pasted redirect URLs or codes (callback providers).
    pub pasted: mpsc::UnboundedReceiver<String>,
    /// Cancels the login; nothing is written then.
    pub cancel: CancellationToken,
}

/// Runs the login and saves its credentials in auth.json (0600) under the provider's id.
/// Nothing is written unless the login succeeds.
pub async fn subscription_login(
    home: &Home,
    oauth: &OauthSettings,
    request: LoginRequest,
    mut channels: LoginChannels,
) -> Result<OauthCredentials, SubscriptionError> {
    let http = oauth_http()?;
    let credentials = match request.provider {
        OauthProvider::GithubCopilot => {
            let host = GithubHost::parse(&request.enterprise_domain)?;
            let endpoints = copilot_endpoints(oauth, &host);
            copilot::login(&http, &endpoints, &channels.events, &channels.cancel).await?
        }
        OauthProvider::OpenaiCodex => {
            let endpoints = codex_endpoints(oauth);
            codex::login(
                &http,
                &endpoints,
                &channels.events,
                ManualCodes {
                    pasted: &mut channels.pasted,
                },
                &channels.cancel,
                request.timeout,
            )
            .await?
        }
    };
    if channels.cancel.is_cancelled() {
        return Err(braincode_llm::oauth::OauthError::Cancelled.into());
    }
    let entry = OauthEntry {
        provider_id: request.provider.id().to_string(),
        credentials,
    };
    AuthStore::new(home).set_oauth(request.provider.id(), &entry)?;
    Ok(entry.credentials)
}
