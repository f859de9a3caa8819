//! The status line: brain and mode, the models at work, tokens (and cost), permission mode,
//! sandbox and session — the least important parts give way first on a narrow screen.

use ratatui::text::{Line, Span};

use super::text::{fmt_tokens, truncate_spans, width as text_width};
use super::theme;
use crate::app::StatusLine;

const SEPARATOR: &str = " │ ";

/// The status line as one row of `width` cells.
pub(crate) fn status_row(status: &StatusLine, width: usize, now_ms: i64) -> Line<'static> {
    // (priority, text, style): the lowest priority is dropped first when the row is full.
    let mut parts: Vec<(u8, String, ratatui::style::Style)> = Vec::new();
    let brain = match (&status.brain, status.mode) {
        (Some(brain), Some(mode)) => format!("{brain} · {mode}"),
        (Some(brain), None) => brain.clone(),
        (None, _) => "no brain yet".to_string(),
    };
    parts.push((9, brain, theme::TITLE));
    for (index, (role, model)) in status.models.iter().enumerate() {
        let priority = if index == 0 { 7 } else { 2 };
        parts.push((priority, format!("{role} {model}"), theme::ROLE));
    }
    let mut tokens = format!("{} tok", fmt_tokens(status.tokens));
    if let Some(cost) = status.cost {
        tokens.push_str(&format!(" · {}", braincode_session::report::fmt_cost(cost)));
    }
    parts.push((6, tokens, theme::STATUS));
    if !status.permission.is_empty() {
        parts.push((8, format!("perm {}", status.permission), theme::WARN));
    }
    if !status.sandbox.is_empty() {
        parts.push((4, format!("sandbox {}", status.sandbox), theme::STATUS));
    }
    if !status.session_id.is_empty() {
        // The short id every command accepts (`/resume b56614`, `sessions show b56614`).
        let short = braincode_protocol::short_form(&status.session_id).to_string();
        parts.push((3, short, theme::DIM));
    }

    let lead = if status.running {
        theme::spinner(now_ms)
    } else {
        "●"
    };
    let lead_style = if status.running {
        theme::BUSY
    } else {
        theme::OK
    };
    let fixed = 3;
    let fits = |parts: &[(u8, String, ratatui::style::Style)]| {
        let text: usize = parts.iter().map(|(_, t, _)| text_width(t)).sum();
        fixed + text + text_width(SEPARATOR) * parts.len().saturating_sub(1) <= width
    };
    while parts.len() > 1 && !fits(&parts) {
        let lowest = parts
            .iter()
            .enumerate()
            .min_by_key(|(index, (priority, _, _))| (*priority, usize::MAX - index))
            .map(|(index, _)| index);
        if let Some(index) = lowest {
            parts.remove(index);
        }
    }
    let mut spans = vec![
        Span::raw(" "),
        Span::styled(lead, lead_style),
        Span::raw(" "),
    ];
    for (index, (_, text, style)) in parts.into_iter().enumerate() {
        if index > 0 {
            spans.push(Span::styled(SEPARATOR, theme::DIM));
        }
        spans.push(Span::styled(text, style));
    }
    Line::from(truncate_spans(spans, width)).style(theme::STATUS_BAR)
}
