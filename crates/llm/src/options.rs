//! Client options: timeouts, retries and the retry observer.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::ErrorKind;

/// What a client is about to do after a failed attempt (for status lines and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// Catalogue id of the model.
    pub model: String,
    /// The attempt that failed (1 = the first request).
    pub attempt: u32,
    /// How long the client waits before the next attempt.
    pub delay: Duration,
    /// Whether `delay` came from the server's `Retry-After`.
    pub from_retry_after: bool,
    /// Class of the failure.
    pub kind: ErrorKind,
    /// HTTP status, if any.
    pub status: Option<u16>,
}

/// Called before each retry wait.
pub type RetryObserver = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// How a wire client behaves on the network.
#[derive(Clone)]
pub struct ClientOptions {
    /// Retries after the first attempt (429, 5xx, connection errors, timeouts before any event
    /// reached the caller). Default 2.
    pub max_retries: u32,
    /// TCP + TLS connect timeout. Default 10 s.
    pub connect_timeout: Duration,
    /// No bytes for this long (waiting for headers or between stream chunks) → timeout.
    /// Default 60 s.
    pub idle_timeout: Duration,
    /// Whole call, retries included. Default 10 min.
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
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_retries: 2,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(600),
            retry_base_delay: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            user_agent: format!("BrainCode/{}", env!("CARGO_PKG_VERSION")),
            on_retry: None,
        }
    }
}

impl ClientOptions {
    /// Options for `braincode models test`: no retries, 30 s for the whole call.
    pub fn for_connection_test() -> Self {
        Self {
            max_retries: 0,
            total_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            ..Self::default()
        }
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
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
