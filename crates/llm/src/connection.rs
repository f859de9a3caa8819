//! Connection test and model discovery (spec 1.5).

use std::time::{Duration, Instant};

use braincode_protocol::ModelApi;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::classify::{classify_http_error, clip_detail, looks_like_html, redact};
use crate::endpoint::normalize_base_url;
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
/// Context window assumed for a discovered Gemini model without `inputTokenLimit`.
pub const GEMINI_CONTEXT_GUESS: u32 = 1_048_576;

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
    /// `max_model_len`, Gemini's `inputTokenLimit`, …), else 200,000 for Anthropic,
    /// 1,048,576 for Gemini and 128,000 for OpenAI-compatible.
    pub context_window_guess: u32,
}

/// Lists the models of an endpoint: `GET {base}/models` (OpenAI-compatible, `Bearer` auth;
/// Azure: `{base}/openai/v1/models`, `api-key`), `GET {base}/v1/models` (Anthropic,
/// `x-api-key` + `anthropic-version`), both answering a `data` array; or Gemini's
/// `GET {base}/v1beta/models` (`x-goog-api-key`), whose `models` array is read page by page
/// and keeps the models that can generate content, without their `models/` prefix.
pub async fn discover_models(
    base_url: &str,
    api: ModelApi,
    api_key: Option<&str>,
) -> Result<Vec<DiscoveredModel>, ModelError> {
    let api_key = api_key.map(str::trim).filter(|k| !k.is_empty());
    let base = normalize_base_url(api, base_url);
    let mut pairs: Vec<(String, String)> = Vec::new();
    let url = match api {
        ModelApi::AnthropicMessages => {
            pairs.push((
                "anthropic-version".to_string(),
                ANTHROPIC_VERSION.to_string(),
            ));
            format!("{base}/v1/models")
        }
        ModelApi::OpenaiCompletions
        | ModelApi::OpenaiResponses
        | ModelApi::AzureOpenaiResponses
        | ModelApi::GoogleGenerativeAi
        | ModelApi::OpenaiImages => format!("{base}/models"),
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
        let header = match api {
            ModelApi::AnthropicMessages => "x-api-key",
            ModelApi::GoogleGenerativeAi => "x-goog-api-key",
            ModelApi::AzureOpenaiResponses => "api-key",
            _ => "authorization",
        };
        let value = if header == "authorization" {
            format!("Bearer {key}")
        } else {
            key.to_string()
        };
        pairs.push((header.to_string(), value));
    }
    let headers = header_map(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str())))?;
    let lister = Lister {
        http: shared_http(&ClientOptions::default())?,
        url,
        headers,
        api_key,
    };
    match api {
        ModelApi::GoogleGenerativeAi => lister.gemini_models().await,
        ModelApi::AnthropicMessages => lister.data_models(ANTHROPIC_CONTEXT_GUESS).await,
        _ => lister.data_models(OPENAI_CONTEXT_GUESS).await,
    }
}

/// Pages of Gemini models read at most (1,000 models each).
const GEMINI_MAX_PAGES: usize = 10;

/// One `GET …/models` endpoint with its headers.
struct Lister<'a> {
    http: reqwest::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    api_key: Option<&'a str>,
}

impl Lister<'_> {
    fn sanitize(&self, err: ModelError) -> ModelError {
        ModelError {
            message: redact(&err.message, self.api_key),
            ..err
        }
    }

    /// The models of an answer with a `data` array (OpenAI-compatible, Azure, Anthropic).
    async fn data_models(&self, guess: u32) -> Result<Vec<DiscoveredModel>, ModelError> {
        let body = self.get_json(&[]).await?;
        let Some(data) = body.get("data").and_then(Value::as_array) else {
            return Err(self.sanitize(ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "GET {} returned JSON without a `data` array: {}",
                    self.url,
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

    /// Gemini's `models` pages: names without `models/`, `inputTokenLimit` as the context
    /// window, only models whose `supportedGenerationMethods` include `generateContent`.
    async fn gemini_models(&self) -> Result<Vec<DiscoveredModel>, ModelError> {
        let mut found = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..GEMINI_MAX_PAGES {
            let mut query = vec![("pageSize", "1000".to_string())];
            if let Some(token) = token.take() {
                query.push(("pageToken", token));
            }
            let body = self.get_json(&query).await?;
            let models = match body.get("models") {
                Some(Value::Array(models)) => models.as_slice(),
                // An account with no model answers `{}`.
                None if body.as_object().is_some_and(serde_json::Map::is_empty) => &[],
                _ => {
                    return Err(self.sanitize(ModelError::new(
                        ErrorKind::InvalidResponse,
                        format!(
                            "GET {} returned JSON without a `models` array: {}",
                            self.url,
                            clip_detail(&body.to_string(), false)
                        ),
                    )));
                }
            };
            found.extend(models.iter().filter_map(gemini_model));
            token = body
                .get("nextPageToken")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            if token.is_none() {
                break;
            }
        }
        Ok(found)
    }

    async fn get_json(&self, query: &[(&str, String)]) -> Result<Value, ModelError> {
        let url = &self.url;
        let response = self
            .http
            .get(url)
            .query(query)
            .headers(self.headers.clone())
            .timeout(DISCOVERY_TIMEOUT)
            .send()
            .await
            .map_err(|e| {
                let kind = if e.is_timeout() {
                    ErrorKind::Timeout
                } else {
                    ErrorKind::Network
                };
                self.sanitize(ModelError::new(
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
            self.sanitize(ModelError::new(
                ErrorKind::Network,
                format!("reading {url} failed: {}", error_chain(&e)),
            ))
        })?;
        if !(200..300).contains(&status) {
            let err = classify_http_error(status, &text, content_type.as_deref());
            return Err(self.sanitize(ModelError {
                message: format!("GET {url}: {}", err.message),
                ..err
            }));
        }
        serde_json::from_str(&text).map_err(|e| {
            let html = looks_like_html(&text, content_type.as_deref());
            self.sanitize(ModelError::new(
                ErrorKind::InvalidResponse,
                format!(
                    "GET {url} did not return JSON ({e}): {}",
                    clip_detail(&text, html)
                ),
            ))
        })
    }
}

/// A Gemini `Model` entry usable for chat, or `None`.
fn gemini_model(entry: &Value) -> Option<DiscoveredModel> {
    let name = entry.get("name").and_then(Value::as_str)?.trim();
    let id = name.strip_prefix("models/").unwrap_or(name);
    let generates = match entry
        .get("supportedGenerationMethods")
        .and_then(Value::as_array)
    {
        Some(methods) => methods.iter().any(|m| m == "generateContent"),
        None => true,
    };
    (generates && !id.is_empty()).then(|| DiscoveredModel {
        id: id.to_string(),
        context_window_guess: entry
            .get("inputTokenLimit")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(GEMINI_CONTEXT_GUESS),
    })
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
