//! `/image <path>`: what the info panel shows for an attached image on a terminal without
//! graphics (the text line), and for a path that is not there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_tui::image::{GraphicsProtocol, TermEnv, attached_lines, escape_sequence, load};
use braincode_tui::session::draw_info;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn screen(lines: &[String]) -> String {
    let mut terminal = Terminal::new(TestBackend::new(80, 6)).unwrap();
    terminal
        .draw(|frame| draw_info(frame, frame.area(), lines))
        .unwrap();
    terminal.backend().to_string()
}

/// A 640×480 PNG header and some bytes.
fn png() -> Vec<u8> {
    let mut data = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    data.extend_from_slice(&640u32.to_be_bytes());
    data.extend_from_slice(&480u32.to_be_bytes());
    data.extend(std::iter::repeat_n(0u8, 2000));
    data
}

#[test]
fn an_attached_image_on_a_text_terminal_is_one_line_of_facts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("shots")).unwrap();
    std::fs::write(dir.path().join("shots/login screen.png"), png()).unwrap();
    let loaded = load("\"shots/login screen.png\"", dir.path(), None).unwrap();
    let text_terminal = TermEnv {
        term: Some("xterm-256color".into()),
        term_program: Some("Apple_Terminal".into()),
        kitty_window_id: None,
    };
    let protocol = GraphicsProtocol::detect(&text_terminal);
    assert_eq!(
        escape_sequence(protocol, &loaded.data, &loaded.info, (40, 10)),
        None
    );
    insta::assert_snapshot!(screen(&attached_lines(&loaded, 1)));
}

#[test]
fn a_missing_image_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let error = load("/no/such/dir/missing.png", dir.path(), None).unwrap_err();
    insta::assert_snapshot!(screen(&[error]));
}
