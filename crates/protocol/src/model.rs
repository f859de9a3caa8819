//! Model catalogue entries (`models.json`) and thinking levels.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How hard a model should think. `xhigh` and `max` clamp to `high` for consumers that only
/// know `off..high`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning.
    #[default]
    Off,
    /// Token-light reasoning.
    Minimal,
    /// Light reasoning.
    Low,
    /// Balanced.
    Medium,
    /// Deep.
    High,
    /// Deeper (clamped to high where unsupported).
    Xhigh,
    /// Deepest (clamped to high where unsupported).
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest first.
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// The JSON name of the level.
    pub const fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// Clamps to the `off..=high` range.
    pub const fn clamp_to_high(self) -> ThinkingLevel {
        match self {
            ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
            other => other,
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ThinkingLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        ThinkingLevel::ALL.iter().copied().find(|l| l.as_str().eq_ignore_ascii_case(wanted)).ok_or_else(
            || {
                format!(
                    "unknown thinking level {wanted:?}; valid levels: off, minimal, low, medium, high, xhigh, max"
                )
            },
        )
    }
}

/// Wire protocol a model is reached with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelApi {
    /// OpenAI Chat Completions and every compatible server (Ollama, LM Studio, vLLM,
    /// llama.cpp server, OpenRouter, Mistral's `/v1/chat/completions` — hence the `mistral`
    /// aliases, the names TypeScript Braincode catalogues give it).
    #[default]
    #[serde(
        alias = "openai-chat-completions",
        alias = "openai",
        alias = "mistral-conversations",
        alias = "mistral"
    )]
    OpenaiCompletions,
    /// OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages API.
    #[serde(alias = "anthropic")]
    AnthropicMessages,
    /// Google Gemini's native API (`streamGenerateContent`, `x-goog-api-key`).
    #[serde(alias = "google")]
    GoogleGenerativeAi,
    /// The OpenAI Responses API served by Azure OpenAI (`/openai/v1/responses`, `api-key`).
    AzureOpenaiResponses,
    /// The embedded GGUF model, run in-process.
    Local,
    /// OpenAI's Images API (`/images/generations`): image generation only, never a text turn.
    OpenaiImages,
}

impl ModelApi {
    /// Every API, in the order they are offered to users.
    pub const ALL: [ModelApi; 7] = [
        ModelApi::OpenaiCompletions,
        ModelApi::OpenaiResponses,
        ModelApi::AnthropicMessages,
        ModelApi::GoogleGenerativeAi,
        ModelApi::AzureOpenaiResponses,
        ModelApi::Local,
        ModelApi::OpenaiImages,
    ];

    /// The JSON name of the API.
    pub const fn as_str(self) -> &'static str {
        match self {
            ModelApi::OpenaiCompletions => "openai-completions",
            ModelApi::OpenaiResponses => "openai-responses",
            ModelApi::AnthropicMessages => "anthropic-messages",
            ModelApi::GoogleGenerativeAi => "google-generative-ai",
            ModelApi::AzureOpenaiResponses => "azure-openai-responses",
            ModelApi::Local => "local",
            ModelApi::OpenaiImages => "openai-images",
        }
    }

    /// Whether the API generates images (and never answers a text turn).
    pub const fn is_image_generation(self) -> bool {
        match self {
            ModelApi::OpenaiImages => true,
            ModelApi::OpenaiCompletions
            | ModelApi::OpenaiResponses
            | ModelApi::AnthropicMessages
            | ModelApi::GoogleGenerativeAi
            | ModelApi::AzureOpenaiResponses
            | ModelApi::Local => false,
        }
    }
}

/// One entry of the model catalogue (`models.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelDefinition {
    /// Catalogue id, conventionally `<provider>/<model>` (what brains refer to).
    pub id: String,
    /// Provider name; also the key of its credential in auth.json.
    pub provider: String,
    /// The model name sent on the wire.
    pub model_id: String,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Wire protocol.
    #[serde(default)]
    pub api: ModelApi,
    /// Endpoint base URL (normalized per API: `/v1` ensured for OpenAI-compatible, stripped
    /// for Anthropic, `/v1beta` ensured for Google, `/openai/v1` ensured for Azure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Context window in tokens.
    #[serde(default = "default_context_window")]
    pub context_window: u32,
    /// Maximum output tokens per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whether the model can call tools.
    #[serde(default = "default_true")]
    pub supports_tools: bool,
    /// Whether the model accepts images.
    #[serde(default)]
    pub supports_vision: bool,
    /// Default thinking level when a policy does not set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_thinking_level: Option<ThinkingLevel>,
    /// Name of the environment variable holding the API key (overrides the provider rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Local models: path of the `.gguf` file (default: the pulled model in `<home>/models`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Local models: inference threads (pinned for reproducible output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Network time limits of this model's calls (`timeouts: {connectMs, firstByteMs, idleMs,
    /// totalMs}`); each one overrides `settings.json → models.timeouts`.
    #[serde(default, skip_serializing_if = "ModelTimeouts::is_empty")]
    pub timeouts: ModelTimeouts,
    /// Retries after a failed first attempt (overrides `settings.json → models.maxRetries`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Largest reply kept, in bytes of text, reasoning and tool arguments (overrides
    /// `settings.json → models.maxReplyBytes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<u64>,
    /// Provider prompt caching of this model's requests (overrides `settings.json →
    /// models.promptCache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCache>,
    /// Prices in US dollars per million tokens (`braincode usage`, the report's cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<ModelPricing>,
}

/// A model's prices, in US dollars per million tokens. Cache prices default to the input
/// price when unset.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPricing {
    /// Prompt tokens not served from cache.
    pub input: f64,
    /// Generated tokens (reasoning included).
    pub output: f64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl ModelPricing {
    /// The cost of `usage` in US dollars.
    pub fn cost(&self, usage: &crate::Usage) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(usage.input, self.input)
            + per(usage.output, self.output)
            + per(usage.cache_read, self.cache_read.unwrap_or(self.input))
            + per(usage.cache_write, self.cache_write.unwrap_or(self.input))
    }

    /// The cost of `usage` in millionths of a US dollar, rounded (what `token_usage` records
    /// carry).
    pub fn cost_micro_usd(&self, usage: &crate::Usage) -> u64 {
        (self.cost(usage) * 1_000_000.0).round() as u64
    }

    /// The first price that is negative or not a number, by its JSON name.
    pub fn invalid_field(&self) -> Option<&'static str> {
        let bad = |price: f64| !price.is_finite() || price < 0.0;
        [
            ("input", Some(self.input)),
            ("output", Some(self.output)),
            ("cacheRead", self.cache_read),
            ("cacheWrite", self.cache_write),
        ]
        .into_iter()
        .find_map(|(name, price)| price.filter(|p| bad(*p)).map(|_| name))
    }
}

/// Network time limits of model calls, in milliseconds. An unset field falls back to the next
/// layer: a `models.json` entry wins over `settings.json → models`, which wins over the
/// built-in default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelTimeouts {
    /// TCP + TLS connect (built-in default 10 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ms: Option<u64>,
    /// From sending the request to the response headers and the first event of the reply
    /// (built-in default 60 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_ms: Option<u64>,
    /// Longest wait for the next event once the response started; SSE keep-alive comments do
    /// not count (built-in default 60 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_ms: Option<u64>,
    /// The whole call, retries included (built-in default 600 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_ms: Option<u64>,
}

impl ModelTimeouts {
    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Each field of `self`, or of `fallback` where `self` has none.
    pub fn or(self, fallback: ModelTimeouts) -> ModelTimeouts {
        ModelTimeouts {
            connect_ms: self.connect_ms.or(fallback.connect_ms),
            first_byte_ms: self.first_byte_ms.or(fallback.first_byte_ms),
            idle_ms: self.idle_ms.or(fallback.idle_ms),
            total_ms: self.total_ms.or(fallback.total_ms),
        }
    }
}

/// Network settings of model calls: `settings.json → models` (defaults for every model) or
/// the same fields of one `models.json` entry (see [`ModelDefinition::call_settings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ModelCallSettings {
    /// Time limits.
    #[serde(skip_serializing_if = "ModelTimeouts::is_empty")]
    pub timeouts: ModelTimeouts,
    /// Retries after a failed first attempt (built-in default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Largest reply kept, in bytes (built-in default 4 MiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reply_bytes: Option<u64>,
    /// Provider prompt caching (built-in default `5m`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache: Option<PromptCache>,
}

/// Provider prompt caching: `"5m"` (the default) or `"1h"` keeps the stable start of each
/// request (the role's system prompt and tool schemas, then the conversation so far) cached
/// for that long where the wire has explicit caching (Anthropic `cache_control`); OpenAI
/// requests carry a `prompt_cache_key` per role and project instead. `"off"` sends neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PromptCache {
    /// No cache markers, no cache key.
    #[serde(rename = "off")]
    Off,
    /// Cached for about five minutes (Anthropic's `ephemeral` default).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Cached for about an hour (Anthropic `ttl: "1h"`; writes cost more).
    #[serde(rename = "1h")]
    OneHour,
}

impl PromptCache {
    /// Whether requests carry cache markers or a cache key.
    pub const fn is_on(self) -> bool {
        !matches!(self, PromptCache::Off)
    }
}

impl ModelCallSettings {
    /// Each field of `self`, or of `fallback` where `self` has none.
    pub fn or(self, fallback: ModelCallSettings) -> ModelCallSettings {
        ModelCallSettings {
            timeouts: self.timeouts.or(fallback.timeouts),
            max_retries: self.max_retries.or(fallback.max_retries),
            max_reply_bytes: self.max_reply_bytes.or(fallback.max_reply_bytes),
            prompt_cache: self.prompt_cache.or(fallback.prompt_cache),
        }
    }

    /// The path (relative to the object holding these fields, e.g. `timeouts.idleMs`) of the
    /// first value that cannot work: a time limit or reply cap of 0.
    pub fn invalid_field(&self) -> Option<&'static str> {
        let t = &self.timeouts;
        [
            (t.connect_ms, "timeouts.connectMs"),
            (t.first_byte_ms, "timeouts.firstByteMs"),
            (t.idle_ms, "timeouts.idleMs"),
            (t.total_ms, "timeouts.totalMs"),
            (self.max_reply_bytes, "maxReplyBytes"),
        ]
        .into_iter()
        .find_map(|(value, path)| (value == Some(0)).then_some(path))
    }
}

fn default_context_window() -> u32 {
    128_000
}

fn default_true() -> bool {
    true
}

/// An entry with an empty id, provider and model name, and every other field at its
/// `models.json` default: a base for struct literals (`..ModelDefinition::default()`), so
/// they keep compiling when a field is added.
impl Default for ModelDefinition {
    fn default() -> Self {
        Self {
            id: String::new(),
            provider: String::new(),
            model_id: String::new(),
            name: String::new(),
            api: ModelApi::default(),
            base_url: None,
            headers: BTreeMap::new(),
            context_window: default_context_window(),
            max_tokens: None,
            supports_tools: default_true(),
            supports_vision: false,
            default_thinking_level: None,
            api_key_env: None,
            path: None,
            threads: None,
            timeouts: ModelTimeouts::default(),
            max_retries: None,
            max_reply_bytes: None,
            prompt_cache: None,
            pricing: None,
        }
    }
}

impl ModelDefinition {
    /// Whether this model runs in-process and needs no credential.
    pub fn is_local(&self) -> bool {
        self.api == ModelApi::Local
    }

    /// Whether this model generates images (`openai-images`) and so never serves a text role.
    pub fn is_image_model(&self) -> bool {
        self.api.is_image_generation()
    }

    /// The network settings this entry sets itself (unset fields fall back to settings.json).
    pub fn call_settings(&self) -> ModelCallSettings {
        ModelCallSettings {
            timeouts: self.timeouts,
            max_retries: self.max_retries,
            max_reply_bytes: self.max_reply_bytes,
            prompt_cache: self.prompt_cache,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_and_aliases_round_trip() {
        for api in ModelApi::ALL {
            let json = serde_json::to_value(api).unwrap_or_default();
            assert_eq!(json, api.as_str());
            assert_eq!(serde_json::from_value::<ModelApi>(json).ok(), Some(api));
        }
        let aliases = [
            ("openai", ModelApi::OpenaiCompletions),
            ("mistral-conversations", ModelApi::OpenaiCompletions),
            ("mistral", ModelApi::OpenaiCompletions),
            ("anthropic", ModelApi::AnthropicMessages),
            ("google", ModelApi::GoogleGenerativeAi),
        ];
        for (alias, api) in aliases {
            let parsed = serde_json::from_value::<ModelApi>(serde_json::json!(alias)).ok();
            assert_eq!(parsed, Some(api), "{alias}");
        }
    }
}
