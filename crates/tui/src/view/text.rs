//! Text fitting: cleaning, measuring, word-wrapping and truncating styled text to a width,
//! and the short number formats of the screen.

use std::borrow::Cow;

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The mark left where text was cut.
pub(crate) const ELLIPSIS: &str = "…";

/// Text safe to put in a cell: tabs become spaces, other control characters (escape
/// sequences from tool output, carriage returns) are dropped; newlines stay.
pub(crate) fn clean(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            // An ANSI escape sequence (`ESC [ … final`) goes whole.
            '\x1b' if chars.as_str().starts_with('[') => {
                for c in chars.by_ref().skip(1) {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Display width of `text` in cells.
pub(crate) fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// Display width of a run of spans.
pub(crate) fn spans_width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| width(&s.content)).sum()
}

/// `text` cut to at most `max` cells, ending in `…` when cut (one line: newlines become
/// spaces).
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let text = clean(text);
    let text = text.replace('\n', " ");
    if width(&text) <= max {
        return text;
    }
    let mut out = String::new();
    let mut used = 0;
    let budget = max.saturating_sub(1);
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > budget {
            break;
        }
        used += w;
        out.push(c);
    }
    if max > 0 {
        out.push_str(ELLIPSIS);
    }
    out
}

/// Spans cut to at most `max` cells, ending in `…` (in the last kept style) when cut.
pub(crate) fn truncate_spans(spans: Vec<Span<'static>>, max: usize) -> Vec<Span<'static>> {
    if spans_width(&spans) <= max {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = width(&span.content);
        if used + w < max {
            used += w;
            out.push(span);
            continue;
        }
        let text = truncate(&span.content, max - used);
        out.push(Span::styled(text, span.style));
        return out;
    }
    out
}

/// One row with `left` at the start and `right` flush with the end; `left` gives way first.
pub(crate) fn row(
    left: Vec<Span<'static>>,
    right: Vec<Span<'static>>,
    width: usize,
) -> Line<'static> {
    let right_width = spans_width(&right);
    if right.is_empty() || right_width + 2 > width {
        return Line::from(truncate_spans(left, width));
    }
    let mut spans = truncate_spans(left, width - right_width - 1);
    let pad = width - right_width - spans_width(&spans);
    spans.push(Span::raw(" ".repeat(pad)));
    spans.extend(right);
    Line::from(spans)
}

/// Word-wraps styled text to `width` cells: the first row starts with `first`, the others
/// with `rest`. Newlines in the text break rows; a word wider than a row is split.
pub(crate) fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut wrapper = Wrapper {
        out: Vec::new(),
        line: first.to_vec(),
        used: spans_width(first),
        empty: true,
        width,
        rest,
        rest_width: spans_width(rest),
    };
    for span in spans {
        let text = clean(&span.content);
        for piece in pieces(&text) {
            wrapper.piece(piece, span.style);
        }
    }
    wrapper.finish()
}

/// Cuts styled text into rows of `width` cells without moving any character (code keeps its
/// indentation): every row starts with `prefix`.
pub(crate) fn hard_wrap(
    spans: &[Span<'_>],
    width: usize,
    prefix: &[Span<'static>],
) -> Vec<Line<'static>> {
    let mut wrapper = Wrapper {
        out: Vec::new(),
        line: prefix.to_vec(),
        used: spans_width(prefix),
        empty: true,
        width,
        rest: prefix,
        rest_width: spans_width(prefix),
    };
    for span in spans {
        let text = clean(&span.content);
        for c in text.chars().filter(|&c| c != '\n') {
            let cw = c.width().unwrap_or(0);
            if wrapper.used + cw > width && !wrapper.empty {
                wrapper.break_line();
            }
            let mut buf = [0u8; 4];
            wrapper.push(c.encode_utf8(&mut buf), span.style, cw);
        }
    }
    wrapper.finish()
}

struct Wrapper<'r> {
    out: Vec<Line<'static>>,
    line: Vec<Span<'static>>,
    used: usize,
    /// No text on the current row yet (only its prefix).
    empty: bool,
    width: usize,
    rest: &'r [Span<'static>],
    rest_width: usize,
}

impl Wrapper<'_> {
    fn piece(&mut self, piece: &str, style: Style) {
        if piece == "\n" {
            self.break_line();
            return;
        }
        let w = width(piece);
        if piece.starts_with(' ') {
            if self.empty {
                return;
            }
            if self.used + w <= self.width {
                self.push(piece, style, w);
            } else {
                self.break_line();
            }
            return;
        }
        if self.used + w <= self.width {
            self.push(piece, style, w);
        } else if !self.empty && self.rest_width + w <= self.width {
            self.break_line();
            self.push(piece, style, w);
        } else {
            for c in piece.chars() {
                let cw = c.width().unwrap_or(0);
                if self.used + cw > self.width && !self.empty {
                    self.break_line();
                }
                let mut buf = [0u8; 4];
                self.push(c.encode_utf8(&mut buf), style, cw);
            }
        }
    }

    fn push(&mut self, text: &str, style: Style, w: usize) {
        self.used += w;
        self.empty = false;
        if let Some(last) = self.line.last_mut()
            && last.style == style
        {
            last.content.to_mut().push_str(text);
            return;
        }
        self.line.push(Span::styled(text.to_string(), style));
    }

    fn break_line(&mut self) {
        let line = std::mem::replace(&mut self.line, self.rest.to_vec());
        self.out.push(trim_end(line));
        self.used = self.rest_width;
        self.empty = true;
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if !self.empty || self.out.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.out.push(trim_end(line));
        }
        self.out
    }
}

fn trim_end(mut spans: Vec<Span<'static>>) -> Line<'static> {
    let count = spans.len();
    while let Some(last) = spans.last_mut() {
        let trimmed = last.content.trim_end_matches(' ').len();
        if trimmed == last.content.len() {
            break;
        }
        if trimmed == 0 && count > 1 {
            spans.pop();
            continue;
        }
        last.content.to_mut().truncate(trimmed);
        break;
    }
    Line::from(spans)
}

/// Splits text into words, runs of spaces and newlines.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let end = if first == '\n' {
            1
        } else {
            let space = first == ' ';
            rest.find(|c: char| c == '\n' || (c == ' ') != space)
                .unwrap_or(rest.len())
        };
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

/// A token count the way a status line says it: `950`, `1.2k`, `12k`, `3.4M`.
pub(crate) fn fmt_tokens(tokens: u64) -> String {
    match tokens {
        0..1_000 => tokens.to_string(),
        1_000..10_000 => format!("{:.1}k", tokens as f64 / 1_000.0),
        10_000..1_000_000 => format!("{}k", tokens / 1_000),
        _ => format!("{:.1}M", tokens as f64 / 1_000_000.0),
    }
}

/// A duration the way a row says it: `850ms`, `3.2s`, `42s`, `2m05s`, `1h02m`.
pub(crate) fn fmt_duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..10_000 => format!("{:.1}s", ms as f64 / 1_000.0),
        10_000..60_000 => format!("{}s", ms / 1_000),
        60_000..3_600_000 => format!("{}m{:02}s", ms / 60_000, ms / 1_000 % 60),
        _ => format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60),
    }
}

/// A running clock, in whole seconds: `9s`, `42s`, `2m05s`.
pub(crate) fn fmt_clock(ms: u64) -> String {
    if ms < 60_000 {
        format!("{}s", ms / 1_000)
    } else {
        fmt_duration(ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn wraps_words_with_prefixes_and_splits_long_words() {
        let lines = wrap(
            &[Span::raw("the quick brown fox jumps")],
            12,
            &[Span::raw("• ")],
            &[Span::raw("  ")],
        );
        assert_eq!(texts(&lines), ["• the quick", "  brown fox", "  jumps"]);
        let lines = wrap(&[Span::raw("abcdefghij")], 4, &[], &[]);
        assert_eq!(texts(&lines), ["abcd", "efgh", "ij"]);
        let lines = wrap(&[Span::raw("a\n\nb")], 10, &[], &[]);
        assert_eq!(texts(&lines), ["a", "", "b"]);
        assert_eq!(texts(&wrap(&[], 10, &[Span::raw("> ")], &[])), [">"]);
    }

    #[test]
    fn never_loops_or_panics_on_zero_width() {
        let lines = wrap(
            &[Span::raw("abc def")],
            0,
            &[Span::raw("│ ")],
            &[Span::raw("│ ")],
        );
        assert!(!lines.is_empty());
        assert_eq!(truncate("hello", 0), "");
        assert_eq!(truncate("hello", 1), "…");
        assert_eq!(truncate("hello", 4), "hel…");
        assert_eq!(truncate("hello", 5), "hello");
    }

    #[test]
    fn cleans_control_characters() {
        assert_eq!(clean("a\tb\x1b[1;31mc\x1b[0m\r\n"), "a    bc\n");
        assert_eq!(truncate("wide 漢字 text", 8), "wide 漢…");
    }

    #[test]
    fn rows_keep_the_right_side() {
        let line = row(
            vec![Span::raw("left side text")],
            vec![Span::raw("12s")],
            12,
        );
        assert_eq!(line.to_string(), "left si… 12s");
        let line = row(vec![Span::raw("ab")], vec![Span::raw("1s")], 8);
        assert_eq!(line.to_string(), "ab    1s");
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(fmt_tokens(950), "950");
        assert_eq!(fmt_tokens(1_234), "1.2k");
        assert_eq!(fmt_tokens(45_600), "45k");
        assert_eq!(fmt_duration(3_210), "3.2s");
        assert_eq!(fmt_duration(125_000), "2m05s");
    }
}
