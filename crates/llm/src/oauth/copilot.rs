//! GitHub Copilot: the device-code login (RFC 8628 on github.com or a GitHub Enterprise
//! domain), then the exchange of the GitHub token for a short-lived Copilot token. A refresh
//! is the same exchange again.

use std::collections::BTreeMap;
use std::time::Duration;

use braincode_protocol::{EXTRA_API_BASE_URL, EXTRA_ENTERPRISE_DOMAIN, OauthCredentials};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{LoginEvent, LoginEvents, OauthError, emit, parse_json, send_json, send_raw};

/// The OAuth client id of the Copilot editor integrations.
pub const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
/// Default device-code endpoint; `{domain}` is `github.com` or the enterprise domain.
pub const DEVICE_CODE_URL: &str = "https://{domain}/login/device/code";
/// Default token endpoint.
pub const ACCESS_TOKEN_URL: &str = "https://{domain}/login/oauth/access_token";
/// Default Copilot token endpoint.
pub const COPILOT_TOKEN_URL: &str = "https://api.{domain}/copilot_internal/v2/token";
/// The API base of github.com accounts when the token reply names none.
pub const COPILOT_API_BASE: &str = "https://api.githubcopilot.com";
/// The Copilot API asks which editor calls it.
const EDITOR_VERSION: &str = "vscode/1.99.3";
const EDITOR_PLUGIN_VERSION: &str = "copilot-chat/0.26.7";
const USER_AGENT: &str = "GitHubCopilotChat/0.26.7";
const INTEGRATION_ID: &str = "vscode-chat";

/// Where the login talks to (the defaults, or `settings.json → auth.oauth.github-copilot`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotEndpoints {
    /// OAuth client id.
    pub client_id: String,
    /// Device-code endpoint.
    pub device_code_url: String,
    /// Token endpoint.
    pub access_token_url: String,
    /// Copilot token endpoint.
    pub copilot_token_url: String,
    /// The GitHub Enterprise domain, when not github.com.
    pub enterprise_domain: Option<String>,
}

/// Endpoint templates (with `{domain}`) that override the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopilotOverrides {
    /// OAuth client id.
    pub client_id: Option<String>,
    /// Device-code endpoint template.
    pub device_code_url: Option<String>,
    /// Token endpoint template.
    pub access_token_url: Option<String>,
    /// Copilot token endpoint template.
    pub copilot_token_url: Option<String>,
}

/// Which GitHub a login is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GithubHost {
    /// github.com.
    Public,
    /// A GitHub Enterprise domain (`company.ghe.com`).
    Enterprise(String),
}

impl GithubHost {
    /// `Enterprise` for a non-empty domain (a pasted `https://…/` is reduced to the host),
    /// `Public` otherwise. A domain with a space or a path is refused.
    pub fn parse(domain: &str) -> Result<GithubHost, OauthError> {
        let trimmed = domain.trim();
        let host = trimmed
            .strip_prefix("https://")
            .or_else(|| trimmed.strip_prefix("http://"))
            .unwrap_or(trimmed)
            .trim_end_matches('/');
        if host.is_empty() || host == "github.com" {
            return Ok(GithubHost::Public);
        }
        if host.contains(['/', '?', '#', '@']) || host.chars().any(char::is_whitespace) {
            return Err(OauthError::Config(format!(
                "{domain:?} is not a GitHub Enterprise domain; give its host name, e.g. company.ghe.com"
            )));
        }
        Ok(GithubHost::Enterprise(host.to_ascii_lowercase()))
    }
}

impl CopilotEndpoints {
    /// The endpoints for `host`, with `overrides` replacing the default templates.
    pub fn new(overrides: &CopilotOverrides, host: &GithubHost) -> Self {
        let (domain, enterprise_domain) = match host {
            GithubHost::Public => ("github.com".to_string(), None),
            GithubHost::Enterprise(domain) => (domain.clone(), Some(domain.clone())),
        };
        let fill = |value: &Option<String>, default: &str| {
            value
                .as_deref()
                .unwrap_or(default)
                .replace("{domain}", &domain)
        };
        Self {
            client_id: overrides
                .client_id
                .clone()
                .unwrap_or_else(|| CLIENT_ID.to_string()),
            device_code_url: fill(&overrides.device_code_url, DEVICE_CODE_URL),
            access_token_url: fill(&overrides.access_token_url, ACCESS_TOKEN_URL),
            copilot_token_url: fill(&overrides.copilot_token_url, COPILOT_TOKEN_URL),
            enterprise_domain,
        }
    }
}

/// The API base when the token reply names none: github.com's, or the enterprise one.
pub fn default_api_base(enterprise_domain: Option<&str>) -> String {
    match enterprise_domain {
        Some(domain) => format!("https://copilot-api.{domain}"),
        None => COPILOT_API_BASE.to_string(),
    }
}

/// The headers the Copilot API needs on every request.
pub fn api_headers() -> Vec<(String, String)> {
    vec![
        ("editor-version".into(), EDITOR_VERSION.into()),
        ("editor-plugin-version".into(), EDITOR_PLUGIN_VERSION.into()),
        ("copilot-integration-id".into(), INTEGRATION_ID.into()),
        ("user-agent".into(), USER_AGENT.into()),
        ("openai-intent".into(), "conversation-panel".into()),
    ]
}

#[derive(Deserialize)]
struct DeviceCodeReply {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default = "default_interval")]
    interval: u64,
    #[serde(default = "default_expires_in")]
    expires_in: u64,
}

fn default_interval() -> u64 {
    5
}

fn default_expires_in() -> u64 {
    900
}

#[derive(Deserialize)]
struct AccessTokenReply {
    access_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
    interval: Option<u64>,
}

#[derive(Deserialize)]
struct CopilotTokenReply {
    token: String,
    expires_at: i64,
    #[serde(default)]
    endpoints: BTreeMap<String, Value>,
}

/// The whole login: device code, the user's approval, the Copilot token.
pub async fn login(
    http: &reqwest::Client,
    endpoints: &CopilotEndpoints,
    events: &LoginEvents,
    cancel: &CancellationToken,
) -> Result<OauthCredentials, OauthError> {
    let url = &endpoints.device_code_url;
    let (status, device) = send_json::<DeviceCodeReply>(
        http.post(url).header("accept", "application/json").form(&[
            ("client_id", endpoints.client_id.as_str()),
            ("scope", "read:user"),
        ]),
        url,
    )
    .await?;
    if !status.is_success() {
        return Err(OauthError::Http {
            url: url.clone(),
            status: status.as_u16(),
            detail: "the device code was refused".into(),
        });
    }
    emit(
        events,
        LoginEvent::DeviceCode {
            user_code: device.user_code.clone(),
            verification_uri: device.verification_uri.clone(),
        },
    );
    let github_token = poll_for_token(http, endpoints, &device, events, cancel).await?;
    emit(
        events,
        LoginEvent::Progress("GitHub authorized this device; fetching the Copilot token".into()),
    );
    let credentials = exchange(http, endpoints, &github_token).await?;
    Ok(credentials)
}

async fn poll_for_token(
    http: &reqwest::Client,
    endpoints: &CopilotEndpoints,
    device: &DeviceCodeReply,
    events: &LoginEvents,
    cancel: &CancellationToken,
) -> Result<String, OauthError> {
    let url = &endpoints.access_token_url;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(device.expires_in);
    let mut interval = device.interval;
    loop {
        tokio::select! {
            () = cancel.cancelled() => return Err(OauthError::Cancelled),
            () = tokio::time::sleep(Duration::from_secs(interval)) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(OauthError::Expired);
        }
        let request = http.post(url).header("accept", "application/json").form(&[
            ("client_id", endpoints.client_id.as_str()),
            ("device_code", device.device_code.as_str()),
            ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
        ]);
        let (status, reply) = tokio::select! {
            () = cancel.cancelled() => return Err(OauthError::Cancelled),
            reply = send_json::<AccessTokenReply>(request, url) => reply?,
        };
        if let Some(token) = reply.access_token.filter(|t| !t.is_empty()) {
            return Ok(token);
        }
        let detail = reply.error_description.unwrap_or_default();
        match reply.error.as_deref() {
            Some("authorization_pending") => {
                emit(
                    events,
                    LoginEvent::Progress("waiting for the code to be entered".into()),
                );
            }
            Some("slow_down") => {
                // RFC 8628 §3.5: the reply may name the new interval; otherwise add 5 s.
                interval = reply.interval.unwrap_or(interval + 5).max(interval + 1);
                emit(
                    events,
                    LoginEvent::Progress(format!(
                        "the server asked to poll slower: every {interval} s"
                    )),
                );
            }
            Some("expired_token") => return Err(OauthError::Expired),
            Some("access_denied") => return Err(OauthError::Denied { detail }),
            Some(other) => {
                return Err(OauthError::BadReply {
                    url: url.clone(),
                    detail: format!("error {other:?} {detail}").trim().to_string(),
                });
            }
            None => {
                return Err(OauthError::BadReply {
                    url: url.clone(),
                    detail: format!("HTTP {status} with neither access_token nor error"),
                });
            }
        }
    }
}

/// Exchanges a GitHub token for a Copilot token: the login's last step and the refresh.
pub async fn exchange(
    http: &reqwest::Client,
    endpoints: &CopilotEndpoints,
    github_token: &str,
) -> Result<OauthCredentials, OauthError> {
    let url = &endpoints.copilot_token_url;
    let request = http
        .get(url)
        .header("authorization", format!("token {github_token}"))
        .header("accept", "application/json")
        .headers(header_map());
    let (status, bytes) = send_raw(request, url).await?;
    if status == reqwest::StatusCode::UNAUTHORIZED
        || status == reqwest::StatusCode::FORBIDDEN
        || status == reqwest::StatusCode::NOT_FOUND
    {
        return Err(OauthError::Http {
            url: url.clone(),
            status: status.as_u16(),
            detail:
                "the GitHub token was refused (revoked, or the account has no Copilot subscription)"
                    .into(),
        });
    }
    let reply: CopilotTokenReply = parse_json(status, &bytes, url).map_err(|err| match err {
        OauthError::BadReply { url, detail } => OauthError::BadReply {
            url,
            detail: format!("{detail} (expected {{token, expires_at, endpoints}})"),
        },
        other => other,
    })?;
    if !status.is_success() {
        return Err(OauthError::Http {
            url: url.clone(),
            status: status.as_u16(),
            detail: "the Copilot token was refused".into(),
        });
    }
    if reply.token.trim().is_empty() || reply.expires_at <= 0 {
        return Err(OauthError::BadReply {
            url: url.clone(),
            detail: "empty token or no expires_at".into(),
        });
    }
    let mut extra = BTreeMap::new();
    if let Some(api) = reply.endpoints.get("api").and_then(Value::as_str) {
        extra.insert(
            EXTRA_API_BASE_URL.to_string(),
            Value::String(api.to_string()),
        );
    }
    if let Some(domain) = &endpoints.enterprise_domain {
        extra.insert(
            EXTRA_ENTERPRISE_DOMAIN.to_string(),
            Value::String(domain.clone()),
        );
    }
    Ok(OauthCredentials {
        refresh: github_token.to_string(),
        access: reply.token,
        expires: reply.expires_at.saturating_mul(1000),
        extra,
    })
}

fn header_map() -> reqwest::header::HeaderMap {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in api_headers() {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_bytes()),
            reqwest::header::HeaderValue::from_str(&value),
        ) {
            map.insert(name, value);
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enterprise_domains_fill_the_templates() {
        assert_eq!(GithubHost::parse(" ").unwrap(), GithubHost::Public);
        assert_eq!(GithubHost::parse("github.com").unwrap(), GithubHost::Public);
        let host = GithubHost::parse("https://Company.GHE.com/").unwrap();
        assert_eq!(host, GithubHost::Enterprise("company.ghe.com".into()));
        assert!(GithubHost::parse("company.ghe.com/login").is_err());
        assert!(GithubHost::parse("a b").is_err());
        let endpoints = CopilotEndpoints::new(&CopilotOverrides::default(), &host);
        assert_eq!(
            endpoints.device_code_url,
            "https://company.ghe.com/login/device/code"
        );
        assert_eq!(
            endpoints.copilot_token_url,
            "https://api.company.ghe.com/copilot_internal/v2/token"
        );
        let public = CopilotEndpoints::new(&CopilotOverrides::default(), &GithubHost::Public);
        assert_eq!(
            public.access_token_url,
            "https://github.com/login/oauth/access_token"
        );
        assert_eq!(public.client_id, CLIENT_ID);
        assert_eq!(
            default_api_base(Some("company.ghe.com")),
            "https://copilot-api.company.ghe.com"
        );
        assert_eq!(default_api_base(None), COPILOT_API_BASE);
    }
}
