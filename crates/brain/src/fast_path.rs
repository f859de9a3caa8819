//! The conversational fast path: skip the router model for small talk.

use std::sync::LazyLock;

use braincode_protocol::Role;
use regex_lite::Regex;

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

/// How much of a prompt [`mentions_workspace_artifact`] reads: a prompt longer than this that
/// names no file in its first 32 KB is taken to name none (the match is linear in the text,
/// ~0.1 ms per KB).
const ARTIFACT_SCAN_BYTES: usize = 32 * 1024;

/// Whether `prompt` mentions workspace artifacts (see [`WORKSPACE_ARTIFACT`]), in its first
/// [`ARTIFACT_SCAN_BYTES`].
pub fn mentions_workspace_artifact(prompt: &str) -> bool {
    let mut end = prompt.len().min(ARTIFACT_SCAN_BYTES);
    while !prompt.is_char_boundary(end) {
        end -= 1;
    }
    // If the pattern were missing, assume an artifact: skipping the fast path is the safe side.
    WORKSPACE_ARTIFACT
        .as_ref()
        .is_none_or(|re| re.is_match(&prompt[..end]))
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

    #[test]
    fn only_a_long_prompts_first_32_kb_is_read_cut_at_a_character() {
        let prose = "la forêt est très calme ce soir ".repeat(1_500);
        assert!(prose.len() > ARTIFACT_SCAN_BYTES);
        assert!(mentions_workspace_artifact(&format!(
            "see src/main.rs {prose}"
        )));
        assert!(!mentions_workspace_artifact(&format!(
            "{prose} see src/main.rs"
        )));
        // A cut that falls inside a multi-byte character does not panic.
        let wide = "é".repeat(ARTIFACT_SCAN_BYTES);
        assert!(!mentions_workspace_artifact(&wide));
    }
}
