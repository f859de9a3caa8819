//! [`ScriptedServer`]: a real HTTP server on 127.0.0.1 answering from a [`Script`] in the
//! wire format of each request (OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages, Google Gemini), or with a [`crate::RawReply`]'s bytes as they are.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::render::render;
use crate::script::{Reply, ReplyEnd, Script, ScriptState, no_match_message};
use crate::summary::{RequestSummary, Wire, content_text};

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// URL path (`/v1/chat/completions`).
    pub path: String,
    /// The query string, without `?` (empty when there is none).
    pub query: String,
    /// Headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
    /// Bytes of the body as sent.
    pub body_len: usize,
    /// When it arrived.
    pub received_at: Instant,
}

impl RecordedRequest {
    /// A header value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
    /// The requested model.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }
    /// The messages.
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    /// The system prompt (system/developer messages joined).
    pub fn system_prompt(&self) -> String {
        self.summary().system
    }
    /// The last user message's text.
    pub fn last_user_text(&self) -> String {
        self.summary().last_user
    }
    /// Every message's text (and tool-call arguments), joined with newlines.
    pub fn all_text(&self) -> String {
        self.summary().all_text
    }
    /// The names of the tools offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.summary().tools
    }
    /// The text of every Chat Completions message with `role`.
    pub fn texts_of(&self, role: &str) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .map(|m| content_text(m.get("content")))
            .collect()
    }
    /// The wire of this request (`None`: not a model request).
    pub fn wire(&self) -> Option<Wire> {
        Wire::of_path(&self.path)
    }
    /// What the matchers saw.
    pub fn summary(&self) -> RequestSummary {
        RequestSummary::from_wire(self.wire().unwrap_or(Wire::Chat), &self.path, &self.body)
    }
}

/// What happened to one streamed response body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Chunks the client accepted.
    pub sent: usize,
    /// Chunks the response had.
    pub total: usize,
    /// The client went away before the body was finished.
    pub client_gone: bool,
}

struct State {
    script: Mutex<ScriptState>,
    requests: Mutex<Vec<RecordedRequest>>,
    outcomes: Mutex<Vec<Outcome>>,
    models: Vec<String>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The scripted HTTP model server; it stops when dropped.
///
/// `POST` to a model endpoint of any wire answers from the script (a request no rule
/// matches gets HTTP 500 "no scripted reply matches this request: …"); `GET …/models` lists
/// the model names the script's rules mention (plus `scripted`), `GET /api/tags` the same
/// as Ollama does; anything else is a 404.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a random port and starts serving `script`.
    pub async fn bind(script: Script) -> std::io::Result<Self> {
        Self::start_at("127.0.0.1:0", script).await
    }

    /// [`ScriptedServer::bind`] on a given address (`127.0.0.1:11434`, where Ollama
    /// listens); `Err` when it cannot be bound (taken).
    pub async fn start_at(addr: &str, script: Script) -> std::io::Result<Self> {
        let mut models = vec!["scripted".to_string()];
        for rule in &script.rules {
            rule.matcher.model_names(&mut models);
        }
        let state = Arc::new(State {
            script: Mutex::new(ScriptState::new(script)),
            requests: Mutex::new(Vec::new()),
            outcomes: Mutex::new(Vec::new()),
            models,
        });
        let shared = Arc::clone(&state);
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = Arc::clone(&shared);
                async move { handle(state, method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, state, task })
    }

    /// `http://127.0.0.1:<port>/v1` — the `baseUrl` to put in models.json.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// The model requests only, of any wire (not `/models` lookups).
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.wire().is_some())
            .collect()
    }

    /// Forgets the requests received so far.
    pub fn clear_requests(&self) {
        lock(&self.state.requests).clear();
    }

    /// How many replies the rule named `name` (or `rule <index>`, or its matcher's name)
    /// served.
    pub fn hits(&self, name: &str) -> usize {
        lock(&self.state.script).hits(name)
    }

    /// How many replies the rule at `index` served.
    pub fn hits_by_index(&self, index: usize) -> usize {
        lock(&self.state.script).hits_by_index(index)
    }

    /// How many model requests no rule answered.
    pub fn unmatched(&self) -> usize {
        lock(&self.state.script).unmatched()
    }

    /// What happened to each streamed body so far, in the order the bodies ended.
    pub fn outcomes(&self) -> Vec<Outcome> {
        lock(&self.state.outcomes).clone()
    }

    /// Waits (up to 20 s) until `count` bodies have ended, and returns their outcomes.
    pub async fn wait_for_outcomes(&self, count: usize) -> Vec<Outcome> {
        for _ in 0..2_000 {
            let outcomes = self.outcomes();
            if outcomes.len() >= count {
                return outcomes;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.outcomes()
    }
}

fn respond(status: u16, headers: &[(&str, String)], body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}

fn json_response(status: u16, body: &Value) -> Response {
    let content_type = ("content-type", "application/json".to_string());
    respond(status, &[content_type], Body::from(body.to_string()))
}

async fn handle(
    state: Arc<State>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        body_len: body.len(),
        received_at: Instant::now(),
    };
    lock(&state.requests).push(recorded.clone());
    let path = uri.path().trim_end_matches('/');
    let wire = recorded.wire().filter(|_| method == Method::POST);
    let summary = recorded.summary();
    let raw = match wire {
        Some(_) => None,
        None => lock(&state.script).pick_raw(&summary),
    };
    if let Some(reply) = raw {
        return answer(state, Wire::Chat, &summary, &recorded, reply).await;
    }
    // Ollama's own listing (`GET /api/tags`), as Ollama documents it.
    if method == Method::GET && path == "/api/tags" {
        let listed: Vec<Value> = (state.models.iter())
            .map(|name| json!({"name": name, "model": name, "size": 0, "digest": "", "details": {"family": "test"}}))
            .collect();
        return json_response(200, &json!({"models": listed}));
    }
    if method == Method::GET && path.ends_with("/models") {
        let data: Vec<Value> = (state.models.iter())
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "braincode-scripted"}))
            .collect();
        return json_response(200, &json!({"object": "list", "data": data}));
    }
    let Some(wire) = wire else {
        return json_response(
            404,
            &json!({"error": {"message": format!("the scripted server has no route {method} {path}"), "type": "not_found"}}),
        );
    };
    let picked = lock(&state.script).pick(&summary);
    let Some((_, reply)) = picked else {
        return json_response(
            500,
            &json!({"error": {"message": no_match_message(&summary), "type": "scripted_server_error"}}),
        );
    };
    answer(state, wire, &summary, &recorded, reply).await
}

/// Answers `recorded` with `reply`: its HTTP failure, its raw bytes, or the reply rendered
/// in `wire`'s format.
async fn answer(
    state: Arc<State>,
    wire: Wire,
    summary: &RequestSummary,
    recorded: &RecordedRequest,
    reply: Reply,
) -> Response {
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(failure) = &reply.failure {
        let content_type = if failure.body.trim_start().starts_with('{') {
            "application/json"
        } else {
            "text/plain"
        };
        let mut headers = vec![("content-type", content_type.to_string())];
        if let Some(value) = &failure.retry_after {
            headers.push(("retry-after", value.clone()));
        }
        return respond(failure.status, &headers, Body::from(failure.body.clone()));
    }
    let (status, headers, chunks, end) = match reply.raw {
        Some(raw) => (raw.status, raw.headers, raw.chunks, raw.end),
        None => {
            let include_usage = wire != Wire::Chat
                || (recorded.body)
                    .pointer("/stream_options/include_usage")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
            let model = summary.model.as_deref().unwrap_or("scripted");
            let usage = include_usage.then(|| reply.usage_for(summary));
            let headers = vec![
                ("content-type".to_string(), "text/event-stream".to_string()),
                ("cache-control".to_string(), "no-cache".to_string()),
            ];
            (200, headers, render(wire, &reply, model, usage), reply.end)
        }
    };
    if end == ReplyEnd::Hang {
        // Dropped by the server when the client goes away.
        std::future::pending::<()>().await;
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    tokio::spawn(stream_body(state, chunks, reply.chunk_delay, end, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let headers: Vec<(&str, String)> = (headers.iter())
        .map(|(name, value)| (name.as_str(), value.clone()))
        .collect();
    respond(status, &headers, Body::from_stream(stream))
}

/// Sends `chunks` (waiting `delay` between them), ends the body as `end` says, and records
/// the [`Outcome`].
async fn stream_body(
    state: Arc<State>,
    chunks: Vec<Bytes>,
    delay: Duration,
    end: ReplyEnd,
    tx: mpsc::Sender<Result<Bytes, std::io::Error>>,
) {
    let total = chunks.len();
    let record = |sent: usize, client_gone: bool| {
        lock(&state.outcomes).push(Outcome {
            sent,
            total,
            client_gone,
        });
    };
    for (sent, chunk) in chunks.into_iter().enumerate() {
        if sent > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if tx.send(Ok(chunk)).await.is_err() {
            record(sent, true);
            return;
        }
    }
    match end {
        ReplyEnd::Complete | ReplyEnd::Hang => {}
        ReplyEnd::Cut => {
            // Give the client time to read what was sent before the abort.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = tx
                .send(Err(std::io::Error::other("scripted connection cut")))
                .await;
        }
        ReplyEnd::Stall => tx.closed().await,
        ReplyEnd::KeepAlive(every) => loop {
            tokio::time::sleep(every).await;
            if tx
                .send(Ok(Bytes::from_static(b": keep-alive\n\n")))
                .await
                .is_err()
            {
                break;
            }
        },
    }
    record(total, tx.is_closed());
}
