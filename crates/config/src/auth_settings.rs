//! `settings.json → auth.oauth.<provider>`: where a subscription login talks to its provider.
//! Every field is optional (the provider's public endpoint is the default); tests and
//! self-hosted gateways point them at another server.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ConfigError;
use crate::json_io::{self, FieldPath};

/// `settings.json → auth`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AuthSettings {
    /// Endpoint overrides of the subscription logins.
    #[serde(skip_serializing_if = "OauthSettings::is_empty")]
    pub oauth: OauthSettings,
}

/// `settings.json → auth.oauth`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OauthSettings {
    /// GitHub Copilot.
    #[serde(
        rename = "github-copilot",
        skip_serializing_if = "CopilotOauthSettings::is_empty"
    )]
    pub github_copilot: CopilotOauthSettings,
    /// ChatGPT Plus/Pro (Codex).
    #[serde(
        rename = "openai-codex",
        skip_serializing_if = "CodexOauthSettings::is_empty"
    )]
    pub openai_codex: CodexOauthSettings,
}

/// `settings.json → auth.oauth.github-copilot`. A URL may contain `{domain}`: it becomes
/// `github.com`, or the GitHub Enterprise domain of the login.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CopilotOauthSettings {
    /// OAuth client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Device-code endpoint (default `https://{domain}/login/device/code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_code_url: Option<String>,
    /// Token endpoint (default `https://{domain}/login/oauth/access_token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_token_url: Option<String>,
    /// Copilot token endpoint (default `https://api.{domain}/copilot_internal/v2/token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copilot_token_url: Option<String>,
}

/// `settings.json → auth.oauth.openai-codex`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CodexOauthSettings {
    /// OAuth client id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Authorization endpoint (default `https://auth.openai.com/oauth/authorize`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorize_url: Option<String>,
    /// Token endpoint (default `https://auth.openai.com/oauth/token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Loopback redirect URI (default `http://localhost:1455/auth/callback`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

impl OauthSettings {
    fn is_empty(&self) -> bool {
        self.github_copilot.is_empty() && self.openai_codex.is_empty()
    }
}

impl CopilotOauthSettings {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl CodexOauthSettings {
    fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl AuthSettings {
    /// Whether nothing is set (the file then has no `auth` key).
    pub fn is_empty(&self) -> bool {
        self.oauth.is_empty()
    }

    /// Every URL must be `http(s)://host…`; a client id must not be blank.
    pub(crate) fn validate(&self, path: &Path, text: Option<&str>) -> Result<(), ConfigError> {
        let copilot = &self.oauth.github_copilot;
        let codex = &self.oauth.openai_codex;
        let urls = [
            ("github-copilot", "deviceCodeUrl", &copilot.device_code_url),
            (
                "github-copilot",
                "accessTokenUrl",
                &copilot.access_token_url,
            ),
            (
                "github-copilot",
                "copilotTokenUrl",
                &copilot.copilot_token_url,
            ),
            ("openai-codex", "authorizeUrl", &codex.authorize_url),
            ("openai-codex", "tokenUrl", &codex.token_url),
            ("openai-codex", "redirectUri", &codex.redirect_uri),
        ];
        let field = |provider: &str, name: &str| {
            FieldPath::root()
                .key("auth")
                .key("oauth")
                .key(provider)
                .key(name)
        };
        for (provider, name, value) in urls {
            if let Some(url) = value
                && !is_http_url(url)
            {
                return Err(json_io::invalid_field(
                    path,
                    text,
                    &field(provider, name),
                    format!("{url:?} is not an http(s) URL"),
                    "use a URL such as https://host/path, or remove the field for the provider's own endpoint",
                ));
            }
        }
        for (provider, value) in [
            ("github-copilot", &copilot.client_id),
            ("openai-codex", &codex.client_id),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(json_io::invalid_field(
                    path,
                    text,
                    &field(provider, "clientId"),
                    "empty client id",
                    "remove the field to use the provider's own client id",
                ));
            }
        }
        Ok(())
    }
}

fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        !host.is_empty() && !rest.chars().any(char::is_whitespace)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        assert!(is_http_url("https://github.com/login/device/code"));
        assert!(is_http_url("http://127.0.0.1:9/{domain}/x"));
        assert!(!is_http_url("ftp://x"));
        assert!(!is_http_url("https:///x"));
        assert!(!is_http_url("https://a b"));
    }
}
