//! Subscription logins (OAuth): which providers offer one, and the credentials a login leaves
//! in `auth.json` (`{oauth: {providerId, credentials: {refresh, access, expires, …}}}`).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A provider whose subscription can be used through an OAuth login.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OauthProvider {
    /// GitHub Copilot (device-code login on github.com or a GitHub Enterprise domain).
    GithubCopilot,
    /// ChatGPT Plus/Pro through the Codex login (authorization code with PKCE).
    OpenaiCodex,
}

impl OauthProvider {
    /// Every provider, in the order they are offered.
    pub const ALL: [OauthProvider; 2] = [OauthProvider::GithubCopilot, OauthProvider::OpenaiCodex];

    /// The id: also the provider name in models.json and auth.json.
    pub const fn id(self) -> &'static str {
        match self {
            OauthProvider::GithubCopilot => "github-copilot",
            OauthProvider::OpenaiCodex => "openai-codex",
        }
    }

    /// The name shown to users.
    pub const fn display_name(self) -> &'static str {
        match self {
            OauthProvider::GithubCopilot => "GitHub Copilot",
            OauthProvider::OpenaiCodex => "ChatGPT Plus/Pro (Codex)",
        }
    }

    /// Whether the login waits for a browser redirect on a loopback server (then a pasted
    /// redirect URL or code is accepted too).
    pub const fn uses_callback_server(self) -> bool {
        match self {
            OauthProvider::GithubCopilot => false,
            OauthProvider::OpenaiCodex => true,
        }
    }

    /// The provider of `id`, if it offers a login.
    pub fn from_id(id: &str) -> Option<OauthProvider> {
        OauthProvider::ALL.into_iter().find(|p| p.id() == id.trim())
    }
}

impl fmt::Display for OauthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// The tokens of a login. `Debug` never prints a token.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OauthCredentials {
    /// The long-lived token that gets a new access token (Copilot: the GitHub token).
    pub refresh: String,
    /// The token sent with requests.
    pub access: String,
    /// When `access` expires, in milliseconds since the Unix epoch.
    pub expires: i64,
    /// Provider details kept beside the tokens (`enterpriseUrl`, `apiBaseUrl`, `accountId`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl OauthCredentials {
    /// A string detail from [`OauthCredentials::extra`].
    pub fn extra_str(&self, name: &str) -> Option<&str> {
        self.extra
            .get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    }
}

impl fmt::Debug for OauthCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OauthCredentials")
            .field("expires", &self.expires)
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Extra field of a Copilot login: the GitHub Enterprise domain (absent for github.com).
pub const EXTRA_ENTERPRISE_DOMAIN: &str = "enterpriseUrl";
/// Extra field of a Copilot login: the API base URL from the token reply (`endpoints.api`).
pub const EXTRA_API_BASE_URL: &str = "apiBaseUrl";
/// Extra field of a Codex login: the ChatGPT account id from the id token.
pub const EXTRA_ACCOUNT_ID: &str = "accountId";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_debug_hides_tokens() {
        for provider in OauthProvider::ALL {
            assert_eq!(OauthProvider::from_id(provider.id()), Some(provider));
        }
        assert_eq!(OauthProvider::from_id("anthropic"), None);
        let creds: OauthCredentials = serde_json::from_value(serde_json::json!({
            "refresh": "gho_secret", "access": "tok_secret", "expires": 5, "accountId": "acc"
        }))
        .unwrap();
        assert_eq!(creds.extra_str(EXTRA_ACCOUNT_ID), Some("acc"));
        let shown = format!("{creds:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
