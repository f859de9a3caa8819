//! The conversational fast path: skip the router model for small talk.

use std::sync::LazyLock;

use braincode_protocol::Role;
use regex::Regex;

use crate::clarify::has_continuity_context;
use crate::heuristic::RoutingPlan;

/// Longest prompt (trimmed, in characters) the fast path accepts.
pub const FAST_PATH_MAX_CHARS: usize = 240;

/// The routing reason recorded when the fast path is taken.
pub const FAST_PATH_REASON: &str = "conversational fast path; router brain skipped";

/// Signs that a prompt is about files in the workspace: a path with `/`, a back-ticked
/// token, a source-file extension, a snake_case identifier or a call such as `valid()`.
static WORKSPACE_ARTIFACT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"[A-Za-z0-9_.~-]/[A-Za-z0-9_.-]",
        r"|`[^`\s][^`]*`",
        r"|\.(?:rs|ts|tsx|js|jsx|mjs|cjs|py|go|java|kt|swift|c|h|cc|cpp|hpp|cs|rb|php|sh|sql|",
        r"json|toml|ya?ml|md|css|scss|html|vue|svelte|lock)\b",
        r"|\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]+\b",
        r"|\b[A-Za-z_][A-Za-z0-9_]*\(\)",
    ))
    .ok()
});

/// Whether `prompt` mentions workspace artifacts (see [`WORKSPACE_ARTIFACT`]).
pub fn mentions_workspace_artifact(prompt: &str) -> bool {
    // If the pattern were missing, assume an artifact: skipping the fast path is the safe side.
    WORKSPACE_ARTIFACT
        .as_ref()
        .is_none_or(|re| re.is_match(prompt))
}

/// Whether the router model can be skipped: no images; no change asked for (no edit verb); a
/// trimmed prompt of 1 to [`FAST_PATH_MAX_CHARS`] characters; no continuity context; no workspace artifact; a
/// heuristic plan whose primary is rush with only rush workers; no review; no clarification.
pub fn is_fast_path_eligible(prompt: &str, plan: &RoutingPlan, image_count: usize) -> bool {
    let trimmed = prompt.trim();
    let length = trimmed.chars().count();
    // Never a request to change something, whatever the brain's review setting.
    let signals = crate::keywords::Signals::detect(trimmed);
    image_count == 0
        && !signals.file_edit
        && (1..=FAST_PATH_MAX_CHARS).contains(&length)
        && !has_continuity_context(prompt)
        && !mentions_workspace_artifact(trimmed)
        && plan.primary == Role::Rush
        && plan.workers.iter().all(|w| w.role == Role::Rush)
        && !plan.requires_review
        && !plan.clarification.required
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_smells() {
        for prompt in [
            "look at src/main",
            "what does `run` do",
            "open lib.rs",
            "why is max_tokens 0",
            "explain how valid() checks a token",
        ] {
            assert!(mentions_workspace_artifact(prompt), "{prompt}");
        }
        for prompt in ["hello there", "what is a monad?", "thanks!", "你好"] {
            assert!(!mentions_workspace_artifact(prompt), "{prompt}");
        }
    }
}
