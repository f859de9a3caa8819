//! Client options: timeouts, retries, the reply cap and the retry observer.
//!
//! Values come in three layers: a `models.json` entry (its `timeouts`, `maxRetries`,
//! `maxReplyBytes`) wins over `settings.json → models`, which wins over the built-in defaults
//! of [`ClientOptions::default`]. Callers apply settings with [`ClientOptions::with_settings`];
//! [`crate::WireClient::new`] applies the entry's own values itself
//! ([`ClientOptions::for_model`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use braincode_protocol::{ModelCallSettings, ModelDefinition, PromptCache};

use crate::ErrorKind;

/// Default of [`ClientOptions::max_reply_bytes`]: 4 MiB.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 4 * 1024 * 1024;
/// Default of [`ClientOptions::reply_bytes_per_token`].
pub const DEFAULT_REPLY_BYTES_PER_TOKEN: u32 = 16;

/// What a client is about to do after a failed attempt (for status lines and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// Catalogue id of the model.
    pub model: String,
    /// The attempt that failed (1 = the first request).
    pub attempt: u32,
    /// How long the client waits before the next attempt.
    pub delay: Duration,
    /// Whether `delay` came from the server (`Retry-After`, or the `RetryInfo` of a Google
    /// error body).
    pub from_retry_after: bool,
    /// Class of the failure.
    pub kind: ErrorKind,
    /// HTTP status, if any.
    pub status: Option<u16>,
    /// What failed (sanitized), e.g. "malformed stream event …" or "HTTP 503: …".
    pub message: String,
}

/// Called before each retry wait.
pub type RetryObserver = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// How a wire client behaves on the network.
#[derive(Clone)]
pub struct ClientOptions {
    /// Retries after the first attempt, for failures before any event reached the caller:
    /// 429, 5xx, connection errors, timeouts, and broken replies (a cut, malformed, empty or
    /// HTML answer). Default 2. Settings: `maxRetries`.
    pub max_retries: u32,
    /// TCP + TLS connect timeout. Default 10 s. Settings: `timeouts.connectMs`.
    pub connect_timeout: Duration,
    /// From sending the request to the response headers and the first `data:` line of the
    /// reply. Default 60 s. Settings: `timeouts.firstByteMs`.
    pub first_byte_timeout: Duration,
    /// Longest wait for the next `data:` line once the response headers arrived (also before
    /// the first one). SSE comment lines (`: keep-alive`) do not reset it, so a server that
    /// only sends keep-alives fails after this long. Default 60 s. Settings: `timeouts.idleMs`.
    pub idle_timeout: Duration,
    /// Whole call, retries included. Default 10 min. Settings: `timeouts.totalMs`.
    pub total_timeout: Duration,
    /// First backoff step; doubles per attempt, with jitter. Default 500 ms.
    pub retry_base_delay: Duration,
    /// Longest computed backoff. Default 8 s.
    pub max_backoff: Duration,
    /// Longest server-requested `Retry-After` the client will wait; a longer request fails the
    /// call at once (so a fallback model can take over). Default 60 s.
    pub max_retry_after: Duration,
    /// `User-Agent` header.
    pub user_agent: String,
    /// Told about every retry before the wait starts.
    pub on_retry: Option<RetryObserver>,
    /// Largest reply kept, counting the bytes of text, reasoning and tool arguments. Past it
    /// the client stops reading, drops the connection and ends the reply with what it has, a
    /// marker starting with [`crate::REPLY_CUT_MARKER`] and stop reason `MaxTokens`.
    /// Default 4 MiB. Settings: `maxReplyBytes`.
    pub max_reply_bytes: usize,
    /// When a call sets max tokens, its text and tool arguments are also capped at
    /// `max_tokens × reply_bytes_per_token` bytes (never above `max_reply_bytes`), which stops
    /// a server that ignores the limit. Default 16.
    pub reply_bytes_per_token: u32,
    /// Provider prompt caching. Default `5m`. Settings: `promptCache`.
    pub prompt_cache: PromptCache,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_retries: 2,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(600),
            retry_base_delay: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            user_agent: format!("BrainCode/{}", env!("CARGO_PKG_VERSION")),
            on_retry: None,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            reply_bytes_per_token: DEFAULT_REPLY_BYTES_PER_TOKEN,
            prompt_cache: PromptCache::default(),
        }
    }
}

impl ClientOptions {
    /// Options for `braincode models test`: no retries, 30 s for the whole call.
    pub fn for_connection_test() -> Self {
        Self {
            max_retries: 0,
            total_timeout: Duration::from_secs(30),
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            ..Self::default()
        }
    }

    /// These options with every value `settings` sets (`settings.json → models`). Values that
    /// cannot work (a time limit or cap of 0, see [`ModelCallSettings::invalid_field`]) are
    /// ignored here; the settings loader should report them.
    pub fn with_settings(mut self, settings: &ModelCallSettings) -> Self {
        let ms = |value: Option<u64>| value.filter(|v| *v > 0).map(Duration::from_millis);
        let t = &settings.timeouts;
        if let Some(value) = ms(t.connect_ms) {
            self.connect_timeout = value;
        }
        if let Some(value) = ms(t.first_byte_ms) {
            self.first_byte_timeout = value;
        }
        if let Some(value) = ms(t.idle_ms) {
            self.idle_timeout = value;
        }
        if let Some(value) = ms(t.total_ms) {
            self.total_timeout = value;
        }
        if let Some(value) = settings.max_retries {
            self.max_retries = value;
        }
        if let Some(value) = settings.max_reply_bytes.filter(|v| *v > 0) {
            self.max_reply_bytes = usize::try_from(value).unwrap_or(usize::MAX);
        }
        if let Some(value) = settings.prompt_cache {
            self.prompt_cache = value;
        }
        self
    }

    /// The options one model runs with: these (built-in defaults overlaid with settings.json)
    /// overlaid with the values its `models.json` entry sets.
    pub fn for_model(&self, definition: &ModelDefinition) -> Self {
        self.clone().with_settings(&definition.call_settings())
    }

    /// The reply cap of a call that asked for at most `max_tokens` output tokens.
    pub(crate) fn reply_cap(&self, max_tokens: Option<u32>) -> ReplyCap {
        let total = self.max_reply_bytes.max(1);
        let content = max_tokens
            .map(|tokens| {
                (tokens as usize)
                    .saturating_mul(self.reply_bytes_per_token.max(1) as usize)
                    .max(1)
            })
            .filter(|bytes| *bytes < total)
            .map(|bytes| (bytes, max_tokens.unwrap_or_default()));
        ReplyCap { total, content }
    }

    /// Sets the retry observer.
    pub fn with_retry_observer(
        mut self,
        observer: impl Fn(&RetryNotice) + Send + Sync + 'static,
    ) -> Self {
        self.on_retry = Some(Arc::new(observer));
        self
    }

    /// The backoff before retry number `attempt` (1-based): `base × 2^(attempt-1)`, capped,
    /// with "equal jitter" (half fixed, half random) so parallel workers spread out.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .retry_base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
        let capped = exp.min(self.max_backoff);
        let half = capped / 2;
        let jitter = half.mul_f64(rand::random::<f64>());
        half + jitter
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("max_retries", &self.max_retries)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .field("retry_base_delay", &self.retry_base_delay)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("user_agent", &self.user_agent)
            .field("on_retry", &self.on_retry.as_ref().map(|_| "<observer>"))
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("reply_bytes_per_token", &self.reply_bytes_per_token)
            .finish()
    }
}

/// How much of a reply is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplyCap {
    /// Text + reasoning + tool arguments (`max_reply_bytes`).
    pub total: usize,
    /// Text + tool arguments, derived from the call's max tokens: (bytes, max tokens). Only
    /// set when it is tighter than `total`.
    pub content: Option<(usize, u32)>,
}

/// A setting the user can raise, named in error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Setting {
    ConnectMs,
    FirstByteMs,
    IdleMs,
    TotalMs,
    MaxRetries,
    MaxReplyBytes,
}

impl Setting {
    /// The field path under a models.json entry or `settings.json → models`.
    pub(crate) const fn path(self) -> &'static str {
        match self {
            Setting::ConnectMs => "timeouts.connectMs",
            Setting::FirstByteMs => "timeouts.firstByteMs",
            Setting::IdleMs => "timeouts.idleMs",
            Setting::TotalMs => "timeouts.totalMs",
            Setting::MaxRetries => "maxRetries",
            Setting::MaxReplyBytes => "maxReplyBytes",
        }
    }

    fn is_set_in(self, settings: &ModelCallSettings) -> bool {
        let t = &settings.timeouts;
        match self {
            Setting::ConnectMs => t.connect_ms.is_some(),
            Setting::FirstByteMs => t.first_byte_ms.is_some(),
            Setting::IdleMs => t.idle_ms.is_some(),
            Setting::TotalMs => t.total_ms.is_some(),
            Setting::MaxRetries => settings.max_retries.is_some(),
            Setting::MaxReplyBytes => settings.max_reply_bytes.is_some(),
        }
    }

    /// Where to change it: the model's own entry when it sets the value (it wins there),
    /// otherwise settings.json for every model, or the entry for this model only.
    pub(crate) fn where_to_change(self, model_id: &str, model: &ModelCallSettings) -> String {
        let path = self.path();
        if self.is_set_in(model) {
            format!("models.json → {model_id}.{path}")
        } else {
            format!(
                "settings.json → models.{path} (every model) or models.json → {model_id}.{path} (this model)"
            )
        }
    }
}

/// A duration as seconds for messages: `0.3s`, `60s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::ModelTimeouts;

    #[test]
    fn model_values_win_over_settings_which_win_over_defaults() {
        let settings = ModelCallSettings {
            timeouts: ModelTimeouts {
                idle_ms: Some(5_000),
                total_ms: Some(90_000),
                ..ModelTimeouts::default()
            },
            max_retries: Some(4),
            max_reply_bytes: Some(0),
            prompt_cache: None,
        };
        let definition: ModelDefinition = serde_json::from_value(serde_json::json!({
            "id": "p/m", "provider": "p", "modelId": "m",
            "timeouts": {"idleMs": 1_500, "firstByteMs": 2_000}, "maxRetries": 0,
        }))
        .unwrap();
        let options = ClientOptions::default()
            .with_settings(&settings)
            .for_model(&definition);
        assert_eq!(options.idle_timeout, Duration::from_millis(1_500), "model");
        assert_eq!(options.first_byte_timeout, Duration::from_secs(2), "model");
        assert_eq!(options.total_timeout, Duration::from_secs(90), "settings");
        assert_eq!(options.connect_timeout, Duration::from_secs(10), "default");
        assert_eq!(options.max_retries, 0, "model, even 0");
        assert_eq!(
            options.max_reply_bytes, DEFAULT_MAX_REPLY_BYTES,
            "a 0 cap is ignored"
        );
    }

    #[test]
    fn reply_cap_from_max_tokens_never_exceeds_the_byte_cap() {
        let options = ClientOptions {
            max_reply_bytes: 1_000,
            ..ClientOptions::default()
        };
        assert_eq!(
            options.reply_cap(None),
            ReplyCap {
                total: 1_000,
                content: None
            }
        );
        assert_eq!(options.reply_cap(Some(10)).content, Some((160, 10)));
        assert_eq!(options.reply_cap(Some(100)).content, None, "1600 > 1000");
    }

    #[test]
    fn settings_are_named_where_they_can_be_changed() {
        let model = ModelCallSettings {
            max_retries: Some(1),
            ..ModelCallSettings::default()
        };
        assert_eq!(
            Setting::MaxRetries.where_to_change("p/m", &model),
            "models.json → p/m.maxRetries"
        );
        assert_eq!(
            Setting::IdleMs.where_to_change("p/m", &model),
            "settings.json → models.timeouts.idleMs (every model) or models.json → p/m.timeouts.idleMs (this model)"
        );
        assert_eq!(seconds(Duration::from_millis(300)), "0.3s");
        assert_eq!(seconds(Duration::from_secs(60)), "60s");
    }

    #[test]
    fn backoff_grows_and_stays_within_bounds() {
        let options = ClientOptions::default();
        for attempt in 1..=10 {
            let full = options
                .retry_base_delay
                .saturating_mul(1 << (attempt - 1))
                .min(options.max_backoff);
            let delay = options.backoff(attempt);
            assert!(
                delay >= full / 2 && delay <= full,
                "attempt {attempt}: {delay:?}"
            );
        }
    }
}
