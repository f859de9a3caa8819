//! The HTTP side of every wire client: one request with retries, then a guarded byte stream
//! (cancellation, first-byte, idle and total timeouts, the reply cap) decoded into model
//! events.
//!
//! Retries happen only before the caller has seen any event: the client reads until the
//! first model event (or a failure) before `stream` returns, so a failure on the way there —
//! 429, 5xx, a refused connection, a timeout, an overloaded error event, a stream that is cut,
//! malformed or empty, an HTML page — is retried transparently (a model call has no side
//! effects). A failure after it ends the stream with an [`ErrorKind::StreamInterrupted`]
//! error, so the caller can re-issue the whole call.
//!
//! A server that ignores `stream: true` and answers one JSON object is decoded into the same
//! events ([`crate::wire::StreamDecoder::on_complete`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use braincode_protocol::ModelCallSettings;

use crate::classify::{
    classify_http_error, clip_detail, looks_like_html, parse_retry_after, redact,
};
use crate::options::{ReplyCap, Setting, seconds};
use crate::pump::{FRAMING_SLACK, Pump, into_stream};
use crate::wire::{StreamDecoder, truncated};
use crate::{ClientOptions, ErrorKind, ModelError, ModelEvent, ModelStream, RetryNotice};

/// Largest error body read from a failed response.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

pub(crate) type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

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
        if matches!(
            lower.as_str(),
            "authorization" | "x-api-key" | "x-goog-api-key" | "api-key"
        ) {
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
    /// Built-in defaults overlaid with settings.json and the model's own entry.
    pub options: ClientOptions,
    /// What the model's entry sets itself, so messages name the setting that applies.
    pub model_settings: ModelCallSettings,
    pub new_decoder: fn() -> Box<dyn StreamDecoder>,
}

/// A failed attempt, and whether sending the same request again may help.
struct Failure {
    error: ModelError,
    retry: bool,
}

impl Failure {
    /// A failure retried when its kind is transient.
    fn of(error: ModelError) -> Self {
        let retry = is_transient(error.kind);
        Self { error, retry }
    }

    /// A failure that sending again cannot fix.
    fn fatal(error: ModelError) -> Self {
        Self {
            error,
            retry: false,
        }
    }
}

/// Failures worth another attempt: the retryable kinds, plus a reply that could not be read
/// (cut, malformed, empty, an HTML page instead of a stream), which is often a glitch.
pub(crate) fn is_transient(kind: ErrorKind) -> bool {
    kind.is_retryable() || kind == ErrorKind::InvalidResponse
}

/// Which time limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    FirstByte,
    Idle,
    Total,
}

/// Why a guarded wait ended without a value.
pub(crate) enum Interrupt {
    Cancelled,
    Elapsed(Clock),
}

/// Awaits `fut` unless the token fires or the earliest of `limits` passes (on a tie, the
/// first listed wins).
pub(crate) async fn within<F: Future>(
    fut: F,
    cancel: &CancellationToken,
    limits: &[(Instant, Clock)],
) -> Result<F::Output, Interrupt> {
    // `min_by_key` keeps the first of equal minimums.
    let Some(&(at, clock)) = limits.iter().min_by_key(|(at, _)| *at) else {
        return tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(Interrupt::Cancelled),
            output = fut => Ok(output),
        };
    };
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Interrupt::Cancelled),
        result = tokio::time::timeout_at(at, fut) => result.map_err(|_| Interrupt::Elapsed(clock)),
    }
}

impl Transport {
    /// Sends `body` with retries and returns the event stream once the first event arrived.
    /// `cap` bounds the reply kept.
    pub async fn stream(
        self: Arc<Self>,
        body: Bytes,
        cap: ReplyCap,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let deadline = Instant::now() + self.options.total_timeout;
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            if cancel.is_cancelled() {
                return Err(self.tag(ModelError::cancelled()));
            }
            let failure = match Arc::clone(&self)
                .attempt(body.clone(), &cancel, deadline, cap)
                .await
            {
                Ok((first, pump)) => return Ok(into_stream(first, pump)),
                Err(failure) => failure,
            };
            let err = self.tag(failure.error);
            if !failure.retry || attempt > self.options.max_retries {
                return Err(self.gave_up(err, attempt));
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
                return Err(self.gave_up(err, attempt));
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
                    message: err.message.clone(),
                });
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(self.tag(ModelError::cancelled())),
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Says how many attempts were made when there was more than one, and where that is set.
    fn gave_up(&self, mut err: ModelError, attempts: u32) -> ModelError {
        if attempts > 1 && err.kind != ErrorKind::Cancelled {
            err.message.push_str(&format!(
                " (after {attempts} attempts; retries are set by {})",
                Setting::MaxRetries.where_to_change(&self.model_id, &self.model_settings)
            ));
        }
        err
    }

    pub(crate) fn tag(&self, mut err: ModelError) -> ModelError {
        err.message = redact(&err.message, self.api_key.as_deref());
        if err.model.is_none() {
            err.model = Some(self.model_id.clone());
        }
        err
    }

    async fn attempt(
        self: Arc<Self>,
        body: Bytes,
        cancel: &CancellationToken,
        deadline: Instant,
        cap: ReplyCap,
    ) -> Result<(ModelEvent, Pump), Failure> {
        let sent_at = Instant::now();
        let first_byte_at = sent_at + self.options.first_byte_timeout;
        let request = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send();
        let response = match within(
            request,
            cancel,
            &[(first_byte_at, Clock::FirstByte), (deadline, Clock::Total)],
        )
        .await
        {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => return Err(Failure::of(self.transport_error(&err))),
            Err(interrupt) => {
                return Err(Failure::of(
                    self.interrupt_error(interrupt, "waiting for the response headers"),
                ));
            }
        };
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if !(200..300).contains(&status) {
            let retry_after = retry_after(response.headers());
            let mut body: ByteStream = Box::pin(response.bytes_stream());
            let (bytes, _) = self
                .read_body(&mut body, ERROR_BODY_LIMIT, cancel, deadline, false)
                .await
                .map_err(Failure::fatal)?;
            let text = redact(&String::from_utf8_lossy(&bytes), self.api_key.as_deref());
            // The header wins; Google puts its wait in the body (`RetryInfo`).
            let error = classify_http_error(status, &text, Some(content_type.as_str()));
            let retry_after = retry_after.or(error.retry_after);
            let error = error.with_retry_after(retry_after);
            let retry = error.kind.is_retryable();
            return Err(Failure { error, retry });
        }
        let mut body: ByteStream = Box::pin(response.bytes_stream());
        let is_stream = content_type.is_empty() || content_type.contains("event-stream");
        let mut pump = Pump::new(
            Arc::clone(&self),
            cancel.clone(),
            first_byte_at,
            deadline,
            cap,
        );
        if is_stream {
            pump.stream_body(body);
        } else {
            let bytes = self
                .read_whole_reply(&mut body, status, &content_type, cap, cancel, deadline)
                .await?;
            pump.decode_complete(&bytes)
                .map_err(|err| Failure::of(err.with_status(status)))?;
        }
        match pump.next().await {
            Some(Ok(first)) => Ok((first, pump)),
            Some(Err(err)) => Err(Failure::of(err)),
            None => Err(Failure::of(truncated("event"))),
        }
    }

    /// A 2xx answer that is not an event stream: the bytes of a complete JSON reply, or an
    /// error for anything else (an HTML login or proxy page, plain text).
    async fn read_whole_reply(
        &self,
        body: &mut ByteStream,
        status: u16,
        content_type: &str,
        cap: ReplyCap,
        cancel: &CancellationToken,
        deadline: Instant,
    ) -> Result<Vec<u8>, Failure> {
        let limit = cap.total.saturating_mul(2).saturating_add(FRAMING_SLACK);
        let (bytes, complete) = self
            .read_body(body, limit, cancel, deadline, true)
            .await
            .map_err(Failure::of)?;
        let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
        if content_type.contains("json") || first == Some(b'{') {
            if !complete {
                return Err(Failure::fatal(ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!(
                        "the endpoint {} answered one JSON object instead of an event stream, larger than the {limit} bytes read for it; raise {}",
                        self.url,
                        Setting::MaxReplyBytes
                            .where_to_change(&self.model_id, &self.model_settings)
                    ),
                )));
            }
            return Ok(bytes);
        }
        let shown = &bytes[..bytes.len().min(ERROR_BODY_LIMIT)];
        let text = redact(&String::from_utf8_lossy(shown), self.api_key.as_deref());
        let html = looks_like_html(&text, Some(content_type));
        let what = if html {
            format!("an HTML page ({content_type})")
        } else {
            content_type.to_string()
        };
        Err(Failure::of(
            ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "expected an event stream from {}, got {what}: {}",
                    self.url,
                    clip_detail(&text, html)
                ),
            )
            .with_status(status),
        ))
    }

    /// Reads a whole body, up to `limit` bytes. Returns the bytes and whether the body ended
    /// within the limit. With `strict`, a broken connection or a timeout is an error;
    /// otherwise (error bodies, best effort) it ends the read.
    async fn read_body(
        &self,
        body: &mut ByteStream,
        limit: usize,
        cancel: &CancellationToken,
        deadline: Instant,
        strict: bool,
    ) -> Result<(Vec<u8>, bool), ModelError> {
        let mut bytes = Vec::new();
        loop {
            let idle_at = Instant::now() + self.options.idle_timeout;
            let chunk = within(
                body.next(),
                cancel,
                &[(idle_at, Clock::Idle), (deadline, Clock::Total)],
            )
            .await;
            match chunk {
                Ok(Some(Ok(chunk))) => {
                    if bytes.len() + chunk.len() > limit {
                        bytes.extend_from_slice(&chunk[..limit - bytes.len()]);
                        return Ok((bytes, false));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok((bytes, true)),
                Err(Interrupt::Cancelled) => return Err(ModelError::cancelled()),
                Ok(Some(Err(err))) if strict => {
                    return Err(ModelError::new(
                        ErrorKind::Network,
                        format!(
                            "the connection to {} broke while the reply was read: {}",
                            self.url,
                            error_chain(&err)
                        ),
                    ));
                }
                Err(interrupt) if strict => {
                    return Err(self.interrupt_error(interrupt, "reading the reply"));
                }
                Ok(Some(Err(_))) | Err(_) => return Ok((bytes, false)),
            }
        }
    }

    fn transport_error(&self, err: &reqwest::Error) -> ModelError {
        let detail = error_chain(err);
        if err.is_timeout() && err.is_connect() {
            ModelError::new(
                ErrorKind::Timeout,
                format!(
                    "could not connect to {} within {} (connect timeout): {detail}; raise {}",
                    self.url,
                    seconds(self.options.connect_timeout),
                    Setting::ConnectMs.where_to_change(&self.model_id, &self.model_settings)
                ),
            )
        } else if err.is_timeout() {
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

    pub(crate) fn interrupt_error(&self, interrupt: Interrupt, phase: &str) -> ModelError {
        match interrupt {
            Interrupt::Cancelled => ModelError::cancelled(),
            Interrupt::Elapsed(clock) => self.timeout_error(clock, phase),
        }
    }

    /// The error for a time limit that ran out while `phase`, naming the setting to raise.
    fn timeout_error(&self, clock: Clock, phase: &str) -> ModelError {
        let options = &self.options;
        let raise =
            |setting: Setting| setting.where_to_change(&self.model_id, &self.model_settings);
        let message = match clock {
            Clock::FirstByte => format!(
                "no reply from {} within {} of sending the request (first-byte timeout, {phase}; SSE keep-alive comments do not count); raise {}",
                self.url,
                seconds(options.first_byte_timeout),
                raise(Setting::FirstByteMs)
            ),
            Clock::Idle => format!(
                "no data from the model for {} while {phase} (idle timeout; SSE keep-alive comments do not count); raise {}",
                seconds(options.idle_timeout),
                raise(Setting::IdleMs)
            ),
            Clock::Total => format!(
                "the model call exceeded its total time limit of {} (retries included) while {phase}; raise {}",
                seconds(options.total_timeout),
                raise(Setting::TotalMs)
            ),
        };
        ModelError::new(ErrorKind::Timeout, message)
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

/// HTTP-stack wrappers that repeat the URL or say nothing the cause does not.
const NOISE_PREFIXES: &[&str] = &["error sending request for url", "client error ("];

/// The message of an error and all its sources, joined with `: `.
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
