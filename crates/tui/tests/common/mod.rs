//! What the editor and panel tests share: keys, typing, and drawing a widget at the bottom of
//! an 80×24 screen.

#![allow(dead_code)]

use braincode_tui::input::InputState;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

/// A key without modifiers.
pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// Ctrl + `c`.
pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// Alt + `code`.
pub fn alt(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::ALT)
}

/// Types `text` into the editor, a key per character.
pub fn typed(state: &mut InputState, text: &str) {
    for c in text.chars() {
        state.handle_key(key(KeyCode::Char(c)));
    }
}

/// An 80×24 screen with `draw` given the bottom rows, as many as `height(width)` asks for.
pub fn render_at_bottom(
    height: impl Fn(u16) -> u16,
    draw: impl FnOnce(&mut ratatui::Frame<'_>, Rect),
) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            let rows = height(area.width).min(area.height);
            let bottom = Rect {
                y: area.height - rows,
                height: rows,
                ..area
            };
            draw(frame, bottom);
        })
        .unwrap();
    terminal
}
