//! Drawing the editor: a rounded box with the wrapped draft (paste chips, `@` references and
//! the `/command` highlighted), the cursor, a key hint, and the completion popup above it.

use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};
use unicode_width::UnicodeWidthChar;

use super::InputState;
use super::complete::{CompletionKind, POPUP_MAX_ROWS, Popup};

/// Most rows of text the editor shows; a longer draft scrolls with the cursor.
pub const INPUT_MAX_ROWS: usize = 6;
const PREFIX_WIDTH: usize = 2;
const PLACEHOLDER: &str = "Ask Braincode · @ adds a file · @@ a session · / a command";

/// One screen row of the draft: a byte range without its newline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Row {
    start: usize,
    end: usize,
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Cuts the draft into rows of at most `width` columns, between words when it can (a space
/// that does not fit hangs at the end of its row). When the cursor ends a full row, an empty
/// row follows so that it has somewhere to be.
fn wrap(text: &str, width: usize, cursor: usize) -> Vec<Row> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut offset = 0;
    for line in text.split('\n') {
        let mut start = offset;
        let mut used = 0;
        // Just after the row's last space, and the width up to there.
        let mut after_space: Option<(usize, usize)> = None;
        for (i, c) in line.char_indices() {
            let at = offset + i;
            let w = char_width(c);
            if used + w > width && used > 0 {
                if c == ' ' {
                    rows.push(Row { start, end: at + 1 });
                    start = at + 1;
                    used = 0;
                    after_space = None;
                    continue;
                }
                match after_space {
                    Some((brk, brk_used)) if brk > start => {
                        rows.push(Row { start, end: brk });
                        start = brk;
                        used -= brk_used;
                    }
                    _ => {
                        rows.push(Row { start, end: at });
                        start = at;
                        used = 0;
                    }
                }
                after_space = None;
            }
            used += w;
            if c == ' ' {
                after_space = Some((at + 1, used));
            }
        }
        let end = offset + line.len();
        rows.push(Row { start, end });
        if used >= width && cursor == end {
            rows.push(Row { start: end, end });
        }
        offset = end + 1;
    }
    rows
}

/// Row and column of the cursor.
fn cursor_position(text: &str, rows: &[Row], cursor: usize) -> (usize, usize) {
    let row = rows
        .iter()
        .rposition(|r| r.start <= cursor && cursor <= r.end)
        .unwrap_or(0);
    let column = rows.get(row).map_or(0, |r| {
        text[r.start..cursor.clamp(r.start, r.end)]
            .chars()
            .map(char_width)
            .sum()
    });
    (row, column)
}

fn text_width(width: u16) -> usize {
    usize::from(width)
        .saturating_sub(2)
        .saturating_sub(PREFIX_WIDTH)
}

impl InputState {
    /// Rows the editor needs at `width` columns: the wrapped draft (1 to
    /// [`INPUT_MAX_ROWS`]) plus the two border rows. The popup is drawn above that area.
    pub fn height(&self, width: u16) -> u16 {
        let rows = wrap(self.text(), text_width(width), self.cursor()).len();
        u16::try_from(rows.clamp(1, INPUT_MAX_ROWS)).unwrap_or(1) + 2
    }
}

/// Styled byte ranges of the draft: chips, `@` references, the leading `/command`.
fn highlights(state: &InputState) -> Vec<(Range<usize>, Style)> {
    let text = state.text();
    let chip = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let reference = Style::new().fg(Color::Blue);
    let command = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
    let mut ranges: Vec<(Range<usize>, Style)> = Vec::new();
    for paste in &state.pastes {
        for (at, _) in text.match_indices(paste.label.as_str()) {
            ranges.push((at..at + paste.label.len(), chip));
        }
    }
    let mut word_start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), word_start) {
            (false, None) => word_start = Some(i),
            (true, Some(start)) => {
                let word = &text[start..i];
                let style = if word.starts_with('@') && word.len() > 1 {
                    Some(reference)
                } else if start == 0 && word.starts_with('/') {
                    Some(command)
                } else {
                    None
                };
                let overlaps = ranges.iter().any(|(r, _)| r.start < i && start < r.end);
                if let Some(style) = style
                    && !overlaps
                {
                    ranges.push((start..i, style));
                }
                word_start = None;
            }
            _ => {}
        }
    }
    ranges.sort_by_key(|(r, _)| r.start);
    ranges
}

/// A row as spans, split where the highlights start and end.
fn row_spans<'a>(text: &'a str, row: Row, ranges: &[(Range<usize>, Style)]) -> Vec<Span<'a>> {
    let mut spans = Vec::new();
    let mut at = row.start;
    for (range, style) in ranges {
        if range.end <= at || range.start >= row.end {
            continue;
        }
        let start = range.start.max(at);
        if start > at {
            spans.push(Span::raw(&text[at..start]));
        }
        let end = range.end.min(row.end);
        spans.push(Span::styled(&text[start..end], *style));
        at = end;
    }
    if at < row.end {
        spans.push(Span::raw(&text[at..row.end]));
    }
    spans
}

/// Draws the editor in `area` (use [`InputState::height`] for its height) and, when one is
/// open, the completion popup in the rows just above it; places the terminal cursor.
pub fn draw(frame: &mut Frame, area: Rect, state: &InputState) {
    let dim = Style::new().fg(Color::DarkGray);
    let hint = if state.popup().is_some() {
        " tab accept · ↑↓ choose · esc close "
    } else {
        " enter send · alt+enter newline "
    };
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(dim)
        .title_bottom(Line::styled(hint, dim).right_aligned());
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    if inner.width as usize <= PREFIX_WIDTH || inner.height == 0 {
        return;
    }
    let text = state.text();
    let rows = wrap(text, text_width(area.width), state.cursor());
    let (cursor_row, cursor_column) = cursor_position(text, &rows, state.cursor());
    let visible = usize::from(inner.height);
    let first = cursor_row.saturating_sub(visible - 1);
    let ranges = highlights(state);
    let prompt = Span::styled("› ", Style::new().fg(Color::Cyan));
    let lines: Vec<Line> = if text.is_empty() {
        vec![Line::from(vec![
            prompt,
            Span::styled(PLACEHOLDER, dim.add_modifier(Modifier::ITALIC)),
        ])]
    } else {
        rows.iter()
            .enumerate()
            .skip(first)
            .take(visible)
            .map(|(i, row)| {
                let lead = if i == 0 {
                    prompt.clone()
                } else {
                    Span::raw("  ")
                };
                let mut spans = vec![lead];
                spans.extend(row_spans(text, *row, &ranges));
                Line::from(spans)
            })
            .collect()
    };
    frame.render_widget(Paragraph::new(lines), inner);
    let x = inner.x + u16::try_from(PREFIX_WIDTH + cursor_column).unwrap_or(inner.width);
    let y = inner.y + u16::try_from(cursor_row - first).unwrap_or(0);
    frame.set_cursor_position((x.min(inner.right().saturating_sub(1)), y));
    if let Some(popup) = state.popup() {
        draw_popup(frame, area, popup);
    }
}

/// `s` cut to `width` columns, ending in `…` when cut.
fn fit(s: &str, width: usize) -> String {
    let total: usize = s.chars().map(char_width).sum();
    if total <= width {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// `s` cut from the left to `width` columns (a path keeps its file name), `…` first.
fn fit_left(s: &str, width: usize) -> String {
    let total: usize = s.chars().map(char_width).sum();
    if total <= width || width == 0 {
        return s.to_string();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = char_width(c);
        if used + w + 1 > width {
            break;
        }
        kept.push(c);
        used += w;
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

fn draw_popup(frame: &mut Frame, input: Rect, popup: &Popup) {
    let shown = popup.candidates.len().min(POPUP_MAX_ROWS);
    let note_rows = usize::from(popup.note.is_some());
    let wanted = u16::try_from(shown + note_rows + 2).unwrap_or(u16::MAX);
    let height = wanted.min(input.y.saturating_sub(frame.area().y));
    if height < 3 {
        return;
    }
    let area = Rect {
        x: input.x,
        y: input.y - height,
        width: input.width,
        height,
    };
    let (what, noun) = match popup.kind {
        CompletionKind::File => ("@ files", "match"),
        CompletionKind::Session => ("@@ sessions", "match"),
        CompletionKind::Command => ("/ commands", "command"),
    };
    let count = popup.candidates.len();
    let title = match count {
        0 => format!(" {what} "),
        1 => format!(" {what} · 1 {noun} "),
        n => format!(
            " {what} · {n} {noun}{} ",
            if noun == "match" { "es" } else { "s" }
        ),
    };
    let dim = Style::new().fg(Color::DarkGray);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(Style::new().fg(Color::Cyan))
        .title(Line::styled(title, Style::new().fg(Color::Cyan)));
    let inner = block.inner(area);
    frame.render_widget(Clear, area);
    frame.render_widget(block, area);
    let rows = usize::from(inner.height).saturating_sub(note_rows);
    let offset = (popup.selected + 1).saturating_sub(rows);
    let width = usize::from(inner.width);
    let label_width = popup
        .candidates
        .iter()
        .skip(offset)
        .take(rows)
        .map(|c| c.label.chars().map(char_width).sum::<usize>())
        .max()
        .unwrap_or(0)
        .min(width.saturating_sub(2));
    let mut lines: Vec<Line> = Vec::new();
    for (i, candidate) in popup.candidates.iter().enumerate().skip(offset).take(rows) {
        let selected = i == popup.selected;
        let marker = if selected { "› " } else { "  " };
        let label = match popup.kind {
            CompletionKind::File => fit_left(&candidate.label, width.saturating_sub(2)),
            _ => fit(&candidate.label, width.saturating_sub(2)),
        };
        let label_style = if selected {
            Style::new().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::new()
        };
        let pad = label_width.saturating_sub(label.chars().map(char_width).sum());
        let mut spans = vec![
            Span::styled(marker, Style::new().fg(Color::Cyan)),
            Span::styled(label, label_style),
        ];
        let room = width.saturating_sub(2 + label_width + 2);
        if !candidate.detail.is_empty() && room > 1 {
            spans.push(Span::raw(" ".repeat(pad + 2)));
            spans.push(Span::styled(fit(&candidate.detail, room), dim));
        }
        lines.push(Line::from(spans));
    }
    if let Some(note) = &popup.note {
        lines.push(Line::styled(
            format!("  {}", fit(note, width.saturating_sub(2))),
            dim.add_modifier(Modifier::ITALIC),
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_between_words() {
        let text = "one two three";
        let rows: Vec<&str> = wrap(text, 8, 0)
            .iter()
            .map(|r| &text[r.start..r.end])
            .collect();
        assert_eq!(rows, ["one two ", "three"]);
        let text = "abc defgh";
        let rows: Vec<&str> = wrap(text, 3, 0)
            .iter()
            .map(|r| &text[r.start..r.end])
            .collect();
        assert_eq!(rows, ["abc ", "def", "gh"]);
    }

    #[test]
    fn wrap_cuts_rows_and_keeps_a_row_for_the_cursor() {
        let rows = wrap("abcdef\ngh", 4, 0);
        assert_eq!(
            rows,
            vec![
                Row { start: 0, end: 4 },
                Row { start: 4, end: 6 },
                Row { start: 7, end: 9 }
            ]
        );
        let rows = wrap("abcd", 4, 4);
        assert_eq!(rows.len(), 2);
        assert_eq!(cursor_position("abcd", &rows, 4), (1, 0));
        assert_eq!(
            cursor_position("abcdef\ngh", &wrap("abcdef\ngh", 4, 5), 5),
            (1, 1)
        );
    }

    #[test]
    fn fitting_marks_the_cut() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit_left("src/deep/main.rs", 8), "…main.rs");
        assert_eq!(fit("ab", 4), "ab");
    }
}
