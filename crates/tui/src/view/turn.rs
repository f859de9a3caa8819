//! A turn's head (the request and the plan), its answer (warnings, the Markdown answer, the
//! report card) and its live status row.

use braincode_protocol::{FinalReport, FinalStatus, TaskStatus};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::markdown;
use super::text::{fmt_clock, fmt_duration, fmt_tokens, row, truncate, wrap};
use super::theme;
use crate::app::Turn;

/// Requests longer than this many rows are clipped to [`CLIPPED_REQUEST_ROWS`].
const MAX_REQUEST_ROWS: usize = 18;
/// Rows a long request keeps.
const CLIPPED_REQUEST_ROWS: usize = 10;

/// The request and, once routed, the plan: source, reason, todos.
pub(crate) fn head_rows(turn: &Turn, width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::default()];
    let request = wrap(
        &[Span::styled(turn.request().to_string(), theme::REQUEST)],
        width,
        &[Span::styled("› ", theme::PROMPT)],
        &[Span::raw("  ")],
    );
    let total = request.len();
    if total > MAX_REQUEST_ROWS {
        lines.extend(request.into_iter().take(CLIPPED_REQUEST_ROWS));
        lines.push(Line::styled(
            format!("  … {} more lines", total - CLIPPED_REQUEST_ROWS),
            theme::DIM,
        ));
    } else {
        lines.extend(request);
    }

    let state = turn.state();
    let Some(routing) = state.routing() else {
        return lines;
    };
    lines.push(Line::default());
    let mut title = vec![
        Span::raw("  "),
        Span::styled("◆ plan", theme::TITLE),
        Span::styled(format!(" · {}", routing.source.as_str()), theme::DIM),
    ];
    if let Some(confidence) = routing.confidence {
        title.push(Span::styled(
            format!(" {:.0}%", confidence * 100.0),
            theme::DIM,
        ));
    }
    title.push(Span::styled(" · primary ", theme::DIM));
    title.push(Span::styled(routing.primary_role.as_str(), theme::ROLE));
    if routing.requires_review {
        title.push(Span::styled(" · review", theme::DIM));
    }
    lines.push(row(title, Vec::new(), width));
    let indent = [Span::raw("    ")];
    if !routing.reason.trim().is_empty() {
        lines.extend(wrap(
            &[Span::styled(routing.reason.clone(), theme::DIM)],
            width,
            &indent,
            &indent,
        ));
    }
    if let Some(fallback) = &routing.fallback_reason {
        lines.extend(wrap(
            &[Span::styled(
                format!("router fell back: {fallback}"),
                theme::WARN,
            )],
            width,
            &[Span::raw("    "), Span::styled("⚠ ", theme::WARN)],
            &[Span::raw("      ")],
        ));
    }
    for todo in state.todos() {
        let (glyph, style) = todo_glyph(todo.status);
        let left = vec![
            Span::raw("    "),
            Span::styled(glyph, style),
            Span::raw(" "),
            Span::raw(todo.title.clone()),
        ];
        let right = vec![Span::styled(todo.role.as_str(), theme::DIM)];
        lines.push(row(left, right, width));
    }
    lines
}

fn todo_glyph(status: TaskStatus) -> (&'static str, Style) {
    match status {
        TaskStatus::Pending => ("○", theme::DIM),
        TaskStatus::Running => ("◐", theme::BUSY),
        TaskStatus::Completed => ("✓", theme::OK),
        TaskStatus::Blocked => ("⊘", theme::WARN),
        TaskStatus::Failed => ("✗", theme::ERROR),
    }
}

/// The run's warnings (records and live notices).
pub(crate) fn notice_rows(turn: &Turn, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let warnings = turn.state().warnings().iter().chain(turn.notices());
    for (index, warning) in warnings.enumerate() {
        if index == 0 {
            lines.push(Line::default());
        }
        lines.extend(wrap(
            &[Span::styled(warning.clone(), theme::WARN)],
            width,
            &[Span::raw("  "), Span::styled("⚠ ", theme::WARN)],
            &[Span::raw("    ")],
        ));
    }
    lines
}

/// Where a streaming answer's settled part ends: after its last blank line outside a code
/// fence. What comes before it no longer changes as text streams in, so its rows are built
/// once ([`settled_rows`]) and only the rest is built again per delta. 0 once the report is
/// in: the final answer is rendered whole.
pub(crate) fn settled_len(turn: &Turn) -> usize {
    if turn.report().is_some() {
        return 0;
    }
    let text = turn.answer();
    let (mut at, mut fenced, mut settled) = (0, false, 0);
    for line in text.split_inclusive('\n') {
        at += line.len();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced && trimmed.is_empty() && line.ends_with('\n') {
            settled = at;
        }
    }
    settled
}

/// The settled part of a streaming answer (`..settled`, see [`settled_len`]).
pub(crate) fn settled_rows(turn: &Turn, settled: usize, width: usize) -> Vec<Line<'static>> {
    let text = turn.answer().get(..settled).unwrap_or_default();
    if text.trim().is_empty() {
        return Vec::new();
    }
    let mut lines = vec![Line::default()];
    lines.extend(markdown::render(text, width, 2));
    lines
}

/// The answer from `settled` on as Markdown, and once the run answered, its report card.
pub(crate) fn answer_rows(turn: &Turn, settled: usize, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let answer = turn.answer().get(settled..).unwrap_or_default();
    if !answer.trim().is_empty() {
        lines.push(Line::default());
        lines.extend(markdown::render(answer, width, 2));
    }
    if let Some(report) = turn.report() {
        report_rows(report, width, &mut lines);
    }
    lines
}

fn report_rows(report: &FinalReport, width: usize, lines: &mut Vec<Line<'static>>) {
    let style = match report.status {
        FinalStatus::Approved | FinalStatus::Answered | FinalStatus::ReadOnly => theme::OK,
        FinalStatus::Failed | FinalStatus::Aborted => theme::ERROR,
        FinalStatus::ChangesRequested | FinalStatus::Blocked | FinalStatus::BudgetExceeded => {
            theme::WARN
        }
        FinalStatus::NeedsClarification => theme::BUSY,
    };
    if let Some(clarification) = &report.clarification {
        lines.push(Line::default());
        lines.extend(wrap(
            &[Span::styled(clarification.question.clone(), theme::BUSY)],
            width,
            &[Span::raw("  "), Span::styled("? ", theme::BUSY)],
            &[Span::raw("    ")],
        ));
        for (index, option) in clarification.options.iter().enumerate() {
            let mut text = vec![Span::raw(option.label.clone())];
            if !option.description.is_empty() {
                text.push(Span::styled(
                    format!(" — {}", option.description),
                    theme::DIM,
                ));
            }
            lines.extend(wrap(
                &text,
                width,
                &[Span::styled(format!("    {}. ", index + 1), theme::DIM)],
                &[Span::raw("       ")],
            ));
        }
    }
    if let Some(error) = &report.error
        && !report.model_summary.contains(error.as_str())
    {
        lines.push(Line::default());
        lines.extend(wrap(
            &[Span::styled(error.clone(), theme::ERROR)],
            width,
            &[Span::raw("  "), Span::styled("✗ ", theme::ERROR)],
            &[Span::raw("    ")],
        ));
    }

    let mut facts = vec![report.status.as_str().replace('_', " ")];
    if let Some(metrics) = &report.metrics {
        facts.push(fmt_duration(metrics.duration_ms));
        if metrics.tokens.total.total > 0 {
            facts.push(format!("{} tokens", fmt_tokens(metrics.tokens.total.total)));
        }
        if let Some(cost) = braincode_session::report::cost_usd(&metrics.tokens) {
            facts.push(braincode_session::report::fmt_cost(cost));
        }
        match metrics.tool_calls.total {
            0 => {}
            1 => facts.push("1 tool call".into()),
            n => facts.push(format!("{n} tool calls")),
        }
    }
    if let Some(patch) = &report.patch {
        match patch.changed_files.len() {
            0 => {}
            1 => facts.push("1 file changed".into()),
            n => facts.push(format!("{n} files changed")),
        }
    }
    if let Some(review) = &report.review {
        facts.push(format!(
            "review {}",
            review.decision.as_str().replace('_', " ")
        ));
    }
    lines.push(Line::default());
    let card = truncate(&facts.join(" · "), width.saturating_sub(8));
    lines.push(Line::from(vec![
        Span::styled("  ── ", theme::DIM),
        Span::styled(card, style),
        Span::styled(" ──", theme::DIM),
    ]));
    if let Some(patch) = report
        .patch
        .as_ref()
        .filter(|p| !p.changed_files.is_empty())
    {
        let text = change_line(patch);
        lines.push(Line::styled(
            format!("     {}", truncate(&text, width.saturating_sub(5))),
            theme::DIM,
        ));
    }
    // Parallel writers: how each came back (clean, conflict the primary resolved, refused…).
    for merge in &report.merges {
        let mut text = format!("{} writer merged: {}", merge.role, merge.outcome.as_str());
        if let Some(reason) = &merge.reason {
            text.push_str(&format!(" — {reason}"));
        }
        if let Some(checks) = merge.checks_phrase() {
            text.push_str(&format!(" · its {checks}"));
        }
        let style = match merge.outcome {
            braincode_protocol::MergeOutcome::Clean | braincode_protocol::MergeOutcome::Empty => {
                theme::DIM
            }
            braincode_protocol::MergeOutcome::Conflict
            | braincode_protocol::MergeOutcome::Refused => theme::WARN,
            braincode_protocol::MergeOutcome::Failed => theme::ERROR,
        };
        // A clean merge whose checks failed in the writer's worktree stands out too.
        let checks_failed = (merge.checks.as_ref())
            .is_some_and(|c| c.status == braincode_protocol::CheckStatus::Failed);
        let style = if checks_failed && style == theme::DIM {
            theme::WARN
        } else {
            style
        };
        lines.push(Line::styled(
            format!("     {}", truncate(&text, width.saturating_sub(5))),
            style,
        ));
    }
}

/// Each changed file with its lines (`calc.py +1 −1, test_calc.py new +8`), then the run's
/// total. A new file counts: its lines come from the journaled edits, not from `git diff`,
/// which does not see untracked files.
pub(crate) fn change_line(patch: &braincode_protocol::PatchSummary) -> String {
    let mut added_total = 0;
    let mut removed_total = 0;
    let mut counted = true;
    let files: Vec<String> = patch
        .changed_files
        .iter()
        .map(|file| {
            let new = matches!(file.status.trim(), "??" | "A" | "AM");
            let mut text = file.path.clone();
            if new {
                text.push_str(" new");
            }
            match (file.added, file.removed) {
                (Some(added), Some(removed)) => {
                    added_total += added;
                    removed_total += removed;
                    text.push_str(&format!(" +{added}"));
                    if removed > 0 || !new {
                        text.push_str(&format!(" −{removed}"));
                    }
                }
                _ => counted = false,
            }
            text
        })
        .collect();
    let mut text = files.join(", ");
    if counted {
        if patch.changed_files.len() > 1 {
            text.push_str(&format!("  (+{added_total} −{removed_total})"));
        }
    } else if let Some(stats) = &patch.diff_stats {
        let new = patch
            .changed_files
            .iter()
            .filter(|f| f.status.trim() == "??")
            .count();
        text.push_str(&format!(
            "  (+{} −{} in tracked files{})",
            stats.insertions,
            stats.deletions,
            match new {
                0 => String::new(),
                1 => ", and 1 new file".to_string(),
                n => format!(", and {n} new files"),
            }
        ));
    }
    text
}

/// The row under a running turn: spinner, the run's latest status, its clock.
pub(crate) fn live_row(turn: &Turn, width: usize, now_ms: i64) -> Option<Line<'static>> {
    if !turn.is_running() {
        return None;
    }
    let status = turn.status().unwrap_or("working");
    let left = vec![
        Span::raw("  "),
        Span::styled(theme::spinner(now_ms), theme::BUSY),
        Span::raw(" "),
        Span::styled(status.to_string(), theme::DIM),
    ];
    let right = match turn.state().started_at() {
        Some(start) if now_ms >= start => {
            let elapsed = u64::try_from(now_ms - start).unwrap_or(0);
            vec![Span::styled(fmt_clock(elapsed), theme::DIM)]
        }
        _ => Vec::new(),
    };
    Some(row(left, right, width))
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::{ChangedFile, DiffStats, PatchSummary};

    fn file(path: &str, status: &str, lines: Option<(u64, u64)>) -> ChangedFile {
        ChangedFile {
            path: path.into(),
            status: status.into(),
            added: lines.map(|l| l.0),
            removed: lines.map(|l| l.1),
        }
    }

    #[test]
    fn the_report_card_names_each_writer_merge_and_marks_the_ones_not_applied() {
        let report: FinalReport = serde_json::from_value(serde_json::json!({
            "version": 1, "status": "answered", "task": "t", "sessionId": "s",
            "brain": {"id": "b", "name": "B", "mode": "auto"},
            "routing": {"source": "heuristic", "primaryRole": "backend", "reason": "r", "workers": []},
            "todos": [], "modelSummary": "done", "warnings": [],
            "merges": [
                {"role": "frontend", "contextId": "t-1", "worktree": "/w/1", "outcome": "clean"},
                {"role": "dba", "contextId": "t-2", "worktree": "/w/2", "outcome": "refused",
                 "reason": "db.sql changed in the project during the run"}
            ]
        }))
        .unwrap();
        let mut lines = Vec::new();
        report_rows(&report, 100, &mut lines);
        let text = |line: &Line<'_>| {
            line.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        };
        let clean = lines
            .iter()
            .find(|l| text(l).contains("frontend writer merged: clean"))
            .unwrap();
        assert_eq!(clean.style, theme::DIM);
        let refused = lines
            .iter()
            .find(|l| {
                text(l).contains("dba writer merged: refused — db.sql changed in the project")
            })
            .unwrap();
        assert_eq!(refused.style, theme::WARN);
    }

    #[test]
    fn a_new_file_counts_in_the_change_line() {
        let patch = PatchSummary {
            changed_files: vec![
                file("calc.py", " M", Some((1, 1))),
                file("test_calc.py", "??", Some((8, 0))),
            ],
            // `git diff --shortstat` does not see the untracked file.
            diff_stats: Some(DiffStats {
                files: 1,
                insertions: 1,
                deletions: 1,
                untracked: 1,
            }),
            ..PatchSummary::default()
        };
        assert_eq!(
            change_line(&patch),
            "calc.py +1 −1, test_calc.py new +8  (+9 −1)"
        );
        // Without the journal's counts, git's numbers say what they cover.
        let uncounted = PatchSummary {
            changed_files: vec![file("calc.py", " M", None), file("t.py", "??", None)],
            ..patch
        };
        assert_eq!(
            change_line(&uncounted),
            "calc.py, t.py new  (+1 −1 in tracked files, and 1 new file)"
        );
    }
}
