//! Connection test and model discovery (spec 1.5).

use std::time::{Duration, Instant};

use braincode_protocol::ModelApi;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::classify::{classify_http_error, clip_detail, looks_like_html, redact};
use crate::endpoint::{normalize_anthropic_base_url, normalize_openai_base_url};
use crate::transport::{error_chain, header_map, shared_http};
use crate::wire::anthropic::ANTHROPIC_VERSION;
use crate::{
    ChatMessage, ChatRequest, ClientOptions, ErrorKind, ModelClient, ModelError, collect_stream,
};

/// The prompt of the connection test.
pub const CONNECTION_TEST_PROMPT: &str = "Reply with exactly OK";
/// Output cap of the connection test.
pub const CONNECTION_TEST_MAX_TOKENS: u32 = 16;
/// Default time limit of the connection test.
pub const CONNECTION_TEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Time limit of `GET /models`.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);
/// Context window assumed for discovered Anthropic models.
pub const ANTHROPIC_CONTEXT_GUESS: u32 = 200_000;
/// Context window assumed for discovered OpenAI-compatible models.
pub const OPENAI_CONTEXT_GUESS: u32 = 128_000;

/// Why a connection test failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionFailure {
    /// Failure class.
    pub kind: ErrorKind,
    /// What happened.
    pub explanation: String,
}

/// The result of a connection test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionTestResult {
    /// Whether the model answered.
    pub ok: bool,
    /// Time to the complete answer (or the failure).
    pub latency_ms: u64,
    /// The answer text, trimmed (empty on failure).
    pub reply: String,
    /// Why it failed.
    pub failure: Option<ConnectionFailure>,
}

impl ConnectionTestResult {
    /// A failed result without a request (for example, no API key).
    pub fn failed(kind: ErrorKind, explanation: impl Into<String>) -> Self {
        Self {
            ok: false,
            latency_ms: 0,
            reply: String::new(),
            failure: Some(ConnectionFailure {
                kind,
                explanation: explanation.into(),
            }),
        }
    }
}

/// Sends "Reply with exactly OK" (16 output tokens, thinking off) and reports what happened.
/// Build the client with [`ClientOptions::for_connection_test`] so nothing is retried.
/// Any answer counts as success; the reply is returned so the caller can show it.
pub async fn test_connection(client: &dyn ModelClient, timeout: Duration) -> ConnectionTestResult {
    let request = ChatRequest {
        messages: vec![ChatMessage::user_text(CONNECTION_TEST_PROMPT)],
        max_tokens: Some(CONNECTION_TEST_MAX_TOKENS),
        ..ChatRequest::default()
    };
    let started = Instant::now();
    let cancel = CancellationToken::new();
    let call = async {
        let stream = client.stream(request, cancel.clone()).await?;
        collect_stream(stream, |_| {}).await
    };
    let outcome = tokio::time::timeout(timeout, call).await;
    cancel.cancel();
    let latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let result = outcome.unwrap_or_else(|_| {
        Err(ModelError::new(
            ErrorKind::Timeout,
            format!("no complete answer within {}s", timeout.as_secs()),
        ))
    });
    match result {
        Ok(completion) => ConnectionTestResult {
            ok: true,
            latency_ms,
            reply: completion.text.trim().to_string(),
            failure: None,
        },
        Err(err) => ConnectionTestResult {
            ok: false,
            latency_ms,
            reply: String::new(),
            failure: Some(ConnectionFailure {
                kind: err.kind,
                explanation: err.message,
            }),
        },
    }
}

/// A model an endpoint offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveredModel {
    /// The model name to use as `modelId`.
    pub id: String,
    /// The context window the endpoint reports (`context_length`, `context_window`,
    /// `max_model_len`, …), else 200,000 for Anthropic and 128,000 for OpenAI-compatible.
    pub context_window_guess: u32,
}

/// Lists the models of an endpoint with `GET {base}/models` (OpenAI-compatible, `Bearer`
/// auth) or `GET {base}/v1/models` (Anthropic, `x-api-key` + `anthropic-version`). The
/// answer must carry a `data` array.
pub async fn discover_models(
    base_url: &str,
    api: ModelApi,
    api_key: Option<&str>,
) -> Result<Vec<DiscoveredModel>, ModelError> {
    let api_key = api_key.map(str::trim).filter(|k| !k.is_empty());
    let (url, guess, mut pairs) = match api {
        ModelApi::AnthropicMessages => (
            format!("{}/v1/models", normalize_anthropic_base_url(base_url)),
            ANTHROPIC_CONTEXT_GUESS,
            vec![(
                "anthropic-version".to_string(),
                ANTHROPIC_VERSION.to_string(),
            )],
        ),
        ModelApi::OpenaiCompletions | ModelApi::OpenaiResponses => (
            format!("{}/models", normalize_openai_base_url(base_url)),
            OPENAI_CONTEXT_GUESS,
            Vec::new(),
        ),
        ModelApi::Local => {
            return Err(ModelError::new(
                ErrorKind::Config,
                "the embedded local model has no endpoint to discover; use `braincode models pull`",
            ));
        }
    };
    if reqwest::Url::parse(&url).is_err() {
        return Err(ModelError::new(
            ErrorKind::Config,
            format!("invalid base URL {base_url:?}"),
        ));
    }
    if let Some(key) = api_key {
        match api {
            ModelApi::AnthropicMessages => pairs.push(("x-api-key".into(), key.into())),
            _ => pairs.push(("authorization".into(), format!("Bearer {key}"))),
        }
    }
    let headers = header_map(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))?;
    let options = ClientOptions::default();
    let http = shared_http(&options)?;
    let sanitize = |e: ModelError| ModelError {
        message: redact(&e.message, api_key),
        ..e
    };
    let response = http
        .get(&url)
        .headers(headers)
        .timeout(DISCOVERY_TIMEOUT)
        .send()
        .await
        .map_err(|e| {
            let kind = if e.is_timeout() {
                ErrorKind::Timeout
            } else {
                ErrorKind::Network
            };
            sanitize(ModelError::new(
                kind,
                format!("GET {url} failed: {}", error_chain(&e)),
            ))
        })?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.map_err(|e| {
        sanitize(ModelError::new(
            ErrorKind::Network,
            format!("reading {url} failed: {}", error_chain(&e)),
        ))
    })?;
    if !(200..300).contains(&status) {
        let err = classify_http_error(status, &text, content_type.as_deref());
        return Err(sanitize(ModelError {
            message: format!("GET {url}: {}", err.message),
            ..err
        }));
    }
    let body: Value = serde_json::from_str(&text).map_err(|e| {
        let html = looks_like_html(&text, content_type.as_deref());
        sanitize(ModelError::new(
            ErrorKind::InvalidResponse,
            format!(
                "GET {url} did not return JSON ({e}): {}",
                clip_detail(&text, html)
            ),
        ))
    })?;
    let Some(data) = body.get("data").and_then(Value::as_array) else {
        return Err(sanitize(ModelError::new(
            ErrorKind::InvalidResponse,
            format!(
                "GET {url} returned JSON without a `data` array: {}",
                clip_detail(&body.to_string(), false)
            ),
        )));
    };
    Ok(data
        .iter()
        .filter_map(|entry| {
            let id = entry.get("id").and_then(Value::as_str)?.trim();
            (!id.is_empty()).then(|| DiscoveredModel {
                id: id.to_string(),
                context_window_guess: reported_context(entry).unwrap_or(guess),
            })
        })
        .collect())
}

fn reported_context(entry: &Value) -> Option<u32> {
    [
        "/context_length",
        "/context_window",
        "/max_model_len",
        "/max_context_length",
        "/top_provider/context_length",
    ]
    .iter()
    .find_map(|pointer| entry.pointer(pointer).and_then(Value::as_u64))
    .and_then(|n| u32::try_from(n).ok())
    .filter(|n| *n > 0)
}
