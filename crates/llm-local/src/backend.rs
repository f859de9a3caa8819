//! The process-wide llama.cpp backend.
//!
//! llama.cpp may be initialized once per process (`LlamaBackend::init` returns
//! `BackendAlreadyInitialized` the second time), so every model shares one backend kept in a
//! `OnceLock` for the life of the process.

use std::sync::OnceLock;

use braincode_llm::{ErrorKind, ModelError};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::{LogOptions, send_logs_to_tracing};

static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();

/// Environment filter word that turns llama.cpp's own log lines on (as `tracing` events of
/// target `llama-cpp-2`), e.g. `BRAINCODE_LOG=warn,llama-cpp-2=info`.
const LOG_TARGET: &str = "llama-cpp-2";

/// The shared backend, initialized on first use. llama.cpp's logging (which otherwise goes
/// straight to stderr) is routed into `tracing` when `BRAINCODE_LOG` names its target, and
/// silenced otherwise: its load and context messages are noise to a user.
pub(crate) fn backend() -> Result<&'static LlamaBackend, ModelError> {
    let result = BACKEND.get_or_init(|| {
        let wanted = std::env::var("BRAINCODE_LOG").is_ok_and(|filter| filter.contains(LOG_TARGET));
        send_logs_to_tracing(LogOptions::default().with_logs_enabled(wanted));
        LlamaBackend::init().map_err(|err| err.to_string())
    });
    result.as_ref().map_err(|err| {
        ModelError::new(
            ErrorKind::Config,
            format!("the llama.cpp backend failed to start: {err}"),
        )
    })
}
