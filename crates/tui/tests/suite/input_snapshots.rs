//! What the editor looks like at 80×24: the draft at the bottom, the popup above it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{key, render_at_bottom, typed};
use braincode_tui::input::complete::FileIndex;
use braincode_tui::input::{InputState, draw};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Position;
use ratatui::style::Color;

fn render(state: &InputState) -> Terminal<TestBackend> {
    render_at_bottom(
        |width| state.height(width),
        |frame, area| draw(frame, area, state),
    )
}

fn files() -> FileIndex {
    FileIndex::from_paths(
        [
            "Cargo.toml",
            "README.md",
            "crates/cli/src/main.rs",
            "crates/tui/src/input/mod.rs",
            "crates/tui/src/input/complete.rs",
            "crates/tui/src/main_loop.rs",
            "crates/config/src/home.rs",
            "docs/maintenance.md",
            "scripts/make-release.sh",
            "src/main.rs",
        ]
        .map(String::from)
        .to_vec(),
    )
}

#[test]
fn file_completion_popup() {
    let mut state = InputState::new(std::env::temp_dir(), None);
    state.set_file_index(files());
    typed(&mut state, "explain the event loop in @ma");
    let mut terminal = render(&state);
    insta::assert_snapshot!(terminal.backend());
    // The cursor sits after what was typed: border, "› ", the text.
    let typed_width = "explain the event loop in @ma".len() as u16;
    assert_eq!(
        terminal.get_cursor_position().unwrap(),
        Position::new(1 + 2 + typed_width, 22)
    );
    // The highlighted candidate stands out.
    let selected = &terminal.backend().buffer()[(3, 15)];
    assert_eq!(selected.bg, Color::Cyan);
}

#[test]
fn command_popup_scrolls_with_the_selection() {
    let mut state = InputState::new(std::env::temp_dir(), None);
    typed(&mut state, "/");
    for _ in 0..9 {
        state.handle_key(key(KeyCode::Down));
    }
    let terminal = render(&state);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_multi_line_draft_with_a_paste_chip() {
    let mut state = InputState::new(std::env::temp_dir(), None);
    typed(&mut state, "why does the build fail?");
    state.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    let log: String = (0..120).map(|i| format!("error[E{i:04}]\n")).collect();
    state.handle_paste(log);
    typed(
        &mut state,
        " — and this line is long enough to wrap around the edge of an eighty-column terminal",
    );
    let terminal = render(&state);
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn an_empty_draft_shows_what_to_do() {
    let state = InputState::new(std::env::temp_dir(), None);
    assert_eq!(state.height(80), 3);
    let terminal = render(&state);
    insta::assert_snapshot!(terminal.backend());
}
