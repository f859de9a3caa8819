//! Colours and glyphs of the screen, in one place.

use ratatui::style::{Color, Modifier, Style};

/// Secondary text (labels, timings, frames).
pub(crate) const DIM: Style = Style::new().fg(Color::DarkGray);
/// The user's request.
pub(crate) const REQUEST: Style = Style::new().fg(Color::White).add_modifier(Modifier::BOLD);
/// The prompt mark before a request.
pub(crate) const PROMPT: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
/// Section titles (`plan`).
pub(crate) const TITLE: Style = Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD);
/// Something that worked.
pub(crate) const OK: Style = Style::new().fg(Color::Green);
/// Something that failed.
pub(crate) const ERROR: Style = Style::new().fg(Color::Red);
/// Something going on, or that needs attention.
pub(crate) const BUSY: Style = Style::new().fg(Color::Yellow);
/// A warning.
pub(crate) const WARN: Style = Style::new().fg(Color::Yellow);
/// Role names.
pub(crate) const ROLE: Style = Style::new().fg(Color::Cyan);
/// Tool names.
pub(crate) const TOOL: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::BOLD);
/// The selected row.
pub(crate) const SELECTED: Style = Style::new().add_modifier(Modifier::REVERSED);
/// Added lines of a diff.
pub(crate) const ADDED: Style = Style::new().fg(Color::Green);
/// Removed lines of a diff.
pub(crate) const REMOVED: Style = Style::new().fg(Color::Red);
/// Hunk headers of a diff.
pub(crate) const HUNK: Style = Style::new().fg(Color::Cyan);
/// Inline code in Markdown.
pub(crate) const CODE: Style = Style::new().fg(Color::Yellow);
/// Headings in Markdown (level 1, 2, then the rest).
pub(crate) const HEADINGS: [Style; 3] = [
    Style::new()
        .fg(Color::Magenta)
        .add_modifier(Modifier::BOLD.union(Modifier::UNDERLINED)),
    Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
    Style::new().add_modifier(Modifier::BOLD),
];
/// Links in Markdown.
pub(crate) const LINK: Style = Style::new()
    .fg(Color::Blue)
    .add_modifier(Modifier::UNDERLINED);
/// Keywords in code blocks.
pub(crate) const KEYWORD: Style = Style::new().fg(Color::Magenta);
/// String literals in code blocks.
pub(crate) const STRING: Style = Style::new().fg(Color::Green);
/// Comments in code blocks.
pub(crate) const COMMENT: Style = Style::new()
    .fg(Color::DarkGray)
    .add_modifier(Modifier::ITALIC);
/// Number literals in code blocks.
pub(crate) const NUMBER: Style = Style::new().fg(Color::Cyan);
/// Plain text of the status line.
pub(crate) const STATUS: Style = Style::new().fg(Color::Gray);
/// The status line's background.
pub(crate) const STATUS_BAR: Style = Style::new().bg(Color::Indexed(236));

/// Frames of the running spinner (one every [`SPINNER_FRAME_MS`]).
pub(crate) const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How long one spinner frame shows (the reference's status animation tick).
pub(crate) const SPINNER_FRAME_MS: i64 = 140;

/// The spinner frame at `now_ms`.
pub(crate) fn spinner(now_ms: i64) -> &'static str {
    let frame = now_ms
        .div_euclid(SPINNER_FRAME_MS)
        .rem_euclid(SPINNER.len() as i64);
    SPINNER[frame as usize]
}
