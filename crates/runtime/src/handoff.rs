//! On-demand handoffs (`/handoff`, `braincode sessions handoff`) and their cold path: the
//! brain's `summarize` role writing the summary instead of the heuristic.
//!
//! The heuristic summary (pure, bounded, no model call) is the default and the fallback. The
//! model summarizer is asked only when settings.json `context.handoffSummarizer` is `model`
//! (or the caller forces it); it runs under one deadline (`context.handoffTimeoutMs`) across
//! the role's model chain, its reply is bounded like the heuristic one (≤ 4,096 characters,
//! lines ≤ 240), and when it fails the heuristic summary is written with the reason, so the
//! journal says which summarizer wrote each handoff and why.

use std::time::Duration;

use braincode_config::journal::{HANDOFF_MAX_CHARS, HandoffDraft};
use braincode_config::{HandoffSummarizer, Home};
use braincode_llm::{
    ChatMessage, ChatRequest, ClientOptions, ErrorKind, ModelError, collect_stream,
};
use braincode_protocol::{Role, SessionId, ThinkingLevel};
use tokio_util::sync::CancellationToken;

use crate::agent::AgentError;
use crate::models::ModelFactory;
use crate::run::fallback::{Fallback, StopRule, each_candidate};

/// Longest line of a model-written summary, in characters (the heuristic's turn bound).
const LINE_MAX_CHARS: usize = 240;
/// Most of a model-written summary, in characters: three quarters of the handoff bound, so
/// the runs after it still fit their turns when their handoffs extend it.
pub const MODEL_SUMMARY_MAX_CHARS: usize = HANDOFF_MAX_CHARS * 3 / 4;

/// How an on-demand handoff is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffOptions {
    /// What the next run should focus on (always writes a new handoff).
    pub focus: Option<String>,
    /// Who writes it (`None`: settings.json `context.handoffSummarizer`).
    pub summarizer: Option<HandoffSummarizer>,
    /// The brain whose `summarize` role writes it (`None`: the default brain).
    pub brain_id: Option<String>,
}

/// A handoff made on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeHandoff {
    /// The summary.
    pub summary: String,
    /// Whether the session's fresh handoff was reused (nothing was written).
    pub reused: bool,
    /// `heuristic` or `model:<id>`.
    pub summarizer: String,
    /// Why the model summarizer was asked for but not used.
    pub fallback: Option<String>,
}

/// Why no handoff could be made.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// The journal could not be read or appended to.
    #[error(transparent)]
    Journal(#[from] braincode_config::JournalError),
    /// settings.json could not be loaded.
    #[error(transparent)]
    Config(#[from] crate::ConfigError),
}

/// Makes session `id`'s handoff: reuses a fresh one (no focus asked), else writes a new
/// `handoff` record by the configured summarizer. Errors only when the journal cannot be
/// read or written, or the configuration cannot be loaded.
pub async fn make_handoff(
    home: &Home,
    id: &SessionId,
    options: &HandoffOptions,
) -> Result<MadeHandoff, HandoffError> {
    let focus = options.focus.as_deref();
    let (heuristic, transcript) = match braincode_config::journal::draft_handoff(home, id, focus)? {
        HandoffDraft::Fresh(summary) => {
            return Ok(MadeHandoff {
                summary,
                reused: true,
                summarizer: "fresh".into(),
                fallback: None,
            });
        }
        HandoffDraft::New {
            heuristic,
            transcript,
        } => (heuristic, transcript),
    };
    let settings = crate::config::load_settings(home)?;
    let summarizer = options
        .summarizer
        .unwrap_or(settings.context.handoff_summarizer);
    let (summary, who, fallback) = match summarizer {
        HandoffSummarizer::Heuristic => (heuristic, "heuristic".to_string(), None),
        HandoffSummarizer::Model => {
            let timeout = Duration::from_millis(settings.context.handoff_timeout_ms);
            let asked = Summarize {
                heuristic: &heuristic,
                transcript: &transcript,
                focus,
            };
            match model_summary(
                home,
                &settings,
                options.brain_id.as_deref(),
                &asked,
                timeout,
            )
            .await
            {
                Ok((summary, model)) => (summary, format!("model:{model}"), None),
                Err(reason) => (heuristic, "heuristic".to_string(), Some(reason)),
            }
        }
    };
    braincode_config::journal::append_handoff(home, id, &summary, focus, &who, fallback.clone())?;
    Ok(MadeHandoff {
        summary,
        reused: false,
        summarizer: who,
        fallback,
    })
}

/// What the summarizer is shown.
struct Summarize<'a> {
    heuristic: &'a str,
    transcript: &'a str,
    focus: Option<&'a str>,
}

const SUMMARIZER_PROMPT: &str = "You write the handoff summary of a coding session: what a \
new session needs to continue the work without the transcript. Markdown, at most 2,500 \
characters, every line under 200 characters. First line: the objective. Then: what was done \
and decided, the files changed, checks and review results, what is left and the next step. \
Keep the user's standing instructions word for word. No preamble, no closing remarks.";

/// The summary by the first model of the `summarize` chain that answers within `timeout`,
/// bounded, and that model's id; else why none did.
async fn model_summary(
    home: &Home,
    settings: &braincode_config::Settings,
    brain_id: Option<&str>,
    asked: &Summarize<'_>,
    timeout: Duration,
) -> Result<(String, String), String> {
    let presets = crate::config::load_brain_presets(home).map_err(|e| e.to_string())?;
    let brain = crate::config::select_brain(home, &presets, settings, brain_id)
        .map_err(|e| e.to_string())?
        .brain;
    let catalog = crate::config::load_models(home).map_err(|e| e.to_string())?;
    let factory = ModelFactory::new(home.clone(), catalog, ClientOptions::default(), None);
    let selection = factory.candidates(&brain.policy(Role::Summarize).chain(), false);
    if selection.usable.is_empty() {
        return Err("the brain's summarize role has no usable model".into());
    }
    let mut user = String::new();
    if let Some(focus) = asked.focus {
        user.push_str(&format!("Focus for the next session: {focus}\n\n"));
    }
    user.push_str(&format!(
        "## Mechanical summary\n{}\n\n## Session turns\n{}",
        asked.heuristic, asked.transcript
    ));
    let request = ChatRequest {
        system: Some(SUMMARIZER_PROMPT.into()),
        messages: vec![ChatMessage::user_text(user)],
        tools: Vec::new(),
        thinking: ThinkingLevel::Off,
        max_tokens: Some(1_500),
        temperature: Some(0.2),
        response_schema: None,
        cache_key: None,
    };
    let cancel = CancellationToken::new();
    let attempts = async {
        let mut failures = Vec::new();
        let outcome = each_candidate(
            &selection.usable,
            StopRule::SideCall,
            |candidate, _| {
                let (factory, request, cancel) = (&factory, request.clone(), cancel.clone());
                async move {
                    let reply = async {
                        let client = factory.client(&candidate).await?;
                        let stream = client.stream(request, cancel).await?;
                        collect_stream(stream, |_| {}).await
                    }
                    .await
                    .map_err(AgentError::Model)?;
                    if reply.text.trim().is_empty() {
                        let empty = ModelError::new(ErrorKind::EmptyReply, "an empty reply");
                        return Err(AgentError::Model(empty));
                    }
                    Ok((bound_model_summary(&reply.text), candidate.definition.id))
                }
            },
            |failure| failures.push(failure.brief()),
        )
        .await;
        match outcome {
            Fallback::Done(done) => Ok(done),
            // Nothing here cancels before the deadline below, which drops this future.
            Fallback::Cancelled | Fallback::Exhausted(_) => Err(format!(
                "the summarize role failed ({})",
                failures.join("; ")
            )),
        }
    };
    match tokio::time::timeout(timeout, attempts).await {
        Ok(result) => result,
        Err(_) => {
            cancel.cancel();
            Err(format!(
                "the summarize role timed out after {} ms",
                timeout.as_millis()
            ))
        }
    }
}

/// A model's summary held to the handoff bounds: each line at most [`LINE_MAX_CHARS`], the
/// whole at most [`MODEL_SUMMARY_MAX_CHARS`] (whole lines, the first ones kept, `…` when cut).
pub fn bound_model_summary(text: &str) -> String {
    let mut out = String::new();
    let mut used = 0;
    for line in text.trim().lines() {
        let line = braincode_context::clip_chars(line.trim_end(), LINE_MAX_CHARS);
        let len = line.chars().count() + usize::from(!out.is_empty());
        if used + len > MODEL_SUMMARY_MAX_CHARS - 2 {
            out.push_str("\n…");
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&line);
        used += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_summary_is_held_to_the_handoff_bounds() {
        let long_line = "x".repeat(1_000);
        let many: String = (0..400).map(|n| format!("- line {n}\n")).collect();
        let bounded = bound_model_summary(&format!("Objective\n{long_line}\n{many}"));
        assert!(
            bounded.chars().count() <= MODEL_SUMMARY_MAX_CHARS,
            "{}",
            bounded.len()
        );
        assert!(bounded.lines().all(|l| l.chars().count() <= LINE_MAX_CHARS));
        assert!(bounded.starts_with("Objective\n"));
        assert!(bounded.ends_with('…'));
        // Idempotent: a bounded summary stays as it is.
        assert_eq!(bound_model_summary(&bounded), bounded);
        assert_eq!(bound_model_summary("  short\n"), "short");
    }
}
