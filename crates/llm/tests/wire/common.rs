//! A local HTTP server that replays canned responses byte for byte, and records requests.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use braincode_llm::{ChatRequest, ClientOptions, ModelEvent, ModelStream, WireClient};
use braincode_protocol::ModelDefinition;
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;

/// How a canned response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Close normally.
    Close,
    /// Abort the connection (no terminating chunk).
    Cut,
    /// Never finish.
    Stall,
    /// Send an SSE keep-alive comment (`: keep-alive`) at this interval, forever.
    KeepAlive(Duration),
    /// Never send the response headers (the chunks are ignored).
    Hang,
}

/// One canned response.
#[derive(Debug, Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
    pub end: End,
}

impl Canned {
    /// A 200 event stream, sent as one chunk per SSE event (split on blank lines).
    pub fn sse(body: &str) -> Self {
        let mut chunks = Vec::new();
        let mut rest = body;
        while let Some(at) = rest.find("\n\n") {
            chunks.push(Bytes::copy_from_slice(&rest.as_bytes()[..at + 2]));
            rest = &rest[at + 2..];
        }
        if !rest.is_empty() {
            chunks.push(Bytes::copy_from_slice(rest.as_bytes()));
        }
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            end: End::Close,
        }
    }

    /// The same bytes re-split into chunks of `size` bytes (boundaries land anywhere).
    pub fn rechunked(mut self, size: usize) -> Self {
        let all: Vec<u8> = self.chunks.iter().flat_map(|c| c.to_vec()).collect();
        self.chunks = all.chunks(size).map(Bytes::copy_from_slice).collect();
        self
    }

    /// An error response.
    pub fn error(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
            end: End::Close,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn ending(mut self, end: End) -> Self {
        self.end = end;
        self
    }

    /// A 200 `application/json` answer (a server that ignored `stream: true`).
    pub fn json(body: &str) -> Self {
        Self::error(200, body)
    }

    /// A response that never starts: no status line, no headers.
    pub fn hang() -> Self {
        Self::sse("").ending(End::Hang)
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

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    /// The query string, without `?` (empty when there is none).
    pub query: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Canned>,
    seen: Vec<Seen>,
    outcomes: Vec<Outcome>,
}

/// The server; stops when dropped.
pub struct ReplayServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ReplayServer {
    pub async fn start(responses: Vec<Canned>) -> Self {
        let state = Arc::new(Mutex::new(State {
            queue: responses.into(),
            seen: Vec::new(),
            outcomes: Vec::new(),
        }));
        let shared = Arc::clone(&state);
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = Arc::clone(&shared);
                async move { handle(state, method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, state, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// What happened to each streamed body so far, in the order the bodies ended.
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.state.lock().unwrap().outcomes.clone()
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

async fn handle(
    state: Arc<Mutex<State>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let canned = {
        let mut state = state.lock().unwrap();
        state.seen.push(Seen {
            method: method.to_string(),
            path: uri.path().to_string(),
            query: uri.query().unwrap_or_default().to_string(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                .collect(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        state.queue.pop_front()
    };
    let Some(canned) = canned else {
        return Response::builder()
            .status(500)
            .body(Body::from("no canned response left"))
            .unwrap();
    };
    if canned.end == End::Hang {
        // Dropped by the server when the client goes away.
        std::future::pending::<()>().await;
    }
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    tokio::spawn(async move {
        let total = canned.chunks.len();
        let record = |sent: usize, client_gone: bool| {
            state.lock().unwrap().outcomes.push(Outcome {
                sent,
                total,
                client_gone,
            });
        };
        for (sent, chunk) in canned.chunks.into_iter().enumerate() {
            if tx.send(Ok(chunk)).await.is_err() {
                record(sent, true);
                return;
            }
            // Let each chunk reach the client as its own read.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        match canned.end {
            End::Close | End::Hang => {}
            End::Cut => {
                let _ = tx
                    .send(Err(std::io::Error::other("connection cut by the test")))
                    .await;
            }
            End::Stall => tx.closed().await,
            End::KeepAlive(every) => loop {
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
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = Response::builder()
        .status(StatusCode::from_u16(canned.status).unwrap())
        .body(Body::from_stream(stream))
        .unwrap();
    for (name, value) in canned.headers {
        response.headers_mut().insert(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    response
}

/// A catalogue entry for `api` pointing at `base_url`.
pub fn definition(api: &str, base_url: &str) -> ModelDefinition {
    serde_json::from_value(serde_json::json!({
        "id": format!("test/{api}"), "provider": "test", "modelId": "test-model",
        "api": api, "baseUrl": base_url,
    }))
    .unwrap()
}

/// Options with fast retries, so failure tests stay quick.
pub fn fast_options() -> ClientOptions {
    ClientOptions {
        retry_base_delay: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        ..ClientOptions::default()
    }
}

pub fn client(api: &str, server: &ReplayServer, key: Option<&str>) -> WireClient {
    WireClient::new(
        &definition(api, &server.url()),
        key.map(str::to_string),
        fast_options(),
    )
    .unwrap()
}

pub fn hello() -> ChatRequest {
    ChatRequest {
        system: Some("You are terse.".into()),
        messages: vec![braincode_llm::ChatMessage::user_text("Say hello")],
        ..ChatRequest::default()
    }
}

/// Drains a stream into its events; the error, if any, ends the list.
pub async fn drain(
    mut stream: ModelStream,
) -> (Vec<ModelEvent>, Option<braincode_llm::ModelError>) {
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return (events, Some(err)),
        }
    }
    (events, None)
}
