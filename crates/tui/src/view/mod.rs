//! The screen: the transcript (each turn's request, plan, workers, tool calls, warnings and
//! Markdown answer), with the BrainPet panel beside it on a wide screen, above a one-row
//! status line. The approval panel and the input box are
//! drawn by their own modules into the areas [`layout`] leaves for them.
//!
//! Rows are built once per change of a turn (see [`TranscriptCache`]); a redraw copies only
//! the visible rows into the frame, so a long session redraws as fast as a short one.

mod cache;
mod diff;
mod highlight;
mod markdown;
mod pet;
mod rows;
mod status;
pub(crate) mod text;
pub(crate) mod theme;
mod turn;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

pub use cache::TranscriptCache;
pub use pet::{
    PET_MAX_WIDTH, PET_MIN_SCREEN_WIDTH, PET_MIN_WIDTH, PET_WIDTH_PERCENT, pet_width, render_pet,
    split_pet,
};
pub(crate) use text::fmt_tokens;

use crate::app::App;
use crate::pet::Pet;

/// Where each part of the screen goes, top to bottom: transcript, status line, panel, input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// The transcript and the status line together: the area [`draw`] takes.
    pub view: Rect,
    /// The transcript.
    pub transcript: Rect,
    /// The status line (one row).
    pub status: Rect,
    /// The approval panel (empty when its height is 0).
    pub panel: Rect,
    /// The input box.
    pub input: Rect,
}

/// Cuts `area` into [`Areas`]. When rows are short the input is served first, then the
/// panel, then the status line; the transcript gets what is left.
pub fn layout(area: Rect, input_height: u16, panel_height: u16) -> Areas {
    let input = input_height.min(area.height);
    let panel = panel_height.min(area.height - input);
    let status = 1.min(area.height - input - panel);
    let transcript = area.height - input - panel - status;
    let band = |y: u16, height: u16| Rect::new(area.x, y, area.width, height);
    let transcript_area = band(area.y, transcript);
    let status_area = band(area.y + transcript, status);
    Areas {
        view: band(area.y, transcript + status),
        transcript: transcript_area,
        status: status_area,
        panel: band(status_area.y + status, panel),
        input: band(status_area.y + status + panel, input),
    }
}

/// Draws the transcript and, on the last row of `area`, the status line. `now_ms` (epoch
/// milliseconds) drives the clocks and spinners, so a drawing is a pure function of its
/// inputs.
pub fn draw(frame: &mut Frame<'_>, area: Rect, app: &App, now_ms: i64) {
    render(frame.buffer_mut(), area, app, now_ms);
}

/// [`draw`] into a buffer.
pub fn render(buf: &mut Buffer, area: Rect, app: &App, now_ms: i64) {
    render_parts(buf, area, app, None, now_ms);
}

/// [`draw`], with `pet`'s panel to the right of the transcript when the screen is wide
/// enough for both (see [`pet_width`]); the status line keeps the full width.
pub fn draw_with_pet(frame: &mut Frame<'_>, area: Rect, app: &App, pet: &Pet, now_ms: i64) {
    render_with_pet(frame.buffer_mut(), area, app, pet, now_ms);
}

/// [`draw_with_pet`] into a buffer.
pub fn render_with_pet(buf: &mut Buffer, area: Rect, app: &App, pet: &Pet, now_ms: i64) {
    render_parts(buf, area, app, Some(pet), now_ms);
}

fn render_parts(buf: &mut Buffer, area: Rect, app: &App, pet: Option<&Pet>, now_ms: i64) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let status = Rect::new(area.x, area.bottom() - 1, area.width, 1);
    let mut transcript = Rect::new(area.x, area.y, area.width, area.height - 1);
    if let Some(pet) = pet
        && let (left, Some(panel)) = split_pet(transcript)
    {
        transcript = left;
        render_pet(buf, panel, &pet.status(app), pet.face(app, now_ms));
    }
    render_transcript(buf, transcript, app, now_ms);
    let line = status::status_row(&app.status_line(), usize::from(area.width), now_ms);
    buf.set_style(status, theme::STATUS_BAR);
    buf.set_line(status.x, status.y, &line, status.width);
}

fn render_transcript(buf: &mut Buffer, area: Rect, app: &App, now_ms: i64) {
    if area.is_empty() {
        return;
    }
    let mut cache = app.cache().borrow_mut();
    cache.refresh(app, area.width, now_ms);
    let total = cache.height();
    let height = usize::from(area.height);

    let mut scroll = app.scroll_state();
    // Scrolled up: rows that arrived below keep the rows in view where they are.
    if scroll.offset > 0 && total > scroll.total {
        scroll.offset += total - scroll.total;
    }
    if scroll.reveal {
        let row = app.selection().and_then(|s| cache.row_of(s.turn, &s.key));
        if let Some(row) = row {
            let bottom = total - scroll.offset.min(total);
            if row >= bottom {
                scroll.offset = total - row - 1;
            } else if row < bottom.saturating_sub(height) {
                scroll.offset = total.saturating_sub(row + height);
            }
        }
        scroll.reveal = false;
    }
    scroll.offset = scroll.offset.min(total.saturating_sub(height));
    scroll.total = total;
    scroll.viewport = height;
    app.set_scroll_state(scroll);

    let bottom = total - scroll.offset;
    let top = bottom.saturating_sub(height);
    for (y, line) in (area.y..).zip(cache.rows(top, bottom)) {
        buf.set_line(area.x, y, line, area.width);
    }
    if scroll.offset > 0 {
        // Scrolled up: the last row says how much is below instead of showing a row of it.
        let hint = format!(" ↓ {} more · End to follow ", scroll.offset);
        let fill = usize::from(area.width).saturating_sub(text::width(&hint) + 2);
        let line = Line::from(vec![
            Span::styled("─".repeat(fill), theme::DIM),
            Span::styled(hint, theme::BUSY),
            Span::styled("──", theme::DIM),
        ]);
        let y = area.bottom() - 1;
        buf.set_style(
            Rect::new(area.x, y, area.width, 1),
            ratatui::style::Style::reset(),
        );
        buf.set_line(area.x, y, &line, area.width);
    }
}
