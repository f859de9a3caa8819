//! [`WireClient`]: the [`ModelClient`] for every HTTP model (OpenAI Chat Completions, OpenAI
//! Responses — also on Azure —, Anthropic Messages, Google Gemini).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use braincode_protocol::{ModelApi, ModelDefinition};
use bytes::Bytes;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::endpoint::{base_url_for, is_official_openai};
use crate::oauth::SubscriptionAccess;
use crate::transport::{Transport, header_map, shared_http};
use crate::wire::{StreamDecoder, anthropic, chat, gemini, responses};
use crate::{ChatRequest, ClientOptions, ErrorKind, ModelClient, ModelError, ModelStream};

/// A model reached over HTTP. Retries, timeouts, the reply cap, cancellation and error
/// classification are built in (see [`ClientOptions`]).
#[derive(Clone)]
pub struct WireClient {
    transport: Arc<Transport>,
    api: ModelApi,
    model: String,
    body_options: chat::BodyOptions,
}

impl fmt::Debug for WireClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireClient")
            .field("model", &self.transport.model_id)
            .field("api", &self.api)
            .field("url", &self.transport.url)
            .finish_non_exhaustive()
    }
}

impl WireClient {
    /// A client for a catalogue entry. `api_key` is sent as `Authorization: Bearer` (OpenAI
    /// style), `x-api-key` (Anthropic), `x-goog-api-key` (Gemini, never in the URL) or
    /// `api-key` (Azure); without one no auth header is sent (local servers).
    /// The entry's `headers` are added last, so they can override defaults.
    ///
    /// `options` are the defaults (built-in, overlaid with settings.json by the caller, see
    /// [`ClientOptions::with_settings`]); the entry's own `timeouts`, `maxRetries` and
    /// `maxReplyBytes` win over them ([`ClientOptions::for_model`]).
    pub fn new(
        definition: &ModelDefinition,
        api_key: Option<String>,
        options: ClientOptions,
    ) -> Result<Self, ModelError> {
        Self::build(definition, api_key, options, BaseUrl::FromDefinition)
    }

    /// A client that reaches `definition` through a subscription login: `access` gives the
    /// bearer token, the wire, the base URL (used as it is: the entry's `baseUrl` wins) and
    /// the headers the provider needs; the entry's own `headers` still come last.
    pub fn for_subscription(
        definition: &ModelDefinition,
        access: &SubscriptionAccess,
        options: ClientOptions,
    ) -> Result<Self, ModelError> {
        let mut definition = definition.clone();
        definition.api = access.api;
        let base = match definition.base_url.as_deref().map(str::trim) {
            Some(url) if !url.is_empty() => url.trim_end_matches('/').to_string(),
            _ => access.base_url.trim_end_matches('/').to_string(),
        };
        let mut headers: std::collections::BTreeMap<String, String> =
            access.headers.iter().cloned().collect();
        headers.extend(std::mem::take(&mut definition.headers));
        definition.headers = headers;
        Self::build(
            &definition,
            Some(access.token.clone()),
            options,
            BaseUrl::Exact(base),
        )
    }

    fn build(
        definition: &ModelDefinition,
        api_key: Option<String>,
        options: ClientOptions,
        base: BaseUrl,
    ) -> Result<Self, ModelError> {
        let with_model = |e: ModelError| e.with_model(&definition.id);
        let model_settings = definition.call_settings();
        if let Some(field) = model_settings.invalid_field() {
            return Err(ModelError::new(
                ErrorKind::Config,
                format!(
                    "models.json → {}.{field} is 0; set at least 1, or remove it to use the default",
                    definition.id
                ),
            )
            .with_model(&definition.id));
        }
        let options = options.for_model(definition);
        let base = match base {
            BaseUrl::FromDefinition => base_url_for(definition)?,
            BaseUrl::Exact(url) => url,
        };
        let api_key = api_key
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        if let Some(key) = &api_key {
            braincode_protocol::secrets::register_secret(key);
        }
        let (url, new_decoder): (String, fn() -> Box<dyn StreamDecoder>) = match definition.api {
            ModelApi::OpenaiCompletions => (format!("{base}/chat/completions"), || {
                Box::new(chat::ChatDecoder::new())
            }),
            ModelApi::OpenaiResponses => (format!("{base}/responses"), || {
                Box::new(responses::ResponsesDecoder::new())
            }),
            ModelApi::AnthropicMessages => (format!("{base}/v1/messages"), || {
                Box::new(anthropic::AnthropicDecoder::new())
            }),
            ModelApi::GoogleGenerativeAi => (
                format!(
                    "{base}/{}:streamGenerateContent?alt=sse",
                    gemini::model_path(&definition.model_id)
                ),
                || Box::new(gemini::GeminiDecoder::new()),
            ),
            ModelApi::AzureOpenaiResponses => (format!("{base}/responses"), || {
                Box::new(responses::ResponsesDecoder::new())
            }),
            ModelApi::Local => return Err(local_model_error(definition)),
            ModelApi::OpenaiImages => return Err(image_model_error(definition)),
        };
        let mut pairs: Vec<(String, String)> = vec![
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "text/event-stream".into()),
        ];
        match (definition.api, &api_key) {
            (ModelApi::AnthropicMessages, key) => {
                pairs.push((
                    "anthropic-version".into(),
                    anthropic::ANTHROPIC_VERSION.into(),
                ));
                if let Some(key) = key {
                    pairs.push(("x-api-key".into(), key.clone()));
                }
            }
            (ModelApi::GoogleGenerativeAi, Some(key)) => {
                pairs.push(("x-goog-api-key".into(), key.clone()));
            }
            (ModelApi::AzureOpenaiResponses, Some(key)) => {
                pairs.push(("api-key".into(), key.clone()));
            }
            (_, Some(key)) => pairs.push(("authorization".into(), format!("Bearer {key}"))),
            (_, None) => {}
        }
        for (name, value) in &definition.headers {
            pairs.push((name.clone(), value.clone()));
        }
        let headers =
            header_map(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))).map_err(with_model)?;
        let http = shared_http(&options).map_err(with_model)?;
        let body_options = chat::BodyOptions {
            // Azure serves OpenAI's own models, with their full set of options.
            official: is_official_openai(&base) || definition.api == ModelApi::AzureOpenaiResponses,
            default_max_tokens: definition.max_tokens,
            prompt_cache: options.prompt_cache,
        };
        Ok(Self {
            transport: Arc::new(Transport {
                http,
                url,
                headers,
                api_key,
                model_id: definition.id.clone(),
                options,
                model_settings,
                new_decoder,
            }),
            api: definition.api,
            model: definition.model_id.clone(),
            body_options,
        })
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        &self.transport.url
    }

    /// The wire protocol.
    pub fn api(&self) -> ModelApi {
        self.api
    }

    /// The options this client runs with (defaults, settings and the entry's own values).
    pub fn options(&self) -> &ClientOptions {
        &self.transport.options
    }

    /// The output-token cap sent with `request` (the request's, else the entry's, else the
    /// Anthropic default, which that API requires).
    fn sent_max_tokens(&self, request: &ChatRequest) -> Option<u32> {
        let max = request.max_tokens.or(self.body_options.default_max_tokens);
        match self.api {
            ModelApi::AnthropicMessages => Some(max.unwrap_or(anthropic::DEFAULT_MAX_TOKENS)),
            _ => max,
        }
    }

    /// The JSON body that `request` is sent as.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        match self.api {
            ModelApi::AnthropicMessages => {
                anthropic::request_body(request, &self.model, self.body_options)
            }
            ModelApi::OpenaiResponses | ModelApi::AzureOpenaiResponses => {
                responses::request_body(request, &self.model, self.body_options)
            }
            ModelApi::GoogleGenerativeAi => {
                gemini::request_body(request, &self.model, self.body_options)
            }
            ModelApi::OpenaiCompletions | ModelApi::Local | ModelApi::OpenaiImages => {
                chat::request_body(request, &self.model, self.body_options)
            }
        }
    }
}

/// Where a client's base URL comes from.
enum BaseUrl {
    /// The entry's `baseUrl` (or its provider's default), normalized for its wire.
    FromDefinition,
    /// This URL, as it is.
    Exact(String),
}

/// The error for `api: local` entries, which this crate does not run.
pub(crate) fn local_model_error(definition: &ModelDefinition) -> ModelError {
    ModelError::new(
        ErrorKind::Config,
        format!(
            "model '{}' is the embedded local model; it is served by braincode-llm-local, not by an HTTP client",
            definition.id
        ),
    )
    .with_model(&definition.id)
}

/// The error for `api: openai-images` entries, which generate images and answer no text turn.
pub(crate) fn image_model_error(definition: &ModelDefinition) -> ModelError {
    ModelError::new(
        ErrorKind::Config,
        format!(
            "model '{}' is an image-generation model (openai-images); bind it to imageMaker, not to a text role",
            definition.id
        ),
    )
    .with_model(&definition.id)
}

#[async_trait]
impl ModelClient for WireClient {
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let body = serde_json::to_vec(&self.request_body(&request)).map_err(|e| {
            ModelError::new(
                ErrorKind::BadRequest,
                format!("could not encode the request: {e}"),
            )
            .with_model(&self.transport.model_id)
        })?;
        let cap = self
            .transport
            .options
            .reply_cap(self.sent_max_tokens(&request));
        Arc::clone(&self.transport)
            .stream(Bytes::from(body), cap, cancel)
            .await
    }
}
