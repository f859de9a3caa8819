//! The session handoff: a bounded summary a later run (`@@id`, `--session`) continues from,
//! made without a model (the heuristic summarizer of the handoff-summary ADR).
//!
//! Each run adds its turns — the request, then the answer (or the error), the changed files,
//! the checks and the review — to the latest handoff of the session, and the result is bounded
//! ([`bound_handoff_summary`]: ≤ 4,096 characters, each turn line ≤ 240, the objective and the
//! newest turns kept). Building is pure and idempotent: the same journal gives the same text.
//!
//! A handoff is *fresh* when no run started after it (the reference's rule): `@@id` then
//! inlines it as it is, without reading the rest of the journal's records or calling a model.

use braincode_context::{HandoffSummary, HandoffTurn, bound_handoff_summary};
use braincode_protocol::{
    FinalReport, FinalStatus, HandoffTrigger, JournalEntry, Record, SessionId,
};

use super::read_journal;
use crate::Home;
use crate::JournalError;

/// The handoff summary's bound, in characters.
pub const HANDOFF_MAX_CHARS: usize = braincode_context::budget::HANDOFF_SUMMARY_MAX_CHARS;

/// The turns one finished run adds: its request, its answer or error, and what it changed,
/// checked and was told by its review.
pub fn report_turns(report: &FinalReport) -> Vec<HandoffTurn> {
    let turn = |role: &str, text: String| HandoffTurn {
        role: role.to_string(),
        text,
    };
    let mut turns = vec![turn("user", report.task.clone())];
    match (&report.error, report.status) {
        (Some(error), _) => turns.push(turn(
            "error",
            format!("{}: {error}", report.status.as_str()),
        )),
        (None, FinalStatus::NeedsClarification) => {
            turns.push(turn("question", report.model_summary.clone()));
        }
        (None, _) => {
            let role = report.routing.primary_role.as_str();
            turns.push(turn(role, report.model_summary.clone()));
        }
    }
    if let Some(patch) = report.patch.as_ref().filter(|p| p.has_patch_activity) {
        let files: Vec<String> = patch
            .changed_files
            .iter()
            .map(|f| format!("{} {}", f.status.trim(), f.path))
            .collect();
        turns.push(turn("changes", files.join(", ")));
    }
    if let Some(checks) = &report.checks {
        let status = checks.status.label();
        let detail = if checks.results.is_empty() {
            checks.reason.clone().unwrap_or_default()
        } else {
            checks
                .results
                .iter()
                .map(|r| format!("{} {}", r.name, if r.passed { "ok" } else { "FAILED" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        turns.push(turn("checks", format!("{status}: {detail}")));
    }
    if let Some(review) = &report.review {
        let mut text = review.decision.as_str().to_string();
        if let Some(rationale) = &review.rationale {
            text = format!("{text}: {rationale}");
        }
        if !review.required_changes.is_empty() {
            text = format!("{text}; required: {}", review.required_changes.join("; "));
        }
        turns.push(turn("review", text));
    }
    turns
}

/// `previous` (a handoff summary, or empty) with `turns` added, bounded. With no previous
/// summary, `objective` leads it.
pub fn extend_handoff(previous: &str, objective: &str, turns: &[HandoffTurn]) -> String {
    if previous.trim().is_empty() {
        return HandoffSummary {
            objective: objective.to_string(),
            turns: turns.to_vec(),
        }
        .render_bounded();
    }
    let mut text = previous.trim_end().to_string();
    if !text.contains('\n') {
        // The objective alone: turns follow a blank line.
        text.push('\n');
    }
    for turn in turns {
        text.push('\n');
        text.push_str(&turn.render());
    }
    bound_handoff_summary(&text, HANDOFF_MAX_CHARS)
}

/// Whether a handoff record is a summary a later run may continue from (not the context
/// guard's notice).
fn is_summary(record: &Record) -> Option<&str> {
    match record {
        Record::Handoff(handoff)
            if !matches!(handoff.trigger, Some(HandoffTrigger::Auto))
                && !handoff.summary.trim().is_empty() =>
        {
            Some(&handoff.summary)
        }
        _ => None,
    }
}

/// The session's handoff from its journal entries: the latest handoff summary, extended with
/// the runs after it (each from its journaled report; an interrupted run by its request).
pub fn build_handoff(entries: &[JournalEntry]) -> String {
    let base = entries
        .iter()
        .rposition(|e| is_summary(&e.record).is_some());
    let previous = base
        .and_then(|i| is_summary(&entries[i].record))
        .unwrap_or_default();
    let objective = entries
        .iter()
        .find_map(|e| match &e.record {
            Record::RunStart(start) => Some(start.prompt.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let after = base.map_or(0, |i| i + 1);
    let mut turns = Vec::new();
    let mut pending: Option<&str> = None;
    for entry in &entries[after..] {
        match &entry.record {
            Record::RunStart(start) => {
                if let Some(prompt) = pending.replace(&start.prompt) {
                    turns.push(interrupted(prompt));
                }
            }
            Record::FinalReport(report) => {
                pending = None;
                turns.extend(report_turns(&report.final_report));
            }
            _ => {}
        }
    }
    if let Some(prompt) = pending {
        turns.push(interrupted(prompt));
    }
    extend_handoff(previous, objective, &turns)
}

fn interrupted(prompt: &str) -> HandoffTurn {
    HandoffTurn {
        role: "user".into(),
        text: format!("{prompt} (interrupted: no answer)"),
    }
}

/// The latest handoff summary when it is fresh: no run started after it.
pub fn fresh_handoff(entries: &[JournalEntry]) -> Option<&str> {
    let index = entries
        .iter()
        .rposition(|e| is_summary(&e.record).is_some())?;
    let later_run = entries[index + 1..]
        .iter()
        .any(|e| matches!(e.record, Record::RunStart(_)));
    if later_run {
        return None;
    }
    is_summary(&entries[index].record)
}

/// A session's handoff: the fresh one when there is one (`true`), else one built from its
/// journal (`false`).
pub fn session_handoff(home: &Home, id: &SessionId) -> Result<(String, bool), JournalError> {
    let read = read_journal(&home.session_path(id))?;
    if let Some(fresh) = fresh_handoff(&read.entries) {
        return Ok((fresh.to_string(), true));
    }
    Ok((build_handoff(&read.entries), false))
}

/// What [`write_handoff`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenHandoff {
    /// The summary.
    pub summary: String,
    /// Whether the session's fresh handoff was reused (nothing was written).
    pub reused: bool,
}

/// An on-demand handoff before it is written ([`draft_handoff`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoffDraft {
    /// The session's fresh handoff, to reuse as it is.
    Fresh(String),
    /// A new one: the heuristic summary, and the session's turns for a model summarizer.
    New {
        /// The bounded summary built from the journal.
        heuristic: String,
        /// The session's turns, newest kept ([`session_transcript`]).
        transcript: String,
    },
}

/// The handoff `/handoff` or `braincode sessions handoff` would write: the fresh one when
/// there is one and no `focus` is asked, else a new one built from the journal.
pub fn draft_handoff(
    home: &Home,
    id: &SessionId,
    focus: Option<&str>,
) -> Result<HandoffDraft, JournalError> {
    let read = read_journal(&home.session_path(id))?;
    if focus.is_none()
        && let Some(fresh) = fresh_handoff(&read.entries)
    {
        return Ok(HandoffDraft::Fresh(fresh.to_string()));
    }
    Ok(HandoffDraft::New {
        heuristic: build_handoff(&read.entries),
        transcript: session_transcript(&read.entries, TRANSCRIPT_MAX_CHARS),
    })
}

/// Most of a session's turns a model summarizer is shown, in characters.
pub const TRANSCRIPT_MAX_CHARS: usize = 24_000;
/// Most of one turn a model summarizer is shown, in characters.
const TRANSCRIPT_TURN_MAX_CHARS: usize = 2_000;

/// Every run's turns (request, answer, changes, checks, review) as `role: text` lines, each
/// turn clipped; the newest turns kept when the whole exceeds `max_chars`.
pub fn session_transcript(entries: &[JournalEntry], max_chars: usize) -> String {
    let mut turns = Vec::new();
    for entry in entries {
        if let Record::FinalReport(report) = &entry.record {
            turns.extend(report_turns(&report.final_report));
        }
    }
    let mut kept = Vec::new();
    let mut used = 0;
    for turn in turns.iter().rev() {
        let text = braincode_context::clip_chars(turn.text.trim(), TRANSCRIPT_TURN_MAX_CHARS);
        let line = format!("{}: {text}", turn.role);
        let len = line.chars().count() + 1;
        if used + len > max_chars {
            break;
        }
        used += len;
        kept.push(line);
    }
    kept.reverse();
    kept.join("\n")
}

/// Appends a manual `handoff` record with `summary` (and who wrote it) to the session.
pub fn append_handoff(
    home: &Home,
    id: &SessionId,
    summary: &str,
    focus: Option<&str>,
    summarizer: &str,
    summarizer_fallback: Option<String>,
) -> Result<(), JournalError> {
    let mut writer = super::JournalWriter::open(home, id)?;
    writer.append(&Record::Handoff(braincode_protocol::Handoff {
        summary: summary.to_string(),
        focus: focus.map(|f| braincode_context::clip_chars(f, 400)),
        trigger: Some(HandoffTrigger::Manual),
        estimated_bytes: None,
        limit_bytes: None,
        summarizer: Some(summarizer.to_string()),
        summarizer_fallback,
    }))?;
    Ok(())
}

/// Makes the session's handoff on request with the heuristic summarizer: reuses the fresh
/// one when there is one and no `focus` is asked, else builds one and appends it as a
/// `handoff` record.
pub fn write_handoff(
    home: &Home,
    id: &SessionId,
    focus: Option<&str>,
) -> Result<WrittenHandoff, JournalError> {
    match draft_handoff(home, id, focus)? {
        HandoffDraft::Fresh(summary) => Ok(WrittenHandoff {
            summary,
            reused: true,
        }),
        HandoffDraft::New { heuristic, .. } => {
            append_handoff(home, id, &heuristic, focus, "heuristic", None)?;
            Ok(WrittenHandoff {
                summary: heuristic,
                reused: false,
            })
        }
    }
}

#[cfg(test)]
#[path = "handoff_tests.rs"]
mod tests;
