//! Drawing the approval panel: title and queue position, the facts (who asks, file or
//! command, policy), the scrollable body, and the keys (or the reason field).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};
use unicode_width::UnicodeWidthChar;

use crate::view::theme;

use super::ApprovalPanel;
use super::content::{Fact, body_lines, facts, title};

/// Width of the fact labels' column.
const LABEL_WIDTH: usize = 10;
/// Most body rows [`ApprovalPanel::height`] asks for (a longer body scrolls).
const BODY_ROWS: usize = 16;

/// `text` word-wrapped to `first` columns on its first row and `rest` on the others (a word
/// wider than a row is split).
fn wrap_words(text: &str, first: usize, rest: usize) -> Vec<String> {
    let rest = rest.max(1);
    let mut width = first.max(1);
    let mut rows = vec![String::new()];
    let mut used = 0;
    for word in text.split(' ') {
        let word_width: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
        let gap = usize::from(used > 0);
        if used > 0 && used + gap + word_width > width {
            rows.push(String::new());
            width = rest;
            used = 0;
        } else if gap == 1 {
            if let Some(row) = rows.last_mut() {
                row.push(' ');
            }
            used += 1;
        }
        for c in word.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width && used > 0 {
                rows.push(String::new());
                width = rest;
                used = 0;
            }
            if let Some(row) = rows.last_mut() {
                row.push(c);
            }
            used += w;
        }
    }
    rows
}

/// The facts, word-wrapped under their labels (a `· ` item hangs under its text).
fn fact_lines(facts: &[Fact], width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for fact in facts {
        let hang = if fact.value.starts_with("· ") { 2 } else { 0 };
        let room = width.saturating_sub(LABEL_WIDTH);
        let rows = wrap_words(&fact.value, room, room.saturating_sub(hang));
        for (i, row) in rows.into_iter().enumerate() {
            let lead = if i == 0 {
                format!("{:<LABEL_WIDTH$}", fact.label)
            } else {
                " ".repeat(LABEL_WIDTH + hang)
            };
            lines.push(Line::from(vec![
                Span::styled(lead, theme::DIM),
                Span::styled(row, fact.style),
            ]));
        }
    }
    lines
}

/// Width of the text inside the border and the left padding.
fn text_width(width: u16) -> usize {
    usize::from(width).saturating_sub(3)
}

impl ApprovalPanel {
    /// Rows the panel needs at `width` columns to show the facts, up to 16 body rows and
    /// the keys (0 when nothing is waiting); give it less and the body scrolls.
    pub fn height(&self, width: u16) -> u16 {
        let Some(request) = self.current() else {
            return 0;
        };
        let facts = fact_lines(&facts(request), text_width(width)).len();
        let body = body_lines(request).len().min(BODY_ROWS);
        let body = if body == 0 { 0 } else { body + 1 };
        u16::try_from(2 + facts + body + 2).unwrap_or(u16::MAX)
    }
}

fn key_hint(key: &'static str, what: &'static str, color: Color) -> [Span<'static>; 2] {
    [
        Span::styled(key, Style::new().fg(color).add_modifier(Modifier::BOLD)),
        Span::raw(what),
    ]
}

/// Draws the panel over `area` (nothing when no request is waiting); in the reason field,
/// places the terminal cursor.
pub fn draw(frame: &mut Frame, area: Rect, panel: &ApprovalPanel) {
    let Some(request) = panel.current() else {
        return;
    };
    let border = Style::new().fg(Color::Yellow);
    let dim = Style::new().fg(Color::DarkGray);
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(border)
        .title(Line::styled(
            format!(" {} ", title(request)),
            border.add_modifier(Modifier::BOLD),
        ));
    if panel.len() > 1 {
        block =
            block.title(Line::styled(format!(" 1 of {} ", panel.len()), border).right_aligned());
    }
    let inner = block.inner(area);
    if inner.height < 2 || inner.width < 10 {
        frame.render_widget(Clear, area);
        frame.render_widget(block, area);
        return;
    }
    let width = text_width(area.width);
    let facts = fact_lines(&facts(request), width);
    let body = body_lines(request);
    let height = usize::from(inner.height);
    // The keys always show; the facts come next; the body gets what is left.
    let fact_rows = facts.len().min(height - 1);
    let body_rows = height.saturating_sub(fact_rows + 3);
    let body_rows = if body.is_empty() { 0 } else { body_rows };
    let scroll = panel.scroll().min(body.len().saturating_sub(body_rows));
    if body_rows > 0 && body.len() > body_rows {
        let last = (scroll + body_rows).min(body.len());
        block = block.title_bottom(
            Line::styled(
                format!(" ↑↓ lines {}–{last} of {} ", scroll + 1, body.len()),
                dim,
            )
            .right_aligned(),
        );
    }
    if panel.reason().is_some() {
        block = block.title_bottom(Line::styled(" enter deny · esc back ", dim).left_aligned());
    }
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);

    let mut lines: Vec<Line> = facts.into_iter().take(fact_rows).collect();
    if body_rows > 0 {
        lines.push(Line::raw(""));
        lines.extend(body.into_iter().skip(scroll).take(body_rows));
    }
    let pad = Rect {
        x: inner.x + 1,
        width: inner.width.saturating_sub(1),
        ..inner
    };
    frame.render_widget(Paragraph::new(lines), pad);

    let footer_area = Rect {
        y: inner.bottom() - 1,
        height: 1,
        ..pad
    };
    let footer = match panel.reason() {
        Some(reason) => {
            let label = "reason for the model: ";
            let room = usize::from(footer_area.width).saturating_sub(label.len() + 1);
            let shown: String = {
                let chars: Vec<char> = reason.chars().collect();
                chars[chars.len().saturating_sub(room)..].iter().collect()
            };
            let cursor_x = footer_area.x
                + u16::try_from(
                    label.len() + shown.chars().map(|c| c.width().unwrap_or(0)).sum::<usize>(),
                )
                .unwrap_or(0);
            frame.set_cursor_position((
                cursor_x.min(footer_area.right().saturating_sub(1)),
                footer_area.y,
            ));
            Line::from(vec![
                Span::styled(label, Style::new().fg(Color::Red)),
                Span::raw(shown),
            ])
        }
        None => {
            let mut spans = Vec::new();
            spans.extend(key_hint("y", " allow once  ", Color::Green));
            let session = if panel.current().is_some_and(|r| r.once_only.is_some()) {
                " once only  "
            } else {
                " allow for session  "
            };
            spans.extend(key_hint("a", session, Color::Green));
            spans.extend(key_hint("n", " deny  ", Color::Red));
            spans.extend(key_hint("r", " deny with reason  ", Color::Red));
            spans.extend(key_hint("esc", " deny", Color::Red));
            Line::from(spans)
        }
    };
    frame.render_widget(Paragraph::new(footer), footer_area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_wrap_under_their_label() {
        let facts = [Fact {
            label: "policy",
            value: "· one two three four".into(),
            style: Style::new(),
        }];
        let lines: Vec<String> = fact_lines(&facts, 20)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            lines,
            [
                "policy    · one two",
                "            three",
                "            four"
            ]
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 20));
        assert_eq!(wrap_words("abcdefgh ij", 3, 3), ["abc", "def", "gh", "ij"]);
    }
}
