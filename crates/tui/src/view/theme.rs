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

/// The background the screen is drawn for. The styles above are the dark palette; a light
/// background gets them recoloured ([`adapt`]) so that no text is white on white.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Palette {
    /// A dark terminal background (the default).
    Dark,
    /// A light terminal background.
    Light,
}

impl Palette {
    /// `dark` or `light`.
    pub fn as_str(self) -> &'static str {
        match self {
            Palette::Dark => "dark",
            Palette::Light => "light",
        }
    }

    /// Parses `dark` or `light`.
    pub fn from_name(name: &str) -> Option<Palette> {
        match name.trim().to_ascii_lowercase().as_str() {
            "dark" => Some(Palette::Dark),
            "light" => Some(Palette::Light),
            _ => None,
        }
    }

    /// The palette `BRAINCODE_THEME` names, else the one the terminal's `COLORFGBG`
    /// (`fg;bg`, set by rxvt, Konsole, iTerm2 and others) implies, else dark.
    pub fn detect(theme: Option<&str>, colorfgbg: Option<&str>) -> Palette {
        if let Some(palette) = theme.and_then(Palette::from_name) {
            return palette;
        }
        // The background is the last field; ANSI 7 and 9–15 are light colours.
        let background = colorfgbg
            .and_then(|value| value.rsplit(';').next())
            .and_then(|bg| bg.trim().parse::<u8>().ok());
        match background {
            Some(7 | 9..=15) => Palette::Light,
            _ => Palette::Dark,
        }
    }

    /// [`Palette::detect`] from this process's environment.
    pub fn from_env() -> Palette {
        Palette::detect(
            std::env::var("BRAINCODE_THEME").ok().as_deref(),
            std::env::var("COLORFGBG").ok().as_deref(),
        )
    }
}

/// Recolours `area` of a frame drawn with the dark palette for a light background: white
/// text becomes black, light grey dark grey, the bright accents their darker shades, and the
/// status bar's dark background a light one. The terminal's own colours stay as they are.
pub fn adapt(buffer: &mut ratatui::buffer::Buffer, area: ratatui::layout::Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            if let Some(cell) = buffer.cell_mut((x, y)) {
                cell.fg = on_light(cell.fg);
                cell.bg = on_light_background(cell.bg);
            }
        }
    }
}

fn on_light(color: Color) -> Color {
    match color {
        Color::White => Color::Black,
        Color::Gray => Color::DarkGray,
        Color::Yellow => Color::Indexed(130),
        Color::Cyan => Color::Indexed(30),
        Color::Green => Color::Indexed(28),
        Color::Magenta => Color::Indexed(127),
        Color::Blue => Color::Indexed(25),
        other => other,
    }
}

fn on_light_background(color: Color) -> Color {
    match color {
        Color::Indexed(236) => Color::Indexed(254),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;

    #[test]
    fn the_palette_is_named_or_read_from_the_terminal() {
        assert_eq!(Palette::detect(Some("LIGHT"), None), Palette::Light);
        assert_eq!(Palette::detect(Some("dark"), Some("0;15")), Palette::Dark);
        assert_eq!(Palette::detect(Some("auto"), Some("0;15")), Palette::Light);
        assert_eq!(Palette::detect(None, Some("15;default;0")), Palette::Dark);
        assert_eq!(Palette::detect(None, Some("0;7")), Palette::Light);
        assert_eq!(Palette::detect(None, Some("garbage")), Palette::Dark);
        assert_eq!(Palette::detect(None, None), Palette::Dark);
    }

    #[test]
    fn a_light_background_never_gets_white_text() {
        let area = Rect::new(0, 0, 3, 1);
        let mut buffer = Buffer::empty(area);
        buffer.set_string(0, 0, "a", REQUEST);
        buffer.set_string(1, 0, "b", STATUS_BAR.fg(Color::Gray));
        buffer.set_string(2, 0, "c", Style::new());
        adapt(&mut buffer, area);
        assert_eq!(buffer[(0, 0)].fg, Color::Black);
        assert!(buffer[(0, 0)].modifier.contains(Modifier::BOLD));
        assert_eq!(buffer[(1, 0)].fg, Color::DarkGray);
        assert_eq!(buffer[(1, 0)].bg, Color::Indexed(254));
        assert_eq!(
            buffer[(2, 0)].fg,
            Color::Reset,
            "the terminal's own colour stays"
        );
    }
}
