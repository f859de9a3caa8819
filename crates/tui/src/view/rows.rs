//! A turn's agent section: one row per worker, its tool calls under it, and what an expanded
//! row shows (a worker's handoff goal and result; a tool call's output or diff).

use braincode_protocol::{CheckStatus, MergeOutcome, TaskStatus};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::diff::{INLINE_DIFF_ROWS, MAX_DIFF_ROWS, diff_rows};
use super::text::{fmt_clock, fmt_duration, fmt_tokens, row, truncate, truncate_spans, wrap};
use super::theme;
use crate::app::{Item, ItemKey, ToolCall, ToolState, Turn, WorkerRow, WorkerStatus};

/// Output rows an expanded tool call shows; the rest is counted.
pub(crate) const MAX_OUTPUT_ROWS: usize = 12;

/// Rows of the agent section, and the row of each item (for the selection).
pub(crate) fn agent_rows(
    turn: &Turn,
    selected: Option<&ItemKey>,
    width: usize,
    now_ms: i64,
) -> (Vec<Line<'static>>, Vec<(ItemKey, usize)>) {
    let items = turn.items();
    let mut lines = Vec::new();
    let mut positions = Vec::with_capacity(items.len());
    if items.is_empty() {
        return (lines, positions);
    }
    lines.push(Line::default());
    for item in items {
        let key = item.key();
        let is_selected = selected == Some(&key);
        positions.push((key.clone(), lines.len()));
        let (mut line, indent) = match item {
            Item::Worker(worker) => (worker_line(&worker, width, now_ms), "  "),
            Item::Tool { call, nested } => {
                let indent = if nested { "    " } else { "  " };
                (tool_line(call, indent, width, now_ms), indent)
            }
        };
        if is_selected {
            if let Some(first) = line.spans.first_mut() {
                first.content = format!("›{}", indent.get(1..).unwrap_or_default()).into();
                first.style = theme::BUSY;
            }
            line = line.style(theme::SELECTED);
        }
        lines.push(line);
        let mut prefix = vec![Span::raw(indent), Span::styled("│ ", theme::DIM)];
        if turn.is_expanded(&key) {
            if matches!(item, Item::Worker(_)) {
                prefix.insert(1, Span::raw("  "));
            }
            match item {
                Item::Worker(worker) => worker_details(&worker, width, &prefix, &mut lines),
                Item::Tool { call, .. } => tool_details(call, width, &prefix, &mut lines),
            }
        } else if let Item::Tool { call, .. } = item
            && call.is_edit()
            && call.state == ToolState::Done
            && let Some(diff) = diff_rows(call, width, &prefix, INLINE_DIFF_ROWS)
        {
            // Every edit shows what it changed, in place; Tab shows the whole diff.
            lines.extend(diff);
        }
    }
    (lines, positions)
}

fn worker_line(row_of: &WorkerRow<'_>, width: usize, now_ms: i64) -> Line<'static> {
    let worker = row_of.worker;
    let (glyph, style) = match row_of.status {
        WorkerStatus::Waiting => ("○", theme::DIM),
        WorkerStatus::Running => (theme::spinner(now_ms), theme::BUSY),
        WorkerStatus::Done => ("✓", theme::OK),
        WorkerStatus::Failed => ("✗", theme::ERROR),
        WorkerStatus::Blocked => ("⊘", theme::WARN),
        WorkerStatus::Skipped => ("–", theme::DIM),
        WorkerStatus::Interrupted => ("■", theme::WARN),
    };
    let model = worker
        .result_model
        .as_deref()
        .or(worker.model.as_deref())
        .unwrap_or("");
    let mut left = vec![
        Span::raw("  "),
        Span::styled(glyph, style),
        Span::raw(" "),
        Span::styled(format!("{:<10}", worker.role.as_str()), theme::ROLE),
        // A parallel writer says so: it edits in its own worktree, merged back after.
        Span::styled(
            format!(
                " {:<8}",
                match worker.worktree {
                    Some(_) => "writer",
                    None => worker.phase.as_str(),
                }
            ),
            theme::DIM,
        ),
        Span::styled(format!(" {model}"), theme::DIM),
    ];
    if let Some(verdict) = row_of.verdict {
        left.push(Span::styled(format!(" · {verdict}"), theme::WARN));
    }
    if let Some(merge) = worker.merge {
        let (text, style) = match merge {
            MergeOutcome::Clean => ("merged", theme::DIM),
            MergeOutcome::Empty => ("changed nothing", theme::DIM),
            MergeOutcome::Conflict => ("merge conflict", theme::WARN),
            MergeOutcome::Refused => ("merge refused", theme::WARN),
            MergeOutcome::Failed => ("merge failed", theme::WARN),
        };
        left.push(Span::styled(format!(" · {text}"), style));
    }
    // The checks it ran in its worktree before its merge.
    if let Some(checks) = worker.checks {
        let (text, style) = match checks {
            CheckStatus::Passed => ("checks passed", theme::DIM),
            CheckStatus::Failed => ("checks failed", theme::WARN),
            CheckStatus::CouldNotRun => ("checks could not run", theme::WARN),
            CheckStatus::Skipped => ("checks skipped", theme::DIM),
        };
        left.push(Span::styled(format!(" · {text}"), style));
    }
    let mut right = Vec::new();
    let elapsed = match (worker.started_at, worker.ended_at) {
        (Some(start), Some(end)) => Some(end - start),
        (Some(start), None) if worker.running => Some(now_ms - start),
        _ => None,
    };
    let label = match row_of.status {
        WorkerStatus::Waiting => Some("waiting"),
        WorkerStatus::Failed => Some("failed"),
        WorkerStatus::Blocked => Some("blocked"),
        WorkerStatus::Skipped => Some("skipped"),
        WorkerStatus::Interrupted => Some("interrupted"),
        WorkerStatus::Running | WorkerStatus::Done => None,
    };
    if let Some(label) = label {
        right.push(Span::styled(label, style));
    }
    if let Some(elapsed) = elapsed {
        let elapsed = u64::try_from(elapsed).unwrap_or(0);
        let text = if worker.running {
            fmt_clock(elapsed)
        } else {
            fmt_duration(elapsed)
        };
        push_right(&mut right, text);
    }
    if !worker.tokens.is_empty() {
        push_right(
            &mut right,
            format!("{} tok", fmt_tokens(worker.tokens.total)),
        );
    }
    row(left, right, width)
}

fn push_right(right: &mut Vec<Span<'static>>, text: String) {
    if !right.is_empty() {
        right.push(Span::styled(" · ", theme::DIM));
    }
    right.push(Span::styled(text, theme::DIM));
}

fn tool_line(call: &ToolCall, indent: &'static str, width: usize, now_ms: i64) -> Line<'static> {
    let (glyph, style) = match call.state {
        ToolState::Running => (theme::spinner(now_ms), theme::BUSY),
        ToolState::Done => ("✓", theme::OK),
        ToolState::Failed => ("✗", theme::ERROR),
        ToolState::Blocked => ("⊘", theme::WARN),
        ToolState::Interrupted => ("■", theme::WARN),
    };
    let left = vec![
        Span::raw(indent),
        Span::styled(glyph, style),
        Span::raw(" "),
        Span::styled(call.tool_name.clone(), theme::TOOL),
        Span::raw(" "),
        Span::raw(tool_brief(call)),
    ];
    let right = match (call.state, call.duration_ms) {
        (ToolState::Blocked, _) => vec![Span::styled("blocked", theme::WARN)],
        (ToolState::Failed, Some(ms)) => vec![
            Span::styled("failed", theme::ERROR),
            Span::styled(format!(" · {}", fmt_duration(ms)), theme::DIM),
        ],
        (ToolState::Running, _) => match call.started_at {
            Some(start) if now_ms >= start => {
                let elapsed = u64::try_from(now_ms - start).unwrap_or(0);
                vec![Span::styled(fmt_clock(elapsed), theme::DIM)]
            }
            _ => Vec::new(),
        },
        (_, Some(ms)) => vec![Span::styled(fmt_duration(ms), theme::DIM)],
        (_, None) => Vec::new(),
    };
    row(left, right, width)
}

/// What a call is about, in a few words: its pattern, command, script or path.
pub(crate) fn tool_brief(call: &ToolCall) -> String {
    const KEYS: [&str; 10] = [
        "pattern", "query", "command", "cmd", "script", "path", "file", "filePath", "url", "name",
    ];
    let parsed;
    let args = match &call.args {
        Some(args) => Some(args),
        None => {
            parsed = serde_json::from_str::<Value>(&call.summary).ok();
            parsed.as_ref()
        }
    };
    if call.tool_name == "apply_patch"
        && let Some(patch) = args.and_then(|a| a.get("patch")).and_then(Value::as_str)
    {
        let files: Vec<&str> = patch
            .lines()
            .filter_map(|l| l.strip_prefix("+++ "))
            .map(|f| f.strip_prefix("b/").unwrap_or(f))
            .collect();
        return match files.as_slice() {
            [] => String::new(),
            [one] => (*one).to_string(),
            [one, rest @ ..] => format!("{one} (+{} more)", rest.len()),
        };
    }
    if let Some(Value::Object(map)) = args {
        let words = |value: Option<&Value>| match value {
            Some(Value::String(text)) => Some(text.clone()),
            Some(Value::Array(parts)) if !parts.is_empty() => Some(
                parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        };
        let Some((key, mut brief)) = KEYS.iter().find_map(|k| Some((*k, words(map.get(*k))?)))
        else {
            return String::new();
        };
        match key {
            "pattern" | "query" => {
                brief = format!("\"{brief}\"");
                if let Some(path) = words(map.get("path")) {
                    brief.push_str(&format!(" in {path}"));
                }
            }
            "script" => {
                if let Some(args) = words(map.get("args")) {
                    brief.push_str(&format!(" {args}"));
                }
            }
            _ => {}
        }
        return brief;
    }
    call.summary.clone()
}

fn detail(
    label: &str,
    text: &str,
    style: Style,
    width: usize,
    prefix: &[Span<'static>],
    lines: &mut Vec<Line<'static>>,
) {
    let mut first = prefix.to_vec();
    first.push(Span::styled(format!("{label:<6} "), theme::DIM));
    let mut rest = prefix.to_vec();
    rest.push(Span::raw("       "));
    lines.extend(wrap(
        &[Span::styled(text.to_string(), style)],
        width,
        &first,
        &rest,
    ));
}

fn bullets(
    label: &str,
    items: &[String],
    width: usize,
    prefix: &[Span<'static>],
    lines: &mut Vec<Line<'static>>,
) {
    if items.is_empty() {
        return;
    }
    let mut head = prefix.to_vec();
    head.push(Span::styled(label.to_string(), theme::DIM));
    lines.push(Line::from(head));
    let mut first = prefix.to_vec();
    first.push(Span::styled("  • ", theme::DIM));
    let mut rest = prefix.to_vec();
    rest.push(Span::raw("    "));
    for item in items {
        lines.extend(wrap(&[Span::raw(item.clone())], width, &first, &rest));
    }
}

/// An expanded worker: its handoff goal and its result packet — never a transcript.
fn worker_details(
    row_of: &WorkerRow<'_>,
    width: usize,
    prefix: &[Span<'static>],
    lines: &mut Vec<Line<'static>>,
) {
    let worker = row_of.worker;
    if !worker.goal.is_empty() {
        detail("goal", &worker.goal, Style::default(), width, prefix, lines);
    }
    if let Some(result) = worker.result.as_deref() {
        let style = match result.progress.status {
            TaskStatus::Failed => theme::ERROR,
            TaskStatus::Blocked => theme::WARN,
            _ => Style::default(),
        };
        let summary = result.display_summary().unwrap_or("(no summary)");
        detail("result", summary, style, width, prefix, lines);
        bullets("risks", &result.risks, width, prefix, lines);
        bullets(
            "next questions",
            &result.next_questions,
            width,
            prefix,
            lines,
        );
    }
    if let Some(error) = &worker.error {
        detail("error", error, theme::ERROR, width, prefix, lines);
    }
    if worker.result.is_none() && worker.error.is_none() {
        let note = match row_of.status {
            WorkerStatus::Running | WorkerStatus::Waiting => "(no result yet)",
            _ => "(no result packet)",
        };
        let mut spans = prefix.to_vec();
        spans.push(Span::styled(note, theme::DIM));
        lines.push(Line::from(spans));
    }
}

/// An expanded tool call: an edit's diff, else its output, clipped.
fn tool_details(
    call: &ToolCall,
    width: usize,
    prefix: &[Span<'static>],
    lines: &mut Vec<Line<'static>>,
) {
    if let Some(reason) = &call.reason {
        detail("why", reason, theme::WARN, width, prefix, lines);
    }
    let diff = call
        .is_edit()
        .then(|| diff_rows(call, width, prefix, MAX_DIFF_ROWS))
        .flatten();
    let show_output = diff.is_none() || call.state == ToolState::Failed;
    if let Some(diff) = diff {
        lines.extend(diff);
    }
    if !show_output {
        return;
    }
    let style = if call.state == ToolState::Failed {
        theme::ERROR
    } else {
        Style::default()
    };
    let note = |text: String| {
        let mut spans = prefix.to_vec();
        spans.push(Span::styled(text, theme::DIM));
        Line::from(truncate_spans(spans, width))
    };
    match call.output.as_deref().map(str::trim_end) {
        None if call.state == ToolState::Running => lines.push(note("running…".into())),
        None | Some("") if call.reason.is_none() => lines.push(note("(no output)".into())),
        None | Some("") => {}
        Some(output) => {
            let total = output.lines().count();
            for text in output.lines().take(MAX_OUTPUT_ROWS) {
                let mut spans = prefix.to_vec();
                spans.push(Span::styled(
                    truncate(text, width.saturating_sub(super::text::spans_width(prefix))),
                    style,
                ));
                lines.push(Line::from(spans));
            }
            if total > MAX_OUTPUT_ROWS {
                lines.push(note(format!("… {} more lines", total - MAX_OUTPUT_ROWS)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::{
        JournalEntry, MergeOutcome, Record, Role, WorkerPhase, WorkerStart, WriterMerge,
    };
    use braincode_session::fold::RunState;

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    /// A writer's row says `writer` (not `support`) and how its change came back; a conflict
    /// stands out, a clean merge does not.
    #[test]
    fn a_parallel_writers_row_says_writer_and_how_its_merge_went() {
        let mut state = RunState::new("s");
        for (role, context) in [(Role::Frontend, "r-02"), (Role::Dba, "r-03")] {
            state.apply(&JournalEntry::new(
                1,
                Record::WorkerStart(WorkerStart {
                    phase: WorkerPhase::Support,
                    worker: role,
                    goal: "its part".into(),
                    handoff: None,
                    model: Some("m".into()),
                    agent_session_id: Some(format!("{context}-1")),
                    attempt: Some(1),
                    worktree: Some(format!("/p/.git/braincode-writers/r/{context}")),
                }),
            ));
        }
        // The frontend writer's checks failed in its worktree; the dba writer ran none.
        let failed: braincode_protocol::CheckSummary = serde_json::from_value(serde_json::json!({
            "status": "failed", "results": [{"name": "make test", "command": "make test",
            "passed": false, "timedOut": false, "durationMs": 3, "outputTail": "1 failed"}]
        }))
        .unwrap();
        for (role, context, outcome, checks) in [
            (Role::Frontend, "r-02", MergeOutcome::Clean, Some(failed)),
            (Role::Dba, "r-03", MergeOutcome::Conflict, None),
        ] {
            state.apply(&JournalEntry::new(
                2,
                Record::WriterMerge(WriterMerge {
                    role,
                    context_id: context.into(),
                    worktree: String::new(),
                    outcome,
                    files: Vec::new(),
                    reason: None,
                    patch_path: None,
                    checks,
                }),
            ));
        }
        let line = |index: usize| {
            worker_line(
                &WorkerRow {
                    worker: &state.workers()[index],
                    status: WorkerStatus::Done,
                    verdict: None,
                },
                100,
                0,
            )
        };
        let clean = line(0);
        assert!(
            text(&clean).contains("frontend   writer   m · merged · checks failed"),
            "{}",
            text(&clean)
        );
        let span = (clean.spans.iter())
            .find(|s| s.content.contains("checks failed"))
            .unwrap();
        assert_eq!(span.style, theme::WARN);
        let conflict = line(1);
        assert!(
            text(&conflict).contains("dba        writer   m · merge conflict")
                && !text(&conflict).contains("checks"),
            "{}",
            text(&conflict)
        );
        let span = (conflict.spans.iter())
            .find(|s| s.content.contains("merge conflict"))
            .unwrap();
        assert_eq!(span.style, theme::WARN);
    }
}
