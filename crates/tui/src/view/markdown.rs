//! Markdown to terminal rows: headings, paragraphs with emphasis, inline code and links,
//! lists, quotes, rules, tables and fenced code blocks framed with their language label and
//! keyword highlighting. Everything is wrapped to the width it is given.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::{Language, highlight};
use super::text::{hard_wrap, spans_width, truncate, width as text_width, wrap};
use super::theme;

/// Renders `markdown` into rows of at most `width` cells, each starting with `margin` spaces.
pub(crate) fn render(markdown: &str, width: usize, margin: usize) -> Vec<Line<'static>> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut renderer = Renderer::new(width, margin);
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    renderer.finish()
}

enum Container {
    Quote,
    Item { bullet: String, used: bool },
}

struct CodeBlock {
    language: String,
    text: String,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
}

struct Renderer {
    width: usize,
    margin: String,
    out: Vec<Line<'static>>,
    inline: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    lists: Vec<Option<u64>>,
    links: Vec<(String, usize)>,
    pending_blank: bool,
    code: Option<CodeBlock>,
    table: Option<Table>,
}

const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];

impl Renderer {
    fn new(width: usize, margin: usize) -> Self {
        Self {
            width,
            margin: " ".repeat(margin),
            out: Vec::new(),
            inline: Vec::new(),
            styles: Vec::new(),
            containers: Vec::new(),
            lists: Vec::new(),
            links: Vec::new(),
            pending_blank: false,
            code: None,
            table: None,
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::default(), |style, s| style.patch(*s))
    }

    fn text(&mut self, text: &str, style: Style) {
        if let Some(table) = &mut self.table {
            table.cell.push_str(text);
        } else if let Some(code) = &mut self.code {
            code.text.push_str(text);
        } else {
            self.inline.push(Span::styled(text.to_string(), style));
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text, self.style()),
            Event::Code(code) => self.text(&code, self.style().patch(theme::CODE)),
            Event::InlineMath(math) | Event::DisplayMath(math) => {
                self.text(&math, self.style().patch(theme::CODE));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                self.text(html.trim_end_matches('\n'), theme::DIM);
            }
            Event::SoftBreak => self.text(" ", self.style()),
            Event::HardBreak => self.text("\n", self.style()),
            Event::Rule => {
                self.flush();
                self.start_block();
                let (first, _) = self.prefixes();
                let room = self.width.saturating_sub(spans_width(&first)).min(40);
                let mut spans = first;
                spans.push(Span::styled("─".repeat(room), theme::DIM));
                self.out.push(Line::from(spans));
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "☑ " } else { "☐ " };
                self.text(mark, self.style());
            }
            Event::FootnoteReference(name) => {
                self.text(&format!("[^{name}]"), theme::DIM);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                let index = match level {
                    HeadingLevel::H1 => 0,
                    HeadingLevel::H2 => 1,
                    _ => 2,
                };
                self.styles.push(theme::HEADINGS[index]);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some(CodeBlock {
                    language,
                    text: String::new(),
                });
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let bullet = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}. ", *number - 1)
                    }
                    _ => BULLETS[depth % BULLETS.len()].to_string(),
                };
                self.containers.push(Container::Item {
                    bullet,
                    used: false,
                });
            }
            Tag::FootnoteDefinition(name) => {
                self.flush();
                self.text(&format!("[^{name}]: "), theme::DIM);
            }
            Tag::Table(_) => {
                self.flush();
                self.table = Some(Table::default());
            }
            Tag::Emphasis => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.styles
                    .push(Style::new().add_modifier(Modifier::CROSSED_OUT));
            }
            Tag::Link { dest_url, .. } => {
                self.links.push((dest_url.to_string(), self.inline.len()));
                self.styles.push(theme::LINK);
            }
            Tag::Image { .. } => {
                self.text("[image: ", theme::DIM);
                self.styles.push(theme::DIM);
            }
            Tag::TableHead
            | Tag::TableRow
            | Tag::TableCell
            | Tag::Superscript
            | Tag::Subscript
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::HtmlBlock
            | TagEnd::MetadataBlock(_)
            | TagEnd::FootnoteDefinition => {
                self.flush();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(&code);
                }
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.pending_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table(&table.rows);
                }
                self.pending_blank = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(table) = &mut self.table {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::TableCell => {
                if let Some(table) = &mut self.table {
                    let cell = std::mem::take(&mut table.cell);
                    table.row.push(cell);
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, start)) = self.links.pop() {
                    let label: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    if !url.is_empty() && !url.starts_with('#') && label != url {
                        self.text(&format!(" ({url})"), theme::DIM);
                    }
                }
            }
            TagEnd::Image => {
                self.styles.pop();
                self.text("]", theme::DIM);
            }
            TagEnd::Superscript
            | TagEnd::Subscript
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition => {}
        }
    }

    /// The prefixes of a block's first row and of its other rows; the innermost list item
    /// that has not shown its bullet shows it now.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut first = vec![Span::raw(self.margin.clone())];
        let mut rest = first.clone();
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    first.push(Span::styled("│ ", theme::DIM));
                    rest.push(Span::styled("│ ", theme::DIM));
                }
                Container::Item { bullet, used } => {
                    let pad = " ".repeat(text_width(bullet));
                    if *used {
                        first.push(Span::raw(pad.clone()));
                    } else {
                        first.push(Span::styled(bullet.clone(), theme::DIM));
                        *used = true;
                    }
                    rest.push(Span::raw(pad));
                }
            }
        }
        (first, rest)
    }

    /// A blank row between blocks (inside quotes, the quote bar goes on).
    fn start_block(&mut self) {
        if !std::mem::take(&mut self.pending_blank) || self.out.is_empty() {
            return;
        }
        let mut spans = vec![Span::raw(self.margin.clone())];
        for container in &self.containers {
            if let Container::Quote = container {
                spans.push(Span::styled("│", theme::DIM));
            }
        }
        self.out.push(Line::from(spans));
    }

    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        self.start_block();
        let (first, rest) = self.prefixes();
        let inline = std::mem::take(&mut self.inline);
        self.out.extend(wrap(&inline, self.width, &first, &rest));
    }

    fn code_block(&mut self, code: &CodeBlock) {
        self.start_block();
        let (first, rest) = self.prefixes();
        let room = self.width.saturating_sub(spans_width(&first));
        let text = code.text.strip_suffix('\n').unwrap_or(&code.text);
        let longest = text.lines().map(text_width).max().unwrap_or(0);
        let label = if code.language.is_empty() {
            String::new()
        } else {
            format!(" {} ", truncate(&code.language, room.saturating_sub(4)))
        };
        let bar = room.min((longest + 4).max(text_width(&label) + 8).max(24));
        let mut top = first;
        top.push(Span::styled("╭─", theme::DIM));
        top.push(Span::styled(label.clone(), theme::TITLE));
        let fill = bar.saturating_sub(2 + text_width(&label));
        top.push(Span::styled("─".repeat(fill), theme::DIM));
        self.out.push(Line::from(top));

        let language = Language::from_label(&code.language);
        let mut gutter = rest.clone();
        gutter.push(Span::styled("│ ", theme::DIM));
        for line in text.split('\n') {
            let spans = highlight(line, language, Style::default());
            self.out.extend(hard_wrap(&spans, self.width, &gutter));
        }
        let mut bottom = rest;
        bottom.push(Span::styled(
            format!("╰{}", "─".repeat(bar.saturating_sub(1))),
            theme::DIM,
        ));
        self.out.push(Line::from(bottom));
    }

    fn table(&mut self, rows: &[Vec<String>]) {
        self.start_block();
        let (first, _) = self.prefixes();
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let room = self.width.saturating_sub(spans_width(&first));
        let mut widths: Vec<usize> = (0..columns)
            .map(|c| {
                rows.iter()
                    .filter_map(|r| r.get(c))
                    .map(|cell| text_width(cell))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let separators = 3 * (columns - 1);
        let fair = (room.saturating_sub(separators) / columns).max(3);
        if widths.iter().sum::<usize>() + separators > room {
            for width in &mut widths {
                *width = (*width).min(fair);
            }
        }
        for (index, row) in rows.iter().enumerate() {
            let style = if index == 0 {
                Style::new().add_modifier(Modifier::BOLD)
            } else {
                Style::default()
            };
            let mut spans = first.clone();
            for (column, width) in widths.iter().enumerate() {
                if column > 0 {
                    spans.push(Span::styled(" │ ", theme::DIM));
                }
                let cell = truncate(row.get(column).map_or("", String::as_str), *width);
                let pad = width.saturating_sub(text_width(&cell));
                spans.push(Span::styled(format!("{cell}{}", " ".repeat(pad)), style));
            }
            self.out
                .push(Line::from(super::text::truncate_spans(spans, self.width)));
            if index == 0 {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let mut spans = first.clone();
                spans.push(Span::styled(rule.join("─┼─"), theme::DIM));
                self.out
                    .push(Line::from(super::text::truncate_spans(spans, self.width)));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        self.flush();
        if let Some(code) = self.code.take() {
            self.code_block(&code);
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(markdown: &str, width: usize) -> Vec<String> {
        render(markdown, width, 0)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn blocks_are_separated_and_lists_are_tight() {
        let text = "# Title\n\nSome *text* and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n";
        assert_eq!(
            rows(text, 40),
            [
                "Title",
                "",
                "Some text and code.",
                "",
                "• one",
                "• two",
                "  ◦ nested",
                "",
                "1. first",
                "2. second",
            ]
        );
    }

    #[test]
    fn code_blocks_are_framed_and_keep_indentation() {
        let text = "```rust\nfn main() {\n    let x = 1;\n}\n```\n";
        let out = rows(text, 30);
        assert_eq!(out[0], "╭─ rust ────────────────");
        assert_eq!(out[2], "│     let x = 1;");
        assert_eq!(out.last().unwrap(), "╰───────────────────────");
        // An unterminated fence (streaming) still draws.
        assert_eq!(rows("```\nx", 30).len(), 3);
    }

    #[test]
    fn wraps_quotes_links_and_tables_to_width() {
        let out = rows("> a quoted line that wraps", 12);
        assert_eq!(out, ["│ a quoted", "│ line that", "│ wraps"]);
        let out = rows("see [docs](https://x.y) now", 40);
        assert_eq!(out, ["see docs (https://x.y) now"]);
        let out = rows("| a | bb |\n|---|---|\n| 1 | 2 |\n", 40);
        assert_eq!(out, ["a │ bb", "──┼───", "1 │ 2 "]);
    }

    #[test]
    fn tiny_widths_do_not_panic() {
        for width in 0..6 {
            let _ = render(
                "# H\n\n- a b c\n\n```py\nx = 1\n```\n| a |\n|-|\n| b |",
                width,
                2,
            );
        }
    }
}
