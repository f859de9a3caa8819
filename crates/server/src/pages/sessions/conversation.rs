//! A journal read as a conversation: what the user asked, what each worker did (one line),
//! each tool call (one line, its start and end together), the errors, and the answer. The
//! records themselves stay on the page, folded, for whoever needs the JSON.

use std::collections::HashMap;

use braincode_protocol::{JournalEntry, Record, ToolExecutionSummary, ToolStage};
use maud::{Markup, html};
use serde_json::Value;

use super::S;
use super::local_time;
use crate::i18n::{t, tf};
use crate::layout::{clip, serde_name};

/// Characters of a worker's result summary shown on its line.
const WORKER_SUMMARY_CHARS: usize = 300;
/// Characters of a tool call's arguments shown on its line.
const TOOL_ARGS_CHARS: usize = 160;
/// Characters of a failed tool call's output shown on its line.
const TOOL_OUTPUT_CHARS: usize = 240;

/// The arguments of a tool call in a few words: the command or path when there is one.
fn args_line(args: Option<&Value>) -> String {
    let Some(args) = args else {
        return String::new();
    };
    let named = [
        "command",
        "cmd",
        "path",
        "file_path",
        "pattern",
        "query",
        "url",
    ]
    .iter()
    .find_map(|key| args.get(key).and_then(Value::as_str));
    let text = match (named, args) {
        (Some(text), _) => text.to_string(),
        (None, Value::String(text)) => text.clone(),
        (None, Value::Null) => String::new(),
        (None, other) => other.to_string(),
    };
    clip(&text.replace('\n', " "), TOOL_ARGS_CHARS)
}

fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn tool_line(start: Option<&ToolExecutionSummary>, end: Option<&ToolExecutionSummary>) -> Markup {
    let Some(call) = start.or(end) else {
        return html! {};
    };
    let args = args_line(start.and_then(|s| s.args_summary.as_ref()));
    let who = call.origin.role.map(braincode_protocol::Role::as_str);
    let failed = end.is_some_and(|e| e.is_error);
    let class = if failed { "tool failed" } else { "tool" };
    let output = end
        .filter(|e| e.is_error)
        .and_then(|e| e.output.as_deref())
        .map(|text| clip(text.lines().next().unwrap_or_default(), TOOL_OUTPUT_CHARS));
    html! {
        div class=(class) data-tool=(call.tool_name) {
            span.glyph { (if failed { "✗" } else if end.is_some() { "⚙" } else { "…" }) }
            " " code { (call.tool_name) }
            @if !args.is_empty() { " " code.args { (args) } }
            @if let Some(who) = who { " " span.muted { "(" (who) ")" } }
            @match end {
                Some(end) => { " — " (t(if end.is_error { S::Failed } else { S::Ok }))
                    @if let Some(ms) = end.duration_ms { ", " (seconds(ms)) } }
                None => { " — " span.muted { (t(S::NoEnd)) } }
            }
            @if let Some(output) = output { ": " span.bad { (output) } }
        }
    }
}

fn entry_markup<'a>(
    entry: &'a JournalEntry,
    ends: &HashMap<&'a str, &'a ToolExecutionSummary>,
    starts: &HashMap<&'a str, &'a ToolExecutionSummary>,
) -> Markup {
    let time = local_time(entry.timestamp, "%H:%M:%S");
    match &entry.record {
        Record::RunStart(start) if start.attempt.is_none_or(|a| a <= 1) => html! {
            div class="turn user" {
                div.who { (t(S::You)) span.when { (time) } }
                p.text { (start.prompt) }
            }
        },
        Record::RunStart(start) => html! {
            div.note { (tf(S::Attempt, &[&start.attempt.unwrap_or_default()]))
                @if let Some(model) = &start.model { " " (t(S::With)) " " code { (model) } } }
        },
        Record::RunEnd(end) => html! {
            div class="turn answer" {
                div.who { "Braincode"
                    @if let Some(status) = end.status { " " span.tag { (status.as_str().replace('_', " ")) } }
                    span.when { (time) } }
                p.text { (end.summary) }
            }
        },
        Record::RunError(error) if error.will_fallback == Some(true) => html! {
            div.note.warn { (t(S::AttemptFailed)) " " (clip(&error.error, 300)) }
        },
        Record::RunError(error) => html! {
            div class="turn error" {
                div.who { (t(S::Error))
                    @if let Some(status) = error.status { " " span.tag { (status.as_str()) } }
                    @if let Some(kind) = &error.kind { " " span.tag { (kind) } }
                    span.when { (time) } }
                p.text { (error.error) }
            }
        },
        Record::WorkerStart(start) => html! {
            div.worker { "▸ " code { (start.worker.as_str()) } " (" (serde_name(&start.phase)) ") "
                @if let Some(worktree) = &start.worktree { span.tag title=(worktree) { (t(S::WriterIn)) } " " }
                (t(S::Starts)) " " (clip(&start.goal, WORKER_SUMMARY_CHARS)) }
        },
        Record::WorkerEnd(end) => {
            let failed = end
                .result
                .as_ref()
                .is_some_and(braincode_protocol::WorkerResult::is_failed);
            let summary = end
                .result
                .as_ref()
                .and_then(|r| r.display_summary())
                .map(|s| clip(s, WORKER_SUMMARY_CHARS));
            html! {
                div class=(if failed { "worker failed" } else { "worker" }) {
                    (if failed { "✗ " } else { "✓ " }) code { (end.worker.as_str()) } " (" (serde_name(&end.phase)) ") "
                    (t(if failed { S::Failed } else { S::Done }))
                    @if let Some(summary) = summary { ": " (summary) }
                }
            }
        }
        Record::WorkerError(error) => html! {
            div class="worker failed" {
                "✗ " code { (error.worker.as_str()) } " (" (serde_name(&error.phase)) ") " (t(S::Failed))
                @if error.will_fallback == Some(true) { " " (t(S::TryingNext)) }
                @if let Some(message) = &error.error { ": " span.bad { (clip(message, 400)) } }
            }
        },
        Record::ToolExecutionSummary(call) => match call.stage {
            ToolStage::Start => {
                tool_line(Some(call), ends.get(call.tool_call_id.as_str()).copied())
            }
            // An end whose start is in the journal was drawn with it.
            ToolStage::End if starts.contains_key(call.tool_call_id.as_str()) => html! {},
            ToolStage::End => tool_line(None, Some(call)),
        },
        Record::ClarificationRequest(request) => html! {
            div class="turn answer" {
                div.who { (t(S::Asks)) span.when { (time) } }
                p.text { (request.clarification.question) }
            }
        },
        Record::ReviewDecision(review) => html! {
            div.note { (t(S::Review)) " " (serde_name(&review.decision.decision)) }
        },
        Record::Warning(warning) => html! {
            div.note.warn { (t(S::Warning)) " " (warning.message) }
        },
        Record::WriterMerge(merge) => html! {
            // A merge that did not land, or whose checks failed in the writer's worktree,
            // stands out.
            div class=(if merge_stands_out(merge) { "note warn" } else { "note" }) {
                code { (merge.role.as_str()) } " " (t(S::MergedBack)) " " (merge.outcome.as_str())
                @if !merge.files.is_empty() {
                    " (" (merge.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>().join(", ")) ")"
                }
                @if let Some(reason) = &merge.reason { " — " (reason) }
                @if let Some(patch) = &merge.patch_path { " · " (t(S::ItsPatch)) " " code { (patch) } }
                @if let Some(checks) = &merge.checks {
                    " · " (t(S::ItsChecks)) " " (checks.status.label())
                    @for result in &checks.results {
                        " " code { (result.name) } " " (if result.passed { "✓" } else { "✗" })
                    }
                }
            }
        },
        _ => html! {},
    }
}

/// Whether a writer's merge is shown as a warning: it did not land, or its checks failed.
fn merge_stands_out(merge: &braincode_protocol::WriterMerge) -> bool {
    use braincode_protocol::{CheckStatus, MergeOutcome};
    !matches!(merge.outcome, MergeOutcome::Clean | MergeOutcome::Empty)
        || (merge.checks.as_ref()).is_some_and(|c| c.status == CheckStatus::Failed)
}

/// The conversation of `entries`, oldest first.
pub(super) fn render(entries: &[JournalEntry]) -> Markup {
    let mut starts: HashMap<&str, &ToolExecutionSummary> = HashMap::new();
    let mut ends: HashMap<&str, &ToolExecutionSummary> = HashMap::new();
    for entry in entries {
        if let Record::ToolExecutionSummary(call) = &entry.record {
            let map = match call.stage {
                ToolStage::Start => &mut starts,
                ToolStage::End => &mut ends,
            };
            map.insert(call.tool_call_id.as_str(), call);
        }
    }
    html! {
        @if entries.is_empty() { p.muted { (t(S::NoRecords)) } }
        @for entry in entries { (entry_markup(entry, &ends, &starts)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_call_is_named_by_its_command_or_path() {
        assert_eq!(
            args_line(Some(&json!({"command": "cargo test", "timeout": 5}))),
            "cargo test"
        );
        assert_eq!(args_line(Some(&json!({"path": "src/a.rs"}))), "src/a.rs");
        assert_eq!(args_line(Some(&json!({"n": 1}))), "{\"n\":1}");
        assert_eq!(args_line(None), "");
    }

    #[test]
    fn a_writer_says_it_works_in_its_worktree_and_a_reader_does_not() {
        let start = |worktree: Option<&str>| {
            let start: braincode_protocol::WorkerStart = serde_json::from_value(json!({
                "phase": "support", "worker": "frontend", "goal": "Add the form",
                "worktree": worktree,
            }))
            .unwrap();
            render(&[JournalEntry::new(1, Record::WorkerStart(start))]).into_string()
        };
        let writer = start(Some("/p/.git/braincode-writers/r/t-1"));
        assert!(
            writer.contains(r#"title="/p/.git/braincode-writers/r/t-1">writer, in its worktree"#),
            "{writer}"
        );
        let reader = start(None);
        assert!(!reader.contains("worktree"), "{reader}");
        assert!(reader.contains("starts: Add the form"), "{reader}");
    }

    #[test]
    fn a_clean_merge_stands_out_only_when_its_checks_failed() {
        let shown = |checks: &str| {
            let merge: braincode_protocol::WriterMerge = serde_json::from_value(json!({
                "role": "dba", "contextId": "t-2", "worktree": "/w/2", "outcome": "clean",
                "checks": {"status": checks, "results": []}
            }))
            .unwrap();
            render(&[JournalEntry::new(1, Record::WriterMerge(merge))]).into_string()
        };
        assert!(shown("failed").contains("note warn"));
        assert!(!shown("passed").contains("note warn"));
    }

    #[test]
    fn a_writer_merge_is_shown_with_its_files_why_and_patch() {
        let merge: braincode_protocol::WriterMerge = serde_json::from_value(json!({
            "role": "dba", "contextId": "t-2", "worktree": "/w/2", "outcome": "conflict",
            "files": [{"path": "db.sql", "status": "conflict"}],
            "reason": "db.sql changed on both sides in the same place",
            "patchPath": "/h/writers/r/t-2.patch",
            "checks": {"status": "failed", "results": [{"name": "make test",
                "command": "make test", "passed": false, "durationMs": 5}]}
        }))
        .unwrap();
        let html = render(&[JournalEntry::new(1, Record::WriterMerge(merge))]).into_string();
        assert!(html.contains("note warn"), "{html}");
        assert!(
            html.contains("writer merged back: conflict (db.sql)"),
            "{html}"
        );
        assert!(html.contains("changed on both sides"), "{html}");
        assert!(html.contains("/h/writers/r/t-2.patch"), "{html}");
        assert!(
            html.contains("its checks, in its worktree: failed <code>make test</code> ✗"),
            "{html}"
        );
    }
}
