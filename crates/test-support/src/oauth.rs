//! [`FakeAuthServer`]: an authorization server on 127.0.0.1 that speaks GitHub's device flow
//! and Copilot token endpoint and OpenAI's PKCE authorize/token endpoints, with switches for
//! their failures. Every endpoint path carries the host it stands for, so one server serves
//! `github.com` and an enterprise domain: settings point `{domain}` templates at
//! `http://127.0.0.1:<port>/{domain}/…` and `http://127.0.0.1:<port>/api.{domain}/…`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// What the device flow's token endpoint answers, poll after poll (the last one repeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevicePoll {
    /// `authorization_pending`.
    Pending,
    /// `slow_down`, naming an interval one second longer.
    SlowDown,
    /// The GitHub token.
    Granted,
    /// `access_denied`.
    Denied,
    /// `expired_token`.
    Expired,
}

/// The switches of a [`FakeAuthServer`].
#[derive(Debug, Clone)]
pub struct FakeAuthConfig {
    /// Device-flow poll replies, in order.
    pub polls: Vec<DevicePoll>,
    /// The device flow's starting interval (seconds).
    pub interval: u64,
    /// `endpoints.api` of the Copilot token reply.
    pub copilot_api: String,
    /// Lifetime of a Copilot token (seconds); negative gives an already expired one.
    pub copilot_lifetime_secs: i64,
    /// The Copilot token endpoint refuses every GitHub token (401).
    pub copilot_refuses: bool,
    /// The PKCE authorize endpoint redirects with `error=access_denied`.
    pub authorize_denies: bool,
    /// The token endpoint refuses refresh tokens (`invalid_grant`).
    pub refresh_refused: bool,
    /// The ChatGPT account named by the id token.
    pub account_id: String,
}

impl Default for FakeAuthConfig {
    fn default() -> Self {
        Self {
            polls: vec![DevicePoll::Granted],
            interval: 0,
            copilot_api: "http://127.0.0.1:9".into(),
            copilot_lifetime_secs: 1800,
            copilot_refuses: false,
            authorize_denies: false,
            refresh_refused: false,
            account_id: "acct-fake-1".into(),
        }
    }
}

/// What the server saw.
#[derive(Debug, Clone, Default)]
pub struct FakeAuthLog {
    /// `METHOD /path` of every request, in order.
    pub requests: Vec<String>,
    /// When each device-flow poll arrived.
    pub polls: Vec<Instant>,
    /// The intervals announced before each poll (what the client had to wait).
    pub announced_intervals: Vec<u64>,
    /// Copilot tokens issued, in order.
    pub copilot_tokens: Vec<String>,
    /// Codex access tokens issued, in order.
    pub codex_tokens: Vec<String>,
    /// Refresh-token grants served.
    pub refreshes: usize,
    /// Token requests whose `code_verifier` did not match the challenge.
    pub verifier_mismatches: usize,
    /// Editor headers seen on Copilot token requests (`editor-version`).
    pub editor_versions: Vec<String>,
}

struct Inner {
    config: FakeAuthConfig,
    log: FakeAuthLog,
    interval: u64,
    github_tokens: Vec<String>,
    /// code → (challenge, redirect_uri)
    codes: BTreeMap<String, (String, String)>,
    refresh_token: Option<String>,
    serial: usize,
}

type Shared = Arc<Mutex<Inner>>;

/// The fake authorization server; stops when dropped.
pub struct FakeAuthServer {
    addr: SocketAddr,
    state: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl FakeAuthServer {
    /// Binds 127.0.0.1 on a free port and serves `config`.
    ///
    /// # Panics
    /// When the port cannot be bound.
    pub async fn start(config: FakeAuthConfig) -> Self {
        let interval = config.interval;
        let state = Arc::new(Mutex::new(Inner {
            config,
            log: FakeAuthLog::default(),
            interval,
            github_tokens: Vec::new(),
            codes: BTreeMap::new(),
            refresh_token: None,
            serial: 0,
        }));
        let app = Router::new()
            .route("/{domain}/login/device/code", post(device_code))
            .route("/{domain}/login/oauth/access_token", post(access_token))
            .route("/{host}/copilot_internal/v2/token", get(copilot_token))
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1 for the fake authorization server");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, state, task }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `settings.json → auth.oauth` pointing both logins here (`redirect_uri` is the Codex
    /// loopback redirect to use).
    pub fn oauth_settings(&self, redirect_uri: &str) -> Value {
        let base = self.url();
        json!({
            "github-copilot": {
                "deviceCodeUrl": format!("{base}/{{domain}}/login/device/code"),
                "accessTokenUrl": format!("{base}/{{domain}}/login/oauth/access_token"),
                "copilotTokenUrl": format!("{base}/api.{{domain}}/copilot_internal/v2/token"),
            },
            "openai-codex": {
                "authorizeUrl": format!("{base}/oauth/authorize"),
                "tokenUrl": format!("{base}/oauth/token"),
                "redirectUri": redirect_uri,
            }
        })
    }

    /// What the server saw so far.
    pub fn log(&self) -> FakeAuthLog {
        self.state.lock().expect("fake auth state").log.clone()
    }

    /// Changes the switches.
    pub fn configure(&self, change: impl FnOnce(&mut FakeAuthConfig)) {
        change(&mut self.state.lock().expect("fake auth state").config);
    }

    /// Makes `token` a GitHub token this server accepts (a login made earlier).
    pub fn accept_github_token(&self, token: &str) {
        self.state
            .lock()
            .expect("fake auth state")
            .github_tokens
            .push(token.to_string());
    }

    /// Makes `token` the one valid refresh token of the Codex endpoint.
    pub fn accept_refresh_token(&self, token: &str) {
        self.state.lock().expect("fake auth state").refresh_token = Some(token.to_string());
    }
}

impl Drop for FakeAuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn json_reply(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    state.lock().expect("fake auth state")
}

async fn device_code(
    State(state): State<Shared>,
    Path(domain): Path<String>,
    body: String,
) -> Response {
    let form: BTreeMap<String, String> = form(&body);
    let mut inner = lock(&state);
    inner
        .log
        .requests
        .push(format!("POST /{domain}/login/device/code"));
    if form.get("scope").map(String::as_str) != Some("read:user") || !form.contains_key("client_id")
    {
        return json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    }
    json_reply(
        StatusCode::OK,
        json!({
            "device_code": "dev-code-1",
            "user_code": "ABCD-1234",
            "verification_uri": format!("https://{domain}/login/device"),
            "expires_in": 900,
            "interval": inner.interval,
        }),
    )
}

async fn access_token(
    State(state): State<Shared>,
    Path(domain): Path<String>,
    body: String,
) -> Response {
    let form: BTreeMap<String, String> = form(&body);
    let mut inner = lock(&state);
    inner
        .log
        .requests
        .push(format!("POST /{domain}/login/oauth/access_token"));
    if form.get("device_code").map(String::as_str) != Some("dev-code-1")
        || form.get("grant_type").map(String::as_str)
            != Some("urn:ietf:params:oauth:grant-type:device_code")
    {
        return json_reply(StatusCode::OK, json!({"error": "bad_verification_code"}));
    }
    let announced = inner.interval;
    inner.log.announced_intervals.push(announced);
    inner.log.polls.push(Instant::now());
    let index = inner.log.polls.len() - 1;
    let polls = &inner.config.polls;
    let reply = polls
        .get(index)
        .or_else(|| polls.last())
        .copied()
        .unwrap_or(DevicePoll::Granted);
    let error = |code: &str| {
        json_reply(
            StatusCode::OK,
            json!({"error": code, "error_description": format!("fake {code}")}),
        )
    };
    match reply {
        DevicePoll::Pending => error("authorization_pending"),
        DevicePoll::SlowDown => {
            inner.interval += 1;
            json_reply(
                StatusCode::OK,
                json!({"error": "slow_down", "interval": inner.interval}),
            )
        }
        DevicePoll::Denied => error("access_denied"),
        DevicePoll::Expired => error("expired_token"),
        DevicePoll::Granted => {
            inner.serial += 1;
            let token = format!("gho_fake_{}", inner.serial);
            inner.github_tokens.push(token.clone());
            json_reply(
                StatusCode::OK,
                json!({"access_token": token, "token_type": "bearer", "scope": "read:user"}),
            )
        }
    }
}

async fn copilot_token(
    State(state): State<Shared>,
    Path(host): Path<String>,
    headers: HeaderMap,
) -> Response {
    let mut inner = lock(&state);
    inner
        .log
        .requests
        .push(format!("GET /{host}/copilot_internal/v2/token"));
    if let Some(editor) = headers.get("editor-version").and_then(|v| v.to_str().ok()) {
        inner.log.editor_versions.push(editor.to_string());
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("token "))
        .unwrap_or_default()
        .to_string();
    if inner.config.copilot_refuses || !inner.github_tokens.contains(&given) {
        return json_reply(
            StatusCode::UNAUTHORIZED,
            json!({"message": "Bad credentials"}),
        );
    }
    inner.serial += 1;
    let token = format!("tid=copilot-{};exp=x", inner.serial);
    inner.log.copilot_tokens.push(token.clone());
    json_reply(
        StatusCode::OK,
        json!({
            "token": token,
            "expires_at": now_secs() + inner.config.copilot_lifetime_secs,
            "refresh_in": 1500,
            "endpoints": {"api": inner.config.copilot_api},
        }),
    )
}

async fn authorize(
    State(state): State<Shared>,
    Query(query): Query<BTreeMap<String, String>>,
) -> Response {
    let mut inner = lock(&state);
    inner.log.requests.push("GET /oauth/authorize".into());
    let (Some(redirect), Some(state_param), Some(challenge)) = (
        query.get("redirect_uri"),
        query.get("state"),
        query.get("code_challenge"),
    ) else {
        return json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    };
    if query.get("code_challenge_method").map(String::as_str) != Some("S256")
        || query.get("response_type").map(String::as_str) != Some("code")
    {
        return json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    }
    let location = if inner.config.authorize_denies {
        format!(
            "{redirect}?error=access_denied&error_description=denied+by+user&state={state_param}"
        )
    } else {
        inner.serial += 1;
        let code = format!("code-{}", inner.serial);
        inner
            .codes
            .insert(code.clone(), (challenge.clone(), redirect.clone()));
        format!("{redirect}?code={code}&state={state_param}")
    };
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

fn id_token(account: &str) -> String {
    let claims = json!({
        "email": "user@example.com",
        "https://api.openai.com/auth": {"chatgpt_account_id": account, "chatgpt_plan_type": "plus"},
    });
    format!(
        "{}.{}.sig",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

async fn token(State(state): State<Shared>, body: String) -> Response {
    let form: BTreeMap<String, String> = form(&body);
    let mut inner = lock(&state);
    inner.log.requests.push("POST /oauth/token".into());
    let invalid = |detail: &str| {
        json_reply(
            StatusCode::BAD_REQUEST,
            json!({"error": "invalid_grant", "error_description": detail}),
        )
    };
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let code = form.get("code").cloned().unwrap_or_default();
            let Some((challenge, redirect)) = inner.codes.remove(&code) else {
                return invalid("unknown or used code");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != challenge {
                inner.log.verifier_mismatches += 1;
                return invalid("code_verifier does not match the challenge");
            }
            if form.get("redirect_uri") != Some(&redirect) {
                return invalid("redirect_uri differs");
            }
        }
        Some("refresh_token") => {
            inner.log.refreshes += 1;
            if inner.config.refresh_refused
                || inner.refresh_token.as_ref() != form.get("refresh_token")
            {
                return invalid("refresh token revoked");
            }
        }
        _ => return invalid("unsupported grant_type"),
    }
    inner.serial += 1;
    let access = format!("codex-access-{}", inner.serial);
    let refresh = format!("codex-refresh-{}", inner.serial);
    inner.refresh_token = Some(refresh.clone());
    inner.log.codex_tokens.push(access.clone());
    json_reply(
        StatusCode::OK,
        json!({
            "id_token": id_token(&inner.config.account_id),
            "access_token": access,
            "refresh_token": refresh,
            "expires_in": 3600,
            "token_type": "Bearer",
        }),
    )
}

fn form(body: &str) -> BTreeMap<String, String> {
    body.split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&String::from_utf8_lossy(&bytes[i + 1..i + 3]), 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Waits until `check` holds on the log (polling every 20 ms, at most `limit`).
pub async fn wait_for_log(
    server: &FakeAuthServer,
    limit: Duration,
    check: impl Fn(&FakeAuthLog) -> bool,
) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check(&server.log()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}
