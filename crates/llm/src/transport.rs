//! The HTTP side of every wire client: one request with retries, then a guarded byte stream
//! (cancellation, idle and total timeouts) decoded into model events.
//!
//! Retries happen only before the caller has seen any event: the client reads until the
//! first model event (or a failure) before `stream` returns, so a failure on the way there —
//! 429, 5xx, a refused connection, an overloaded error event, a cut before the first token —
//! is retried transparently, and a failure after it ends the stream with an error.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt, stream};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::classify::{
    classify_http_error, classify_stream_error, clip_detail, looks_like_html, parse_retry_after,
    redact,
};
use crate::sse::SseParser;
use crate::wire::StreamDecoder;
use crate::{ClientOptions, ErrorKind, ModelError, ModelEvent, ModelStream, RetryNotice};

/// Largest error body read from a failed response.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// A `reqwest` client per (connect timeout, user agent), shared by every wire client so
/// connections and TLS sessions are pooled.
pub(crate) fn shared_http(options: &ClientOptions) -> Result<reqwest::Client, ModelError> {
    type Cache = Mutex<Vec<((Duration, String), reqwest::Client)>>;
    static CLIENTS: OnceLock<Cache> = OnceLock::new();
    let key = (options.connect_timeout, options.user_agent.clone());
    let cache = CLIENTS.get_or_init(|| Mutex::new(Vec::new()));
    let mut clients = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, client)) = clients.iter().find(|(k, _)| *k == key) {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .user_agent(options.user_agent.clone())
        .pool_idle_timeout(Duration::from_secs(90))
        .build()
        .map_err(|e| {
            ModelError::new(
                ErrorKind::Config,
                format!("could not build the HTTP client: {}", error_chain(&e)),
            )
        })?;
    clients.push((key, client.clone()));
    Ok(client)
}

/// Builds a header map, refusing names or values HTTP cannot carry (with the header named).
pub(crate) fn header_map<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        let header = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            ModelError::new(
                ErrorKind::Config,
                format!("invalid HTTP header name {name:?}"),
            )
        })?;
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            ModelError::new(
                ErrorKind::Config,
                format!("invalid value for HTTP header {name:?}"),
            )
        })?;
        let lower = name.to_ascii_lowercase();
        if lower == "authorization" || lower == "x-api-key" {
            value.set_sensitive(true);
        }
        map.insert(header, value);
    }
    Ok(map)
}

/// One HTTP endpoint speaking one wire protocol.
pub(crate) struct Transport {
    pub http: reqwest::Client,
    pub url: String,
    pub headers: HeaderMap,
    pub api_key: Option<String>,
    pub model_id: String,
    pub options: ClientOptions,
    pub new_decoder: fn() -> Box<dyn StreamDecoder>,
}

impl Transport {
    /// Sends `body` with retries and returns the event stream once the first event arrived.
    pub async fn stream(
        self: Arc<Self>,
        body: Bytes,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let deadline = Instant::now() + self.options.total_timeout;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            if cancel.is_cancelled() {
                return Err(self.tag(ModelError::cancelled()));
            }
            let err = match self.attempt(body.clone(), &cancel, deadline).await {
                Ok((first, pump)) => return Ok(into_stream(first, pump)),
                Err(err) => self.tag(err),
            };
            if !err.kind.is_retryable() || attempt > self.options.max_retries {
                return Err(err);
            }
            let (delay, from_retry_after) = match err.retry_after {
                Some(wait) if wait > self.options.max_retry_after => {
                    let mut err = err;
                    err.message.push_str(&format!(
                        " (the server asked to wait {}s, longer than the {}s the client waits)",
                        wait.as_secs(),
                        self.options.max_retry_after.as_secs()
                    ));
                    return Err(err);
                }
                Some(wait) => (wait, true),
                None => (self.options.backoff(attempt), false),
            };
            if Instant::now() + delay >= deadline {
                return Err(err);
            }
            tracing::debug!(model = %self.model_id, attempt, ?delay, error = %err, "retrying model call");
            if let Some(observer) = &self.options.on_retry {
                observer(&RetryNotice {
                    model: self.model_id.clone(),
                    attempt,
                    delay,
                    from_retry_after,
                    kind: err.kind,
                    status: err.status,
                });
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.tag(ModelError::cancelled())),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    fn tag(&self, mut err: ModelError) -> ModelError {
        err.message = redact(&err.message, self.api_key.as_deref());
        if err.model.is_none() {
            err.model = Some(self.model_id.clone());
        }
        err
    }

    async fn attempt(
        &self,
        body: Bytes,
        cancel: &CancellationToken,
        deadline: Instant,
    ) -> Result<(ModelEvent, Pump), ModelError> {
        let request = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = guarded(
            request,
            cancel,
            self.options.idle_timeout,
            deadline,
            "waiting for the response",
        )
        .await?
        .map_err(|e| self.transport_error(&e))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !(200..300).contains(&status) {
            let retry_after = retry_after(response.headers());
            let mut body = response.bytes_stream();
            let text = read_limited(&mut body, cancel, &self.options, deadline).await?;
            let text = redact(&text, self.api_key.as_deref());
            return Err(classify_http_error(status, &text, content_type.as_deref())
                .with_retry_after(retry_after));
        }
        let content_type = content_type.unwrap_or_default();
        if !content_type.is_empty() && !content_type.contains("event-stream") {
            // A server that ignored `stream: true`, or a proxy/login page.
            let mut body = response.bytes_stream();
            let text = read_limited(&mut body, cancel, &self.options, deadline).await?;
            let text = redact(&text, self.api_key.as_deref());
            if let Some(error) = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .filter(|v| v.get("error").is_some_and(|e| !e.is_null()))
            {
                return Err(classify_stream_error(&error).with_status(status));
            }
            let html = looks_like_html(&text, Some(&content_type));
            return Err(ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "expected an event stream from {}, got {content_type}: {}",
                    self.url,
                    clip_detail(&text, html)
                ),
            )
            .with_status(status));
        }
        let mut pump = Pump {
            body: Box::pin(response.bytes_stream()),
            parser: SseParser::new(),
            decoder: (self.new_decoder)(),
            queue: VecDeque::new(),
            cancel: cancel.clone(),
            idle: self.options.idle_timeout,
            deadline,
            finished: false,
            answered: false,
            tag: TagInfo {
                model_id: self.model_id.clone(),
                api_key: self.api_key.clone(),
            },
        };
        match pump.next().await {
            Some(Ok(first)) => Ok((first, pump)),
            Some(Err(err)) => Err(err),
            None => Err(crate::wire::truncated("event")),
        }
    }

    fn transport_error(&self, err: &reqwest::Error) -> ModelError {
        let detail = error_chain(err);
        if err.is_timeout() {
            ModelError::new(
                ErrorKind::Timeout,
                format!("{} timed out: {detail}", self.url),
            )
        } else if err.is_connect() {
            ModelError::new(
                ErrorKind::Network,
                format!("could not connect to {}: {detail}", self.url),
            )
        } else {
            ModelError::new(
                ErrorKind::Network,
                format!("request to {} failed: {detail}", self.url),
            )
        }
    }
}

/// `retry-after-ms` (OpenAI) or `Retry-After` (seconds or HTTP date).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

/// The message of an error and all its sources, joined with `: `.
/// HTTP-stack wrappers that repeat the URL or say nothing the cause does not.
const NOISE_PREFIXES: &[&str] = &["error sending request for url", "client error ("];

pub(crate) fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(err);
    while let Some(inner) = current {
        let text = inner.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = inner.source();
    }
    let useful: Vec<&String> = parts
        .iter()
        .filter(|p| !NOISE_PREFIXES.iter().any(|n| p.starts_with(n)))
        .collect();
    if useful.is_empty() {
        parts.join(": ")
    } else {
        useful
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(": ")
    }
}

/// Awaits `fut` unless the token fires or no progress is made within the idle timeout or
/// before the deadline.
async fn guarded<F: Future>(
    fut: F,
    cancel: &CancellationToken,
    idle: Duration,
    deadline: Instant,
    what: &str,
) -> Result<F::Output, ModelError> {
    let now = Instant::now();
    if now >= deadline {
        return Err(total_timeout());
    }
    let remaining = deadline - now;
    let (limit, is_total) = if idle < remaining {
        (idle, false)
    } else {
        (remaining, true)
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::cancelled()),
        result = tokio::time::timeout(limit, fut) => result.map_err(|_| {
            if is_total {
                total_timeout()
            } else {
                ModelError::new(
                    ErrorKind::Timeout,
                    format!("no data from the model for {}s while {what}", idle.as_secs_f32()),
                )
            }
        }),
    }
}

fn total_timeout() -> ModelError {
    ModelError::new(
        ErrorKind::Timeout,
        "the model call exceeded its total time limit",
    )
}

async fn read_limited(
    body: &mut (impl Stream<Item = reqwest::Result<Bytes>> + Unpin),
    cancel: &CancellationToken,
    options: &ClientOptions,
    deadline: Instant,
) -> Result<String, ModelError> {
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_LIMIT {
        match guarded(
            body.next(),
            cancel,
            options.idle_timeout,
            deadline,
            "reading an error body",
        )
        .await
        {
            Ok(Some(Ok(chunk))) => bytes.extend_from_slice(&chunk),
            Ok(Some(Err(_)) | None) => break,
            Err(err) if err.kind == ErrorKind::Cancelled => return Err(err),
            Err(_) => break,
        }
    }
    bytes.truncate(ERROR_BODY_LIMIT);
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

struct TagInfo {
    model_id: String,
    api_key: Option<String>,
}

/// Pulls bytes, frames events, decodes them, and enforces the stream rules (timeouts,
/// cancellation, no silent truncation, no empty reply).
struct Pump {
    body: ByteStream,
    parser: SseParser,
    decoder: Box<dyn StreamDecoder>,
    queue: VecDeque<ModelEvent>,
    cancel: CancellationToken,
    idle: Duration,
    deadline: Instant,
    finished: bool,
    answered: bool,
    tag: TagInfo,
}

impl Pump {
    async fn next(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        let result = self.next_inner().await;
        match result {
            Some(Err(mut err)) => {
                self.finished = true;
                self.queue.clear();
                err.message = redact(&err.message, self.tag.api_key.as_deref());
                if err.model.is_none() {
                    err.model = Some(self.tag.model_id.clone());
                }
                Some(Err(err))
            }
            other => other,
        }
    }

    async fn next_inner(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                match &event {
                    ModelEvent::TextDelta { .. } | ModelEvent::ToolCall { .. } => {
                        self.answered = true;
                    }
                    ModelEvent::Stop { reason } => {
                        self.finished = true;
                        if !self.answered {
                            return Some(Err(ModelError::new(
                                ErrorKind::EmptyReply,
                                format!(
                                    "the model finished ({}) without any text or tool call",
                                    stop_label(reason)
                                ),
                            )));
                        }
                    }
                    ModelEvent::ReasoningDelta { .. } | ModelEvent::Usage { .. } => {}
                }
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            while !self.decoder.is_done() {
                let Some(event) = self.parser.next_event() else {
                    break;
                };
                if let Err(err) = self.decoder.on_event(&event, &mut self.queue) {
                    return Some(Err(err));
                }
            }
            if !self.queue.is_empty() {
                continue;
            }
            if self.decoder.is_done() {
                // Terminal event without a Stop cannot happen with our decoders; end cleanly.
                self.finished = true;
                return None;
            }
            let chunk = guarded(
                self.body.next(),
                &self.cancel,
                self.idle,
                self.deadline,
                "streaming the reply",
            )
            .await;
            match chunk {
                Err(err) => return Some(Err(err)),
                Ok(Some(Ok(bytes))) => self.parser.feed(&bytes),
                Ok(Some(Err(err))) => {
                    return Some(Err(ModelError::new(
                        ErrorKind::Network,
                        format!(
                            "the connection broke while the reply was streaming: {}",
                            error_chain(&err)
                        ),
                    )));
                }
                Ok(None) => {
                    if let Some(event) = self.parser.finish()
                        && let Err(err) = self.decoder.on_event(&event, &mut self.queue)
                    {
                        return Some(Err(err));
                    }
                    if let Err(err) = self.decoder.on_eof(&mut self.queue) {
                        return Some(Err(err));
                    }
                    if self.queue.is_empty() {
                        self.finished = true;
                        return Some(Err(crate::wire::truncated("terminal event")));
                    }
                }
            }
        }
    }
}

fn stop_label(reason: &crate::StopReason) -> String {
    match reason {
        crate::StopReason::EndTurn => "end_turn".into(),
        crate::StopReason::ToolUse => "tool_use".into(),
        crate::StopReason::MaxTokens => "max_tokens".into(),
        crate::StopReason::ContentFilter => "content_filter".into(),
        crate::StopReason::Other(other) => other.clone(),
    }
}

fn into_stream(first: ModelEvent, pump: Pump) -> ModelStream {
    let rest = stream::unfold(pump, |mut pump| async move {
        let item = pump.next().await?;
        Some((item, pump))
    });
    Box::pin(stream::once(async move { Ok(first) }).chain(rest))
}
