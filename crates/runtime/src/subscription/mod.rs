//! Subscription credentials (OAuth entries of auth.json) as runs use them: found beside API
//! keys (a key wins), renewed shortly before they expire under auth.json's update lock, and
//! turned into what a wire client sends.

mod login;

use braincode_config::{
    AuthStore, ConfigError, Home, OauthEntry, OauthSettings, ResolvedKey,
    resolve_api_key_with_source,
};
use braincode_llm::oauth::codex::{CodexEndpoints, CodexOverrides};
use braincode_llm::oauth::copilot::{CopilotEndpoints, CopilotOverrides, GithubHost};
use braincode_llm::oauth::{OauthError, codex, copilot, oauth_http};
use braincode_protocol::{EXTRA_ENTERPRISE_DOMAIN, OauthCredentials, OauthProvider};

pub use login::{LoginChannels, LoginRequest, subscription_login};

/// An access token expiring within this margin is renewed before it is used (ms).
pub const REFRESH_MARGIN_MS: i64 = 60_000;

/// Why a subscription credential cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SubscriptionError {
    /// auth.json cannot be read or written.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The entry names a login this version does not know.
    #[error(
        "auth.json → providers.{provider}.oauth.providerId is {provider_id:?}, not a login Braincode knows (github-copilot, openai-codex); run `braincode auth login <provider>` or `braincode auth set {provider}`"
    )]
    UnknownLogin {
        /// The provider entry.
        provider: String,
        /// Its `providerId`.
        provider_id: String,
    },
    /// The token could not be renewed.
    #[error(
        "the {provider} subscription login has expired and could not be renewed ({source}); run `braincode auth login {provider}` again"
    )]
    Refresh {
        /// The provider entry.
        provider: String,
        /// What the provider said.
        source: OauthError,
    },
    /// A login failed.
    #[error(transparent)]
    Login(#[from] OauthError),
}

/// A provider's credential, as a run picks it: an API key if there is one, else an OAuth
/// login.
#[derive(Debug, Clone)]
pub enum ProviderCredential {
    /// An API key (auth.json or the environment).
    ApiKey(ResolvedKey),
    /// An OAuth entry of auth.json (maybe expired: it is renewed when used).
    Subscription(OauthProvider, OauthEntry),
}

/// The credential of `provider` without renewing anything: an API key (auth.json, the
/// model's `apiKeyEnv`, `<PROVIDER>_API_KEY`) first, then an OAuth entry.
pub fn find_credential(
    home: &Home,
    provider: &str,
    api_key_env: Option<&str>,
) -> Result<Option<ProviderCredential>, SubscriptionError> {
    if let Some(key) = resolve_api_key_with_source(home, provider, api_key_env)? {
        return Ok(Some(ProviderCredential::ApiKey(key)));
    }
    let Some(entry) = AuthStore::new(home).oauth(provider)? else {
        return Ok(None);
    };
    let login = login_of(provider, &entry)?;
    Ok(Some(ProviderCredential::Subscription(login, entry)))
}

fn login_of(provider: &str, entry: &OauthEntry) -> Result<OauthProvider, SubscriptionError> {
    OauthProvider::from_id(&entry.provider_id).ok_or_else(|| SubscriptionError::UnknownLogin {
        provider: provider.to_string(),
        provider_id: entry.provider_id.clone(),
    })
}

/// The Copilot endpoints of `settings.json → auth.oauth.github-copilot` for `host`.
pub fn copilot_endpoints(oauth: &OauthSettings, host: &GithubHost) -> CopilotEndpoints {
    let set = &oauth.github_copilot;
    CopilotEndpoints::new(
        &CopilotOverrides {
            client_id: set.client_id.clone(),
            device_code_url: set.device_code_url.clone(),
            access_token_url: set.access_token_url.clone(),
            copilot_token_url: set.copilot_token_url.clone(),
        },
        host,
    )
}

/// The Codex endpoints of `settings.json → auth.oauth.openai-codex`.
pub fn codex_endpoints(oauth: &OauthSettings) -> CodexEndpoints {
    let set = &oauth.openai_codex;
    CodexEndpoints::new(&CodexOverrides {
        client_id: set.client_id.clone(),
        authorize_url: set.authorize_url.clone(),
        token_url: set.token_url.clone(),
        redirect_uri: set.redirect_uri.clone(),
    })
}

fn fresh_enough(credentials: &OauthCredentials) -> bool {
    credentials.expires - braincode_config::journal::now_ms() > REFRESH_MARGIN_MS
}

/// The credentials of `provider`'s OAuth entry, renewed first when they expire within
/// [`REFRESH_MARGIN_MS`]. The renewal runs under auth.json's update lock and re-reads the
/// entry once it holds it, so of two runs only one asks the provider and the other uses its
/// result; the new entry is written atomically (0600). `None` when there is no entry.
pub async fn fresh_subscription(
    home: &Home,
    oauth: &OauthSettings,
    provider: &str,
) -> Result<Option<(OauthProvider, OauthCredentials)>, SubscriptionError> {
    let store = AuthStore::new(home);
    let Some(entry) = store.oauth(provider)? else {
        return Ok(None);
    };
    let login = login_of(provider, &entry)?;
    if fresh_enough(&entry.credentials) {
        return Ok(Some((login, entry.credentials)));
    }
    let lock = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || store.lock())
            .await
            .map_err(|err| {
                SubscriptionError::Config(ConfigError::Rejected {
                    message: format!("waiting for the auth.json lock stopped: {err}"),
                })
            })??
    };
    // Another run may have renewed it while this one waited for the lock.
    let Some(entry) = store.oauth(provider)? else {
        return Ok(None);
    };
    let login = login_of(provider, &entry)?;
    if fresh_enough(&entry.credentials) {
        return Ok(Some((login, entry.credentials)));
    }
    let refreshed = refresh(oauth, login, &entry.credentials)
        .await
        .map_err(|source| SubscriptionError::Refresh {
            provider: provider.to_string(),
            source,
        })?;
    let entry = OauthEntry {
        provider_id: entry.provider_id,
        credentials: refreshed,
    };
    store.set_oauth_locked(&lock, provider, &entry)?;
    drop(lock);
    Ok(Some((login, entry.credentials)))
}

async fn refresh(
    oauth: &OauthSettings,
    login: OauthProvider,
    current: &OauthCredentials,
) -> Result<OauthCredentials, OauthError> {
    let http = oauth_http()?;
    match login {
        OauthProvider::GithubCopilot => {
            let host = match current.extra_str(EXTRA_ENTERPRISE_DOMAIN) {
                Some(domain) => GithubHost::parse(domain)?,
                None => GithubHost::Public,
            };
            copilot::exchange(&http, &copilot_endpoints(oauth, &host), &current.refresh).await
        }
        OauthProvider::OpenaiCodex => codex::refresh(&http, &codex_endpoints(oauth), current).await,
    }
}
