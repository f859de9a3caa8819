//! How every role reaches a model.
//!
//! One small trait, [`ModelClient`], with one required method that streams [`ModelEvent`]s.
//! Wire implementations (OpenAI Chat Completions, OpenAI Responses — also on Azure —,
//! Anthropic Messages, Google Gemini) live in this crate behind [`WireClient`]; the embedded
//! GGUF model lives in `braincode-llm-local` so that crates which do not run it never compile
//! llama.cpp.
//!
//! - [`resolve_candidates`] turns a role's model chain into usable candidates (with skip
//!   reasons), [`client_for`] builds the client of one candidate.
//! - Resilience is inside the clients: retries with backoff and `Retry-After` (also of a cut,
//!   malformed, empty or HTML reply, as long as nothing reached the caller), connect,
//!   first-byte, idle and total timeouts, a reply cap, cancellation, classified and sanitized
//!   errors ([`ClientOptions`]; settings merge: models.json entry > settings.json > default).
//!   A stream that breaks after part of the reply was delivered ends with
//!   [`ErrorKind::StreamInterrupted`]: re-issue the whole call.
//! - A server that ignores `stream: true` and answers one JSON object is decoded into the same
//!   events as a stream.
//! - [`test_connection`] and [`discover_models`] back `braincode models test|discover`.

mod classify;
mod client;
mod connection;
mod endpoint;
mod error;
mod images;
pub mod oauth;
mod options;
mod pump;
mod resolve;
pub mod sse;
mod thinking;
mod transport;
mod usage;
pub mod wire;
mod wire_client;

pub use classify::{
    HTML_DETAIL_LIMIT, TEXT_DETAIL_LIMIT, classify_http_error, classify_stream_error, clip_detail,
    looks_like_context_overflow, parse_retry_after, redact,
};
pub use client::{
    ChatMessage, ChatRequest, Completion, ContentPart, ModelClient, ModelEvent, ModelStream,
    ResponseSchema, StopReason, ToolCall, ToolSpec, collect_stream,
};
pub use connection::{
    CONNECTION_TEST_MAX_TOKENS, CONNECTION_TEST_PROMPT, CONNECTION_TEST_TIMEOUT, ConnectionFailure,
    ConnectionTestResult, DiscoveredModel, discover_models, test_connection,
};
pub use endpoint::{
    ANTHROPIC_BASE_URL, GOOGLE_BASE_URL, OPENAI_BASE_URL, base_url_for, is_keyless,
    is_loopback_url, normalize_anthropic_base_url, normalize_azure_base_url, normalize_base_url,
    normalize_google_base_url, normalize_openai_base_url,
};
pub use error::{ErrorKind, ModelError};
pub use images::{
    GeneratedImage, IMAGE_TIMEOUT, ImageClient, ImageMime, ImageRequest, MAX_IMAGE_BYTES,
    sniff_image_mime,
};
pub use options::{
    ClientOptions, DEFAULT_MAX_REPLY_BYTES, DEFAULT_REPLY_BYTES_PER_TOKEN, RetryNotice,
    RetryObserver,
};
pub use pump::REPLY_CUT_MARKER;
pub use resolve::{
    Candidate, CandidateSelection, ModelOutput, REASON_IMAGE_MODEL, REASON_NOT_CONFIGURED,
    REASON_NOT_IMAGE_MODEL, REASON_NOT_VISION, Requirements, SkippedCandidate, client_for,
    resolve_candidates,
};
pub use thinking::{anthropic_thinking_budget, gemini_thinking_budget, openai_reasoning_effort};
pub use usage::{anthropic_usage, gemini_usage, openai_usage};
pub use wire_client::WireClient;
