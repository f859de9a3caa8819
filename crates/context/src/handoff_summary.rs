//! The bounded handoff summary (`summary_md`) an agent receives when it resumes.
//!
//! The summary is injected on every launch and written on every checkpoint, so it is bounded
//! without any model call (see the handoff-summary ADR): each turn renders as one line whose
//! text is clipped to [`TURN_LINE_MAX_CHARS`], and [`bound_handoff_summary`] caps the whole
//! document, keeping the objective and the newest turns. Both are pure and deterministic.

use serde::{Deserialize, Serialize};

use crate::budget::{HANDOFF_SUMMARY_MAX_CHARS, TURN_LINE_MAX_CHARS};
use crate::text::{char_len, clip_chars, flatten_whitespace};

/// Every turn line starts with this (`- **role:** text`).
pub const TURN_LINE_START: &str = "- **";

/// Longest role label shown in a turn line, in characters.
const ROLE_MAX_CHARS: usize = 40;

/// One turn of the conversation being handed off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffTurn {
    /// Who spoke (`user`, `assistant`, a role name, …).
    pub role: String,
    /// What was said; flattened to one line when rendered.
    pub text: String,
}

/// What a resumed agent needs: the objective and the recent turns, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffSummary {
    /// The goal of the session.
    pub objective: String,
    /// The turns, oldest first.
    pub turns: Vec<HandoffTurn>,
}

impl HandoffTurn {
    /// The role label as shown: one line, no `*`, at most 40 characters, `unknown` if empty.
    fn label(&self) -> String {
        let flat = flatten_whitespace(&self.role.replace('*', ""));
        if flat.is_empty() {
            "unknown".to_string()
        } else {
            clip_chars(&flat, ROLE_MAX_CHARS)
        }
    }

    /// The rendered line: `- **role:** text`, the text flattened and clipped to
    /// [`TURN_LINE_MAX_CHARS`] with `…`. The prefix is never clipped.
    pub fn render(&self) -> String {
        let text = clip_chars(&flatten_whitespace(&self.text), TURN_LINE_MAX_CHARS);
        let line = format!("{TURN_LINE_START}{}:** {text}", self.label());
        line.trim_end().to_string()
    }
}

impl HandoffSummary {
    /// Renders the summary as markdown: the objective line, a blank line, then one line per
    /// turn, oldest first. Not bounded as a whole; see [`HandoffSummary::render_bounded`].
    pub fn render(&self) -> String {
        let objective = flatten_whitespace(&self.objective);
        let objective = if objective.is_empty() {
            "(none)".to_string()
        } else {
            objective
        };
        let mut out = format!("**Objective:** {objective}");
        if !self.turns.is_empty() {
            out.push('\n');
            for turn in &self.turns {
                out.push('\n');
                out.push_str(&turn.render());
            }
        }
        out
    }

    /// Renders and bounds to [`HANDOFF_SUMMARY_MAX_CHARS`].
    pub fn render_bounded(&self) -> String {
        bound_handoff_summary(&self.render(), HANDOFF_SUMMARY_MAX_CHARS)
    }
}

/// Whether `line` is a turn line.
pub fn is_turn_line(line: &str) -> bool {
    line.starts_with(TURN_LINE_START)
}

/// The `- **role:**` prefix of a turn line (just `- **` if the label is not closed).
pub fn turn_prefix(line: &str) -> &str {
    let after = &line[TURN_LINE_START.len()..];
    match after.find("**") {
        Some(close) => &line[..TURN_LINE_START.len() + close + 2],
        None => TURN_LINE_START,
    }
}

/// Bounds a handoff summary to at most `max_chars` characters.
///
/// * A summary that already fits is returned unchanged, which makes the function idempotent:
///   `bound(bound(x)) == bound(x)`.
/// * Everything before the first turn line (the objective) is kept first. If it alone does
///   not fit, it is clipped with `…` and no turn is kept.
/// * Turns are kept newest first while they fit; the oldest are dropped. A turn is its line
///   plus any following non-turn lines.
/// * When not even the newest turn fits, it is hard-truncated with `…`, keeping its
///   `- **role:**` prefix intact; if the prefix itself cannot fit, the turn is dropped.
///
/// Lengths are counted in characters and no UTF-8 character is ever split.
pub fn bound_handoff_summary(summary_md: &str, max_chars: usize) -> String {
    if char_len(summary_md) <= max_chars {
        return summary_md.to_string();
    }
    let lines: Vec<&str> = summary_md.split('\n').collect();
    let Some(first_turn) = lines.iter().position(|line| is_turn_line(line)) else {
        return clip_chars(summary_md, max_chars);
    };
    let head = (first_turn > 0).then(|| lines[..first_turn].join("\n"));

    // Group the remaining lines into turns: a turn line and its continuation lines.
    let mut turns: Vec<Vec<&str>> = Vec::new();
    for line in &lines[first_turn..] {
        match turns.last_mut() {
            Some(turn) if !is_turn_line(line) => turn.push(line),
            _ => turns.push(vec![line]),
        }
    }

    let mut used = 0;
    let mut parts = 0;
    if let Some(head) = &head {
        used = char_len(head);
        if used > max_chars {
            return clip_chars(head, max_chars);
        }
        parts = 1;
    }

    let mut kept: Vec<String> = Vec::new();
    for turn in turns.iter().rev() {
        let text = turn.join("\n");
        let separator = usize::from(parts > 0);
        let cost = char_len(&text) + separator;
        if used + cost <= max_chars {
            used += cost;
            parts += 1;
            kept.push(text);
            continue;
        }
        if kept.is_empty() {
            let available = max_chars.saturating_sub(used + separator);
            // The prefix plus at least the ellipsis must fit.
            if available > char_len(turn_prefix(&text)) {
                kept.push(clip_chars(&text, available));
            }
        }
        break;
    }

    kept.reverse();
    let mut needs_separator = head.is_some();
    let mut out = head.unwrap_or_default();
    for text in kept {
        if needs_separator {
            out.push('\n');
        }
        needs_separator = true;
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(role: &str, text: &str) -> HandoffTurn {
        HandoffTurn {
            role: role.to_string(),
            text: text.to_string(),
        }
    }

    #[test]
    fn render_flattens_and_clips_each_turn() {
        let summary = HandoffSummary {
            objective: "Ship the\nlogin page".into(),
            turns: vec![
                turn("user", "please\n\nfix it"),
                turn("assistant", &"x".repeat(500)),
            ],
        };
        let md = summary.render();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "**Objective:** Ship the login page");
        assert_eq!(lines[1], "");
        assert_eq!(lines[2], "- **user:** please fix it");
        assert!(lines[3].starts_with("- **assistant:** xxx"));
        assert!(lines[3].ends_with('…'));
        assert_eq!(
            char_len(&lines[3]["- **assistant:** ".len()..]),
            TURN_LINE_MAX_CHARS
        );
    }

    #[test]
    fn bound_keeps_objective_and_newest_turns() {
        let summary = HandoffSummary {
            objective: "obj".into(),
            turns: (0..10)
                .map(|i| turn("user", &format!("turn {i}")))
                .collect(),
        };
        let md = summary.render();
        let bounded = bound_handoff_summary(&md, 60);
        assert!(char_len(&bounded) <= 60);
        assert!(bounded.starts_with("**Objective:** obj\n\n"));
        assert!(bounded.ends_with("- **user:** turn 9"));
        assert!(!bounded.contains("turn 0"));
        assert_eq!(bound_handoff_summary(&bounded, 60), bounded);
    }

    #[test]
    fn bound_truncates_an_overlong_newest_turn_after_its_prefix() {
        let md = format!("**Objective:** o\n\n- **assistant:** {}", "é".repeat(100));
        let bounded = bound_handoff_summary(&md, 50);
        assert_eq!(char_len(&bounded), 50);
        assert!(bounded.contains("\n- **assistant:** éé"));
        assert!(bounded.ends_with('…'));
        // Not even the prefix fits: the turn is dropped, the objective kept.
        let tiny = bound_handoff_summary(&md, 25);
        assert_eq!(tiny, "**Objective:** o\n");
    }

    #[test]
    fn bound_clips_an_overlong_objective() {
        let md = format!("**Objective:** {}\n\n- **user:** hi", "a".repeat(100));
        let bounded = bound_handoff_summary(&md, 30);
        assert_eq!(char_len(&bounded), 30);
        assert!(bounded.starts_with("**Objective:** aaa"));
        assert!(!bounded.contains("user"));
    }

    #[test]
    fn bound_handles_turns_without_a_head() {
        let md = "- **user:** one\n- **user:** two\n- **user:** three";
        assert_eq!(
            bound_handoff_summary(md, 33),
            "- **user:** two\n- **user:** three"
        );
        assert_eq!(bound_handoff_summary(md, 32), "- **user:** three");
        assert_eq!(bound_handoff_summary(md, 0), "");
    }
}
