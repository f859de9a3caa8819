//! ChatGPT Plus/Pro through the Codex login: the authorization code with PKCE (S256), the
//! redirect received on a loopback server (or pasted by the user), the token exchange, and
//! the refresh (`grant_type=refresh_token`).

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use braincode_protocol::{EXTRA_ACCOUNT_ID, OauthCredentials};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::loopback::{self, Callback};
use super::{LoginEvent, LoginEvents, OauthError, Pkce, emit, now_ms, random_state, send_json};

/// The OAuth client id of the Codex CLI.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// Default authorization endpoint.
pub const AUTHORIZE_URL: &str = "https://auth.openai.com/oauth/authorize";
/// Default token endpoint.
pub const TOKEN_URL: &str = "https://auth.openai.com/oauth/token";
/// Default redirect URI (a loopback server on port 1455).
pub const REDIRECT_URI: &str = "http://localhost:1455/auth/callback";
/// Scopes of the login (`offline_access` gives the refresh token).
pub const SCOPE: &str = "openid profile email offline_access";
/// Where the Responses API of ChatGPT subscriptions lives.
pub const CODEX_API_BASE: &str = "https://chatgpt.com/backend-api/codex";
/// The claim of the id token that holds the ChatGPT account.
const AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// Where the login talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexEndpoints {
    /// OAuth client id.
    pub client_id: String,
    /// Authorization endpoint.
    pub authorize_url: String,
    /// Token endpoint.
    pub token_url: String,
    /// Loopback redirect URI.
    pub redirect_uri: String,
}

/// Values that override the defaults (`settings.json → auth.oauth.openai-codex`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodexOverrides {
    /// OAuth client id.
    pub client_id: Option<String>,
    /// Authorization endpoint.
    pub authorize_url: Option<String>,
    /// Token endpoint.
    pub token_url: Option<String>,
    /// Loopback redirect URI.
    pub redirect_uri: Option<String>,
}

impl CodexEndpoints {
    /// The defaults with `overrides` applied.
    pub fn new(overrides: &CodexOverrides) -> Self {
        let pick = |value: &Option<String>, default: &str| {
            value.clone().unwrap_or_else(|| default.to_string())
        };
        Self {
            client_id: pick(&overrides.client_id, CLIENT_ID),
            authorize_url: pick(&overrides.authorize_url, AUTHORIZE_URL),
            token_url: pick(&overrides.token_url, TOKEN_URL),
            redirect_uri: pick(&overrides.redirect_uri, REDIRECT_URI),
        }
    }
}

/// Headers of the Codex Responses endpoint (besides the bearer token and the account id).
pub fn api_headers() -> Vec<(String, String)> {
    vec![
        ("openai-beta".into(), "responses=experimental".into()),
        ("originator".into(), "codex_cli_rs".into()),
    ]
}

/// The authorization URL of one login.
pub fn authorize_url(
    endpoints: &CodexEndpoints,
    pkce: &Pkce,
    state: &str,
) -> Result<String, OauthError> {
    let mut url = url::Url::parse(&endpoints.authorize_url).map_err(|err| {
        OauthError::Config(format!(
            "authorize URL {:?} is invalid: {err}",
            endpoints.authorize_url
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &endpoints.client_id)
        .append_pair("redirect_uri", &endpoints.redirect_uri)
        .append_pair("scope", SCOPE)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("id_token_add_organizations", "true")
        .append_pair("codex_cli_simplified_flow", "true")
        .append_pair("state", state)
        .append_pair("originator", "codex_cli_rs");
    Ok(url.to_string())
}

/// Where the code may come from besides the loopback server.
pub struct ManualCodes<'a> {
    /// Pasted redirect URLs or codes, one per message.
    pub pasted: &'a mut mpsc::UnboundedReceiver<String>,
}

/// The whole login: the URL to open, the redirect (or a pasted one), the token exchange.
/// Gives up after `timeout`.
pub async fn login(
    http: &reqwest::Client,
    endpoints: &CodexEndpoints,
    events: &LoginEvents,
    manual: ManualCodes<'_>,
    cancel: &CancellationToken,
    timeout: Duration,
) -> Result<OauthCredentials, OauthError> {
    let redirect = url::Url::parse(&endpoints.redirect_uri).map_err(|err| {
        OauthError::Config(format!(
            "redirect URI {:?} is invalid: {err}",
            endpoints.redirect_uri
        ))
    })?;
    let port = redirect.port_or_known_default().unwrap_or(80);
    let pkce = Pkce::generate();
    let state = random_state();
    let url = authorize_url(endpoints, &pkce, &state)?;
    let listener = match loopback::bind(port).await {
        Ok(listener) => Some(listener),
        Err(err) => {
            emit(
                events,
                LoginEvent::Progress(format!(
                    "cannot listen on 127.0.0.1:{port} for the browser's redirect ({err}; another login running?): after authorizing, paste the whole redirect URL from the browser's address bar"
                )),
            );
            None
        }
    };
    emit(events, LoginEvent::AuthUrl { url });
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut pasted_open = true;
    let code = loop {
        tokio::select! {
            () = cancel.cancelled() => return Err(OauthError::Cancelled),
            () = &mut deadline => return Err(OauthError::Timeout { seconds: timeout.as_secs() }),
            accepted = accept(listener.as_ref()) => {
                let Some(mut stream) = accepted else { continue };
                let Some(callback) = loopback::read_callback(&mut stream, redirect.path()).await else {
                    continue;
                };
                match check_callback(&callback, &state) {
                    Ok(code) => {
                        loopback::respond(&mut stream, 200, "Login complete", "Braincode received the authorization; you can close this tab.").await;
                        break code;
                    }
                    Err(err) => {
                        loopback::respond(&mut stream, 400, "Login failed", &err.to_string()).await;
                        return Err(err);
                    }
                }
            }
            input = manual.pasted.recv(), if pasted_open => {
                let Some(input) = input else {
                    pasted_open = false;
                    continue;
                };
                if input.trim().is_empty() {
                    continue;
                }
                break check_pasted(&input, &state)?;
            }
        }
    };
    emit(
        events,
        LoginEvent::Progress("authorized; exchanging the code for tokens".into()),
    );
    let form = [
        ("grant_type", "authorization_code"),
        ("client_id", endpoints.client_id.as_str()),
        ("code", code.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("redirect_uri", endpoints.redirect_uri.as_str()),
    ];
    let tokens = tokio::select! {
        () = cancel.cancelled() => return Err(OauthError::Cancelled),
        tokens = token_request(http, &endpoints.token_url, &form) => tokens?,
    };
    credentials(tokens, None, &endpoints.token_url)
}

async fn accept(listener: Option<&tokio::net::TcpListener>) -> Option<tokio::net::TcpStream> {
    match listener {
        Some(listener) => listener.accept().await.ok().map(|(stream, _)| stream),
        None => std::future::pending().await,
    }
}

fn check_callback(callback: &Callback, state: &str) -> Result<String, OauthError> {
    if callback.state.as_deref() != Some(state) {
        return Err(OauthError::StateMismatch);
    }
    if let Some(error) = &callback.error {
        let detail = callback.error_description.clone().unwrap_or_default();
        return Err(if error == "access_denied" {
            OauthError::Denied { detail }
        } else {
            OauthError::Denied {
                detail: format!("{error}: {detail}")
                    .trim_end_matches([' ', ':'])
                    .to_string(),
            }
        });
    }
    callback
        .code
        .clone()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| OauthError::NoCode {
            input: "the redirect".into(),
        })
}

/// A pasted redirect URL (its state must match), `code#state`, or a bare code.
fn check_pasted(input: &str, state: &str) -> Result<String, OauthError> {
    let input = input.trim();
    if let Ok(url) = url::Url::parse(input)
        && url.has_host()
    {
        let callback = Callback::from_query(&url);
        if callback.error.is_some() || callback.state.is_some() {
            return check_callback(&callback, state);
        }
        return callback
            .code
            .filter(|c| !c.is_empty())
            .ok_or_else(|| OauthError::NoCode {
                input: braincode_protocol::clip_chars(input, 80),
            });
    }
    if let Some((code, pasted_state)) = input.split_once('#') {
        if pasted_state != state {
            return Err(OauthError::StateMismatch);
        }
        return Ok(code.to_string());
    }
    if input.contains(char::is_whitespace) || input.contains(['?', '&', '=']) {
        return Err(OauthError::NoCode {
            input: braincode_protocol::clip_chars(input, 80),
        });
    }
    Ok(input.to_string())
}

#[derive(Deserialize)]
struct TokenReply {
    access_token: Option<String>,
    refresh_token: Option<String>,
    id_token: Option<String>,
    expires_in: Option<i64>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn token_request(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
) -> Result<TokenReply, OauthError> {
    let (status, reply) = send_json::<TokenReply>(
        http.post(url)
            .header("accept", "application/json")
            .form(form),
        url,
    )
    .await?;
    if let Some(error) = &reply.error {
        let detail = reply.error_description.clone().unwrap_or_default();
        return Err(match error.as_str() {
            "access_denied" => OauthError::Denied { detail },
            "expired_token" => OauthError::Expired,
            _ => OauthError::Http {
                url: url.to_string(),
                status: status.as_u16(),
                detail: format!("{error} {detail}").trim().to_string(),
            },
        });
    }
    if !status.is_success() {
        return Err(OauthError::Http {
            url: url.to_string(),
            status: status.as_u16(),
            detail: "the token request was refused".into(),
        });
    }
    Ok(reply)
}

/// Asks for a new access token with the refresh token; the account id is kept when the
/// reply does not name one.
pub async fn refresh(
    http: &reqwest::Client,
    endpoints: &CodexEndpoints,
    current: &OauthCredentials,
) -> Result<OauthCredentials, OauthError> {
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", endpoints.client_id.as_str()),
        ("refresh_token", current.refresh.as_str()),
        ("scope", "openid profile email"),
    ];
    let tokens = token_request(http, &endpoints.token_url, &form).await?;
    credentials(tokens, Some(current), &endpoints.token_url)
}

fn credentials(
    tokens: TokenReply,
    previous: Option<&OauthCredentials>,
    url: &str,
) -> Result<OauthCredentials, OauthError> {
    let bad = |detail: &str| OauthError::BadReply {
        url: url.to_string(),
        detail: detail.to_string(),
    };
    let access = tokens
        .access_token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| bad("no access_token"))?;
    let refresh = tokens
        .refresh_token
        .filter(|t| !t.is_empty())
        .or_else(|| previous.map(|p| p.refresh.clone()))
        .ok_or_else(|| bad("no refresh_token (was offline_access granted?)"))?;
    let expires_in = tokens
        .expires_in
        .filter(|s| *s > 0)
        .ok_or_else(|| bad("no expires_in"))?;
    let account = tokens
        .id_token
        .as_deref()
        .and_then(account_id)
        .or_else(|| account_id(&access))
        .or_else(|| {
            previous
                .and_then(|p| p.extra_str(EXTRA_ACCOUNT_ID))
                .map(str::to_string)
        })
        .ok_or_else(|| bad("the id token names no ChatGPT account (chatgpt_account_id)"))?;
    let mut extra = previous.map(|p| p.extra.clone()).unwrap_or_default();
    extra.insert(EXTRA_ACCOUNT_ID.to_string(), Value::String(account));
    Ok(OauthCredentials {
        refresh,
        access,
        expires: now_ms().saturating_add(expires_in.saturating_mul(1000)),
        extra,
    })
}

/// `chatgpt_account_id` of a JWT's `https://api.openai.com/auth` claim (the signature is
/// not checked: the token came straight from the token endpoint over TLS).
pub fn account_id(jwt: &str) -> Option<String> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: BTreeMap<String, Value> = serde_json::from_slice(&bytes).ok()?;
    claims
        .get(AUTH_CLAIM)?
        .get("chatgpt_account_id")?
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_inputs() {
        let state = "st";
        assert_eq!(
            check_pasted(
                "http://localhost:1455/auth/callback?code=abc&state=st",
                state
            )
            .unwrap(),
            "abc"
        );
        assert_eq!(
            check_pasted(
                "http://localhost:1455/auth/callback?code=abc&state=zz",
                state
            ),
            Err(OauthError::StateMismatch)
        );
        assert_eq!(check_pasted("abc#st", state).unwrap(), "abc");
        assert_eq!(check_pasted(" abc \n", state).unwrap(), "abc");
        assert!(matches!(
            check_pasted("a b", state),
            Err(OauthError::NoCode { .. })
        ));
        assert!(matches!(
            check_pasted(
                "http://localhost:1455/auth/callback?error=access_denied&state=st",
                state
            ),
            Err(OauthError::Denied { .. })
        ));
    }

    #[test]
    fn account_from_claims() {
        let claims = serde_json::json!({AUTH_CLAIM: {"chatgpt_account_id": "acct-1"}});
        let jwt = format!("e30.{}.sig", URL_SAFE_NO_PAD.encode(claims.to_string()));
        assert_eq!(account_id(&jwt).as_deref(), Some("acct-1"));
        assert_eq!(account_id("not-a-jwt"), None);
    }
}
