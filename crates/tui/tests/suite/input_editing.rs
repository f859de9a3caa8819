//! The editor's keys, paste chips and submissions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{alt, ctrl, key};
use braincode_protocol::Mode;
use braincode_tui::input::{InputAction, InputState};
use braincode_tui::slash::SlashCommand;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn editor() -> InputState {
    InputState::new(std::env::temp_dir(), None)
}

fn typed(state: &mut InputState, text: &str) {
    for c in text.chars() {
        assert_eq!(state.handle_key(key(KeyCode::Char(c))), InputAction::None);
    }
}

#[test]
fn enter_submits_and_clears() {
    let mut s = editor();
    assert_eq!(s.handle_key(key(KeyCode::Enter)), InputAction::None);
    typed(&mut s, "fix the bug");
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit("fix the bug".into())
    );
    assert!(s.is_empty());
    typed(&mut s, "   ");
    assert_eq!(s.handle_key(key(KeyCode::Enter)), InputAction::None);
}

#[test]
fn newline_keys_do_not_need_shift_enter() {
    let mut s = editor();
    typed(&mut s, "a");
    s.handle_key(alt(KeyCode::Enter));
    typed(&mut s, "b");
    s.handle_key(ctrl('j'));
    typed(&mut s, "c");
    s.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    typed(&mut s, "d");
    assert_eq!(s.text(), "a\nb\nc\nd");
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit("a\nb\nc\nd".into())
    );
}

#[test]
fn cursor_keys_and_kills() {
    let mut s = editor();
    typed(&mut s, "hello brave world");
    s.handle_key(ctrl('a'));
    typed(&mut s, ">");
    s.handle_key(key(KeyCode::End));
    s.handle_key(alt(KeyCode::Left));
    assert_eq!(s.cursor(), ">hello brave ".len());
    s.handle_key(KeyEvent::new(KeyCode::Left, KeyModifiers::CONTROL));
    assert_eq!(s.cursor(), ">hello ".len());
    s.handle_key(ctrl('w'));
    assert_eq!(s.text(), ">brave world");
    s.handle_key(key(KeyCode::Delete));
    assert_eq!(s.text(), ">rave world");
    s.handle_key(key(KeyCode::Backspace));
    assert_eq!(s.text(), "rave world");
    s.handle_key(alt(KeyCode::Right));
    s.handle_key(ctrl('u'));
    assert_eq!(s.text(), " world");
    s.handle_key(ctrl('e'));
    assert_eq!(s.cursor(), s.text().len());
    s.handle_key(key(KeyCode::Home));
    assert_eq!(s.cursor(), 0);
    s.handle_key(ctrl('k'));
    assert!(s.is_empty());
}

#[test]
fn up_and_down_move_between_lines_first() {
    let mut s = editor();
    typed(&mut s, "first");
    s.handle_key(ctrl('j'));
    typed(&mut s, "second");
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.cursor(), "first".len());
    s.handle_key(key(KeyCode::Down));
    assert_eq!(s.cursor(), s.text().len());
}

#[test]
fn keys_that_are_not_the_editors() {
    let mut s = editor();
    assert_eq!(s.handle_key(ctrl('c')), InputAction::Unhandled);
    assert_eq!(s.handle_key(ctrl('d')), InputAction::Unhandled);
    assert_eq!(s.handle_key(key(KeyCode::PageUp)), InputAction::Unhandled);
    assert_eq!(s.handle_key(key(KeyCode::Esc)), InputAction::Cancel);
    typed(&mut s, "x");
    s.handle_key(key(KeyCode::Home));
    assert_eq!(s.handle_key(ctrl('d')), InputAction::None);
    assert!(s.is_empty());
}

#[test]
fn short_pastes_are_typed_long_ones_become_chips() {
    let mut s = editor();
    s.handle_paste("one\r\ntwo".into());
    assert_eq!(s.text(), "one\ntwo");
    s.clear();

    let log: String = (1..=120).map(|i| format!("line {i}\n")).collect();
    typed(&mut s, "why does this fail? ");
    s.handle_paste(log.clone());
    assert_eq!(s.text(), "why does this fail? [pasted 120 lines #1]");
    let long_line = "x".repeat(800);
    typed(&mut s, " and ");
    s.handle_paste(long_line.clone());
    assert_eq!(
        s.text(),
        "why does this fail? [pasted 120 lines #1] and [pasted 800 chars #2]"
    );
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit(format!("why does this fail? {log} and {long_line}"))
    );
}

#[test]
fn a_chip_is_deleted_whole() {
    let mut s = editor();
    typed(&mut s, "see ");
    s.handle_paste("a\nb\nc\nd\ne\nf\n".into());
    assert_eq!(s.text(), "see [pasted 6 lines #1]");
    s.handle_key(key(KeyCode::Backspace));
    assert_eq!(s.text(), "see ");
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit("see".into())
    );
}

#[test]
fn slash_lines_are_parsed() {
    let mut s = editor();
    typed(&mut s, "/mode radical");
    // The popup offers nothing more for a finished command with its argument.
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::SlashCommand(Ok(SlashCommand::Mode(Some(Mode::Radical))))
    );
    assert!(s.is_empty());
    typed(&mut s, "/mode fast");
    match s.handle_key(key(KeyCode::Enter)) {
        InputAction::SlashCommand(Err(message)) => assert!(message.contains("unknown mode")),
        other => panic!("{other:?}"),
    }
    // A command that does not parse stays in the draft, to be fixed.
    assert_eq!(s.text(), "/mode fast");
}
