//! [`ScriptedServer`]: a real HTTP server on 127.0.0.1 speaking the OpenAI Chat Completions
//! streaming format byte-faithfully, answering from a [`Script`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::request::content_text;
use crate::script::{Reply, ReplyEnd, RequestSummary, Script, ScriptState, no_match_message};

/// A request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// URL path (`/v1/chat/completions`).
    pub path: String,
    /// Headers, names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
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
    /// The text of every message with `role`.
    pub fn texts_of(&self, role: &str) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .map(|m| content_text(m.get("content")))
            .collect()
    }
    /// What the matchers saw.
    pub fn summary(&self) -> RequestSummary {
        RequestSummary::from_json(&self.body)
    }
}

struct State {
    script: Mutex<ScriptState>,
    requests: Mutex<Vec<RecordedRequest>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The scripted HTTP model server; it stops when dropped.
///
/// `POST …/chat/completions` answers from the script (a request no rule matches gets HTTP
/// 500 "no scripted reply matches this request: …"); `GET …/models` lists the model names
/// the script's rules mention (plus `scripted`); anything else is a 404.
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
    ///
    /// # Panics
    /// When the port cannot be bound (a test fixture fails loudly).
    pub async fn start(script: Script) -> Self {
        Self::start_at("127.0.0.1:0", script)
            .await
            .expect("bind 127.0.0.1 for the scripted server")
    }

    /// [`ScriptedServer::start`] on a given address (`127.0.0.1:11434`, where Ollama
    /// listens); `Err` when it cannot be bound (taken).
    pub async fn start_at(addr: &str, script: Script) -> std::io::Result<Self> {
        let models = model_names(&script);
        let state = Arc::new(State {
            script: Mutex::new(ScriptState::new(script)),
            requests: Mutex::new(Vec::new()),
        });
        let shared = Arc::clone(&state);
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = Arc::clone(&shared);
                let models = models.clone();
                async move { handle(state, models, method, uri, headers, body).await }
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

    /// The chat requests only (not `/models` lookups).
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .collect()
    }

    /// How many replies the rule named `name` (or `rule <index>`) served.
    pub fn hits(&self, name: &str) -> usize {
        lock(&self.state.script).hits(name)
    }

    /// How many replies the rule at `index` served.
    pub fn hits_by_index(&self, index: usize) -> usize {
        lock(&self.state.script).hits_by_index(index)
    }

    /// How many chat requests no rule answered.
    pub fn unmatched(&self) -> usize {
        lock(&self.state.script).unmatched()
    }
}

fn model_names(script: &Script) -> Vec<String> {
    fn collect(matcher: &crate::Matcher, out: &mut Vec<String>) {
        match matcher {
            crate::Matcher::Model(name) if !out.contains(name) => out.push(name.clone()),
            crate::Matcher::All(all) | crate::Matcher::AnyOf(all) => {
                all.iter().for_each(|m| collect(m, out));
            }
            _ => {}
        }
    }
    let mut names = vec!["scripted".to_string()];
    for rule in &script.rules {
        collect(&rule.matcher, &mut names);
    }
    names
}

fn json_response(status: u16, body: &Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        "content-type",
        axum::http::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    state: Arc<State>,
    models: Vec<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
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
    };
    lock(&state.requests).push(recorded.clone());
    let path = uri.path().trim_end_matches('/');
    // Ollama's own listing (`GET /api/tags`), as Ollama documents it.
    if method == Method::GET && path == "/api/tags" {
        let listed: Vec<Value> = models
            .iter()
            .map(|name| json!({"name": name, "model": name, "size": 0, "digest": "", "details": {"family": "test"}}))
            .collect();
        return json_response(200, &json!({"models": listed}));
    }
    if method == Method::GET && path.ends_with("/models") {
        let data: Vec<Value> = models
            .iter()
            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "braincode-test-support"}))
            .collect();
        return json_response(200, &json!({"object": "list", "data": data}));
    }
    if method != Method::POST || !path.ends_with("/chat/completions") {
        return json_response(
            404,
            &json!({"error": {"message": format!("the scripted server has no route {method} {path}"), "type": "not_found"}}),
        );
    }
    let summary = recorded.summary();
    let picked = lock(&state.script).pick(&summary);
    let Some((_, reply)) = picked else {
        return json_response(
            500,
            &json!({"error": {"message": no_match_message(&summary), "type": "scripted_server_error"}}),
        );
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    if let Some(failure) = &reply.failure {
        let mut response = Response::new(Body::from(failure.body.clone()));
        *response.status_mut() =
            StatusCode::from_u16(failure.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let content_type = if failure.body.trim_start().starts_with('{') {
            "application/json"
        } else {
            "text/plain"
        };
        response.headers_mut().insert(
            "content-type",
            axum::http::HeaderValue::from_static(content_type),
        );
        if let Some(value) = failure
            .retry_after
            .as_deref()
            .and_then(|v| axum::http::HeaderValue::from_str(v).ok())
        {
            response.headers_mut().insert("retry-after", value);
        }
        return response;
    }
    let include_usage = recorded
        .body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let model = recorded.model().unwrap_or("scripted").to_string();
    let chunks = sse_chunks(
        &reply,
        &model,
        include_usage.then(|| reply.usage_for(&summary)),
    );
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(8);
    let end = reply.end;
    let chunk_delay = reply.chunk_delay;
    tokio::spawn(async move {
        for (i, chunk) in chunks.into_iter().enumerate() {
            if i > 0 && !chunk_delay.is_zero() {
                tokio::time::sleep(chunk_delay).await;
            }
            if tx.send(Ok(chunk)).await.is_err() {
                return;
            }
        }
        match end {
            ReplyEnd::Complete => {}
            ReplyEnd::Cut => {
                // Give the client time to read what was sent before the abort.
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = tx
                    .send(Err(std::io::Error::other("scripted connection cut")))
                    .await;
            }
            ReplyEnd::Stall => tx.closed().await,
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        axum::http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        "cache-control",
        axum::http::HeaderValue::from_static("no-cache"),
    );
    response
}

/// The Chat Completions SSE chunks of a reply: role chunk, reasoning, text, tool-call
/// deltas (arguments split in pieces), then — for a complete reply — the finish chunk, the
/// usage chunk (when asked for) and `[DONE]`.
pub fn sse_chunks(
    reply: &Reply,
    model: &str,
    usage: Option<braincode_protocol::Usage>,
) -> Vec<Bytes> {
    let id = "chatcmpl-scripted";
    let created = 1_700_000_000;
    let chunk = |delta: Value, finish: Value| {
        let body = json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": "fp_scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        Bytes::from(format!("data: {body}\n\n"))
    };
    let mut out = Vec::new();
    if reply.end == ReplyEnd::Stall
        && reply.reasoning.is_empty()
        && reply.text.is_empty()
        && reply.tool_calls.is_empty()
    {
        return out;
    }
    out.push(chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    ));
    for text in &reply.reasoning {
        out.push(chunk(json!({"reasoning_content": text}), Value::Null));
    }
    for text in &reply.text {
        out.push(chunk(json!({"content": text}), Value::Null));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id.clone().unwrap_or_default(),
                "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in split_in_pieces(&call.arguments, 3) {
            out.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    if reply.end != ReplyEnd::Complete {
        return out;
    }
    let finish = match reply.stop_reason() {
        braincode_llm::StopReason::EndTurn => "stop".to_string(),
        braincode_llm::StopReason::ToolUse => "tool_calls".to_string(),
        braincode_llm::StopReason::MaxTokens => "length".to_string(),
        braincode_llm::StopReason::ContentFilter => "content_filter".to_string(),
        braincode_llm::StopReason::Other(other) => other,
    };
    out.push(chunk(json!({}), json!(finish)));
    if let Some(usage) = usage {
        let body = json!({"id": id, "object": "chat.completion.chunk", "created": created,
            "model": model, "system_fingerprint": "fp_scripted", "choices": [],
            "usage": {"prompt_tokens": usage.input + usage.cache_read, "completion_tokens": usage.output,
                "total_tokens": usage.input + usage.cache_read + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read},
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning}}});
        out.push(Bytes::from(format!("data: {body}\n\n")));
    }
    out.push(Bytes::from_static(b"data: [DONE]\n\n"));
    out
}

/// Splits text into about `parts` pieces on character boundaries (empty text: no piece).
fn split_in_pieces(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
