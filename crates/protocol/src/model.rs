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
    /// llama.cpp server, OpenRouter).
    #[default]
    #[serde(alias = "openai-chat-completions", alias = "openai")]
    OpenaiCompletions,
    /// OpenAI Responses API.
    OpenaiResponses,
    /// Anthropic Messages API.
    #[serde(alias = "anthropic")]
    AnthropicMessages,
    /// The embedded GGUF model, run in-process.
    Local,
}

impl ModelApi {
    /// The JSON name of the API.
    pub const fn as_str(self) -> &'static str {
        match self {
            ModelApi::OpenaiCompletions => "openai-completions",
            ModelApi::OpenaiResponses => "openai-responses",
            ModelApi::AnthropicMessages => "anthropic-messages",
            ModelApi::Local => "local",
        }
    }
}

/// One entry of the model catalogue (`models.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// for Anthropic).
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
}

fn default_context_window() -> u32 {
    128_000
}

fn default_true() -> bool {
    true
}

impl ModelDefinition {
    /// Whether this model runs in-process and needs no credential.
    pub fn is_local(&self) -> bool {
        self.api == ModelApi::Local
    }
}
