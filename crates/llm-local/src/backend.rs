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
        // llama.cpp's start-up already runs its SIMD code: check the CPU first, so a CPU
        // without the features it was built for gets this error, not an illegal instruction.
        let missing = missing_cpu_features();
        if !missing.is_empty() {
            return Err(format!(
                "this CPU lacks {}, which the embedded model's llama.cpp was built to use; \
                 rebuild with GGML_AVX=OFF GGML_AVX2=OFF GGML_FMA=OFF GGML_F16C=OFF GGML_BMI2=OFF \
                 in the environment (slower, but it runs here), or use a remote model",
                missing.join(", ")
            ));
        }
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

/// Whether llama.cpp was built to use the x86 feature of the `GGML_*` option whose build-time
/// value is `option`: ggml's CMake turns AVX, AVX2, FMA, F16C and BMI2 (x86-64-v3) on unless
/// the option is set to OFF in the build's environment.
#[cfg(target_arch = "x86_64")]
fn built_with(option: Option<&str>) -> bool {
    !option.is_some_and(|value| value.eq_ignore_ascii_case("off"))
}

/// The CPU features llama.cpp was built to use that this CPU does not have.
fn missing_cpu_features() -> Vec<&'static str> {
    #[allow(unused_mut)]
    let mut missing = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        let wanted = [
            (
                built_with(option_env!("GGML_AVX")),
                "avx",
                std::is_x86_feature_detected!("avx"),
            ),
            (
                built_with(option_env!("GGML_AVX2")),
                "avx2",
                std::is_x86_feature_detected!("avx2"),
            ),
            (
                built_with(option_env!("GGML_FMA")),
                "fma",
                std::is_x86_feature_detected!("fma"),
            ),
            (
                built_with(option_env!("GGML_F16C")),
                "f16c",
                std::is_x86_feature_detected!("f16c"),
            ),
            (
                built_with(option_env!("GGML_BMI2")),
                "bmi2",
                std::is_x86_feature_detected!("bmi2"),
            ),
        ];
        missing.extend(
            wanted
                .iter()
                .filter(|(built, _, present)| *built && !*present)
                .map(|(_, name, _)| *name),
        );
    }
    missing
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn features_count_unless_turned_off_at_build_time() {
        assert!(super::built_with(None), "ggml's default is on");
        assert!(super::built_with(Some("ON")));
        assert!(!super::built_with(Some("OFF")) && !super::built_with(Some("off")));
    }
}
