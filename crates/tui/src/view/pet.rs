//! The BrainPet panel: where it goes beside the transcript and how it is drawn.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{text, theme};
use crate::pet::{FACE_WIDTH, PetStatus};

/// Narrowest screen that shows the panel: below it the transcript keeps every column. At 120
/// the transcript still has 80, so report lines and tool rows read as they do without it.
pub const PET_MIN_SCREEN_WIDTH: u16 = 120;
/// Narrowest panel.
pub const PET_MIN_WIDTH: u16 = 28;
/// Widest panel.
pub const PET_MAX_WIDTH: u16 = 42;
/// Share of the content width the panel takes, in percent (then clamped).
pub const PET_WIDTH_PERCENT: u16 = 34;

/// The panel's width on a screen `width` columns wide, or `None` when it does not fit.
pub fn pet_width(width: u16) -> Option<u16> {
    if width < PET_MIN_SCREEN_WIDTH {
        return None;
    }
    let share = u16::try_from(u32::from(width) * u32::from(PET_WIDTH_PERCENT) / 100)
        .unwrap_or(PET_MAX_WIDTH);
    Some(share.clamp(PET_MIN_WIDTH, PET_MAX_WIDTH))
}

/// Cuts `area` into the transcript (left) and the panel (right), when the panel fits.
pub fn split_pet(area: Rect) -> (Rect, Option<Rect>) {
    match pet_width(area.width) {
        Some(width) => {
            let left = Rect::new(area.x, area.y, area.width - width, area.height);
            let right = Rect::new(left.right(), area.y, width, area.height);
            (left, Some(right))
        }
        None => (area, None),
    }
}

/// Draws the panel: a rule on its left edge, then the name, the face, the status and its
/// lines, from the top.
pub fn render_pet(buf: &mut Buffer, area: Rect, status: &PetStatus, face: [&str; 2]) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    for y in area.top()..area.bottom() {
        buf.set_string(area.x, y, "│", theme::DIM);
    }
    // One column for the rule, one of margin.
    let inner = Rect::new(
        area.x + 2,
        area.y,
        area.width.saturating_sub(2),
        area.height,
    );
    if inner.is_empty() {
        return;
    }
    let indent = " ".repeat(usize::from(inner.width).saturating_sub(FACE_WIDTH) / 2);
    let status_style = if status.active {
        theme::BUSY
    } else {
        theme::DIM
    };
    let mut lines = vec![
        Line::from(Span::styled("brainpet", theme::DIM)),
        Line::from(""),
        Line::from(Span::styled(format!("{indent}{}", face[0]), theme::ROLE)),
        Line::from(Span::styled(format!("{indent}{}", face[1]), theme::ROLE)),
        Line::from(""),
        Line::from(Span::styled(status.status.clone(), status_style)),
    ];
    lines.extend(
        status
            .lines
            .iter()
            .map(|l| Line::from(Span::styled(l.clone(), theme::STATUS))),
    );
    let width = usize::from(inner.width);
    for (y, line) in (inner.top()..inner.bottom()).zip(lines) {
        let line = Line::from(text::truncate_spans(line.spans, width));
        buf.set_line(inner.x, y, &line, inner.width);
    }
}
