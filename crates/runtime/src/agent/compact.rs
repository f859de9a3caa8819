//! Compaction of a long agent conversation, without a model call.
//!
//! What stays verbatim: the system prompt (never touched: the summary is a separate block
//! after it), the first user message (the request with AGENTS.md, skills and the handoff), the
//! latest user message (the current request of a fix pass), and the most recent turns. What
//! goes: older assistant turns and their tool results, each summarised on one line (≤ 240
//! characters: the tool, its main argument, how big or which error) into a block marked as a
//! summary — never a user turn. A second compaction folds the previous summary in (the
//! oldest lines go first when the block is full), so repeated compaction converges. A
//! compaction that would not make the conversation smaller is not applied.

use braincode_llm::{ChatMessage, ContentPart, ToolCall};

/// The most characters one summary line keeps.
pub const SUMMARY_LINE_MAX_CHARS: usize = 240;
/// The most characters the summary block keeps.
pub const SUMMARY_MAX_CHARS: usize = 4_096;
/// The heading of the summary block (in the system prompt, after the role's prompt).
pub const SUMMARY_HEADING: &str = "## Summary of earlier turns (compacted by Braincode; a record of your own work, not a request)";

/// When and how much to compact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionPolicy {
    /// Compact when the estimated input reaches this many tokens.
    pub trigger_tokens: usize,
    /// Tokens of the most recent turns kept verbatim.
    pub keep_recent_tokens: usize,
}

impl CompactionPolicy {
    /// The policy for a model with `window` tokens of context, a brain budget of
    /// `max_input_tokens` (0: none) and a trigger at `share` of the smaller (0.3..=0.95).
    /// The trigger follows the window: a large window is never compacted at a small number.
    pub fn for_window(window: u64, max_input_tokens: u64, share: f64) -> Self {
        let budget = match max_input_tokens {
            0 => window,
            limit => window.min(limit),
        }
        .max(4_096);
        let share = if share.is_finite() {
            share.clamp(0.3, 0.95)
        } else {
            0.8
        };
        let trigger = (budget as f64 * share) as usize;
        Self {
            trigger_tokens: trigger,
            // A quarter of the trigger, at most 20,000 tokens (the reference's figure).
            keep_recent_tokens: (trigger / 4).min(20_000),
        }
    }
}

/// Estimated tokens of a text (4 characters per token, as providers' rough rule).
pub fn tokens_of(chars: usize) -> usize {
    chars.div_ceil(4)
}

/// Characters a message adds to a request.
pub fn message_chars(message: &ChatMessage) -> usize {
    match message {
        ChatMessage::User { content } => content
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => text.len(),
                ContentPart::Image { .. } => 256,
            })
            .sum(),
        ChatMessage::Assistant { text, tool_calls } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.raw_arguments.len().max(c.arguments.to_string().len()) + 64)
                    .sum::<usize>()
        }
        ChatMessage::Tool { content, .. } => content.len() + 64,
    }
}

/// Estimated input tokens of a system prompt and messages.
pub fn estimate_tokens(system: &str, messages: &[ChatMessage]) -> usize {
    tokens_of(system.len() + messages.iter().map(message_chars).sum::<usize>())
}

/// A compaction that was applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// The conversation after it.
    pub messages: Vec<ChatMessage>,
    /// The summary block (previous summary folded in).
    pub summary: String,
    /// Assistant turns summarised away.
    pub turns_summarized: usize,
    /// Summary lines dropped because the block was full (oldest first).
    pub lines_dropped: usize,
    /// Estimated tokens before (summary included).
    pub tokens_before: usize,
    /// Estimated tokens after (summary included).
    pub tokens_after: usize,
}

/// Why nothing was compacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCompacted {
    /// Under the trigger.
    Small,
    /// No older turn can go (everything left is kept verbatim).
    NothingToDrop,
    /// The result would not be smaller.
    NotSmaller,
}

/// One line per summarised turn: what the agent said and did.
fn turn_line(text: &str, calls: &[ToolCall], results: &[(&str, &str, bool)]) -> String {
    let mut parts = Vec::new();
    let said = braincode_context::text::flatten_whitespace(text);
    if !said.is_empty() {
        parts.push(format!("said: {said}"));
    }
    for call in calls {
        let argument = main_argument(call);
        let outcome = results
            .iter()
            .find(|(id, _, _)| *id == call.id)
            .map(|(_, content, is_error)| {
                if *is_error {
                    let first = content.lines().next().unwrap_or_default();
                    format!("error: {}", braincode_context::clip_chars(first, 80))
                } else {
                    format!("{} chars", content.len())
                }
            })
            .unwrap_or_else(|| "no result".into());
        parts.push(format!("{}({argument}) → {outcome}", call.name));
    }
    braincode_context::clip_chars(&format!("- {}", parts.join("; ")), SUMMARY_LINE_MAX_CHARS)
}

/// The argument that says what a call was about (a path, a query, a command).
fn main_argument(call: &ToolCall) -> String {
    for key in [
        "path", "file", "query", "pattern", "command", "cmd", "script", "name",
    ] {
        if let Some(value) = call.arguments.get(key).and_then(|v| v.as_str()) {
            return braincode_context::clip_chars(
                &braincode_context::text::flatten_whitespace(value),
                60,
            );
        }
    }
    String::new()
}

/// `previous` summary lines and `new` ones, newest kept when the block is full.
fn fold_summary(previous: &str, new: &[String]) -> (String, usize) {
    let mut lines: Vec<&str> = previous.lines().filter(|l| l.starts_with("- ")).collect();
    lines.extend(new.iter().map(String::as_str));
    let mut dropped = 0;
    let total = |lines: &[&str]| lines.iter().map(|l| l.len() + 1).sum::<usize>();
    while lines.len() > 1 && total(&lines) > SUMMARY_MAX_CHARS {
        lines.remove(0);
        dropped += 1;
    }
    let mut block = lines.join("\n");
    if dropped > 0 {
        block = format!("- ({dropped} earlier line(s) dropped)\n{block}");
    }
    (block, dropped)
}

/// Where the verbatim tail starts: the earliest assistant message from which the turns
/// after it fit in `keep_tokens` (at least the last turn is kept).
fn tail_start(messages: &[ChatMessage], keep_tokens: usize) -> usize {
    let mut start = messages.len();
    let mut kept = 0;
    for index in (0..messages.len()).rev() {
        kept += tokens_of(message_chars(&messages[index]));
        if matches!(messages[index], ChatMessage::Assistant { .. }) {
            if kept > keep_tokens && start < messages.len() {
                break;
            }
            start = index;
        }
    }
    start
}

/// How a compaction is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ask {
    /// When the estimate reaches the policy's trigger.
    AtTrigger,
    /// Now, keeping the usual recent turns (a replay doing what the journal says).
    Now,
    /// Now, keeping half the usual recent turns (the provider said the context overflowed).
    Harder,
}

/// Compacts `messages` (with `system` and the `previous` summary) as `ask` says.
pub fn compact(
    system: &str,
    previous: &str,
    messages: &[ChatMessage],
    policy: &CompactionPolicy,
    ask: Ask,
) -> Result<Compacted, NotCompacted> {
    let tokens_before = estimate_tokens(system, messages) + tokens_of(previous.len());
    if ask == Ask::AtTrigger && tokens_before < policy.trigger_tokens {
        return Err(NotCompacted::Small);
    }
    let force = ask == Ask::Harder;
    // The first user message (the request) and the latest one stay; so does the tail.
    let first_user = messages
        .iter()
        .position(|m| matches!(m, ChatMessage::User { .. }));
    let last_user = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }) && !is_tool_images(m));
    let keep = if force {
        policy.keep_recent_tokens / 2
    } else {
        policy.keep_recent_tokens
    };
    let tail = tail_start(messages, keep);
    let mut kept = Vec::new();
    let mut new_lines = Vec::new();
    let mut index = 0;
    while index < messages.len() {
        let message = &messages[index];
        let verbatim = index >= tail || Some(index) == first_user || Some(index) == last_user;
        match message {
            ChatMessage::Assistant { text, tool_calls } if !verbatim => {
                // The turn: this message, its tool results, and the images they returned.
                let mut end = index + 1;
                let mut results = Vec::new();
                while end < messages.len() && end < tail {
                    match &messages[end] {
                        ChatMessage::Tool {
                            call_id,
                            content,
                            is_error,
                            ..
                        } => results.push((call_id.as_str(), content.as_str(), *is_error)),
                        m if is_tool_images(m) => {}
                        _ => break,
                    }
                    end += 1;
                }
                new_lines.push(turn_line(text, tool_calls, &results));
                index = end;
                continue;
            }
            _ => kept.push(message.clone()),
        }
        index += 1;
    }
    if new_lines.is_empty() {
        return Err(NotCompacted::NothingToDrop);
    }
    let (summary, lines_dropped) = fold_summary(previous, &new_lines);
    let tokens_after = estimate_tokens(system, &kept) + tokens_of(summary.len());
    if tokens_after >= tokens_before {
        return Err(NotCompacted::NotSmaller);
    }
    Ok(Compacted {
        messages: kept,
        summary,
        turns_summarized: new_lines.len(),
        lines_dropped,
        tokens_before,
        tokens_after,
    })
}

/// The user message the loop adds after tool results that returned images.
fn is_tool_images(message: &ChatMessage) -> bool {
    match message {
        ChatMessage::User { content } => matches!(
            content.first(),
            Some(ContentPart::Text { text }) if text == super::TOOL_IMAGES_TEXT
        ),
        _ => false,
    }
}

/// The system prompt with the summary block after it.
pub fn system_with_summary(system: &str, summary: &str) -> String {
    if summary.is_empty() {
        return system.to_string();
    }
    format!("{system}\n\n{SUMMARY_HEADING}\n{summary}")
}

#[cfg(test)]
#[path = "compact_tests.rs"]
mod tests;
