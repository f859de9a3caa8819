//! Prompt history: per project, persisted, bounded, and a corrupt file never breaks the
//! editor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;

use crate::common::{ctrl, key};
use braincode_config::Home;
use braincode_tui::input::history::{HISTORY_MAX_ENTRIES, history_path};
use braincode_tui::input::{InputAction, InputState};
use crossterm::event::KeyCode;

fn submit(state: &mut InputState, text: &str) -> InputAction {
    for c in text.chars() {
        state.handle_key(key(KeyCode::Char(c)));
    }
    state.handle_key(key(KeyCode::Enter))
}

fn setup() -> (tempfile::TempDir, Home, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    (dir, home, project)
}

#[test]
fn submissions_survive_a_restart_and_walk_back() {
    let (_dir, home, project) = setup();
    let mut first = InputState::new(&project, Some(&home));
    assert!(first.take_warnings().is_empty());
    submit(&mut first, "add a test");
    submit(&mut first, "/help");
    submit(&mut first, "run it");
    assert!(first.take_warnings().is_empty());
    drop(first);

    let mut s = InputState::new(&project, Some(&home));
    for c in "draft".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.text(), "run it");
    s.handle_key(key(KeyCode::Up));
    // A recalled command opens no popup: ↑ keeps walking the history.
    assert_eq!(s.text(), "/help");
    assert!(s.popup().is_none());
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.text(), "add a test");
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.text(), "add a test");
    s.handle_key(key(KeyCode::Down));
    s.handle_key(key(KeyCode::Down));
    assert_eq!(s.text(), "run it");
    s.handle_key(key(KeyCode::Down));
    assert_eq!(s.text(), "draft");
    let ctrl_p = ctrl('p');
    s.handle_key(ctrl_p);
    assert_eq!(s.text(), "run it");

    let path = history_path(&home, &project);
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(&path).unwrap().permissions().mode() & 0o777
    };
    assert_eq!(mode, 0o600);
}

#[test]
fn each_project_has_its_own_history() {
    let (dir, home, project) = setup();
    let other = dir.path().join("other");
    fs::create_dir_all(&other).unwrap();
    submit(&mut InputState::new(&project, Some(&home)), "in project");
    let mut s = InputState::new(&other, Some(&home));
    assert!(s.history().entries().is_empty());
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.text(), "");
    assert_ne!(history_path(&home, &project), history_path(&home, &other));
}

#[test]
fn two_sessions_add_to_each_other() {
    let (_dir, home, project) = setup();
    let mut a = InputState::new(&project, Some(&home));
    let mut b = InputState::new(&project, Some(&home));
    submit(&mut a, "from a");
    submit(&mut b, "from b");
    let fresh = InputState::new(&project, Some(&home));
    let texts: Vec<&str> = fresh
        .history()
        .entries()
        .iter()
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(texts, ["from a", "from b"]);
}

fn corrupt(path: &Path, bytes: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_corrupt_file_is_a_warning_and_is_kept_aside() {
    let (_dir, home, project) = setup();
    let path = history_path(&home, &project);
    for garbage in [&b"{\"entries\": [tru"[..], b"", b"\xff\xfe", b"[1, 2]"] {
        corrupt(&path, garbage);
        let mut s = InputState::new(&project, Some(&home));
        let warnings = s.take_warnings();
        assert_eq!(warnings.len(), 1, "{garbage:?}");
        assert!(
            warnings[0].contains("prompt history ignored"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains(".corrupt"), "{warnings:?}");
        assert!(s.history().entries().is_empty());
        s.handle_key(key(KeyCode::Up));
        assert_eq!(s.text(), "");
    }
    let mut s = InputState::new(&project, Some(&home));
    s.take_warnings();
    assert_eq!(submit(&mut s, "after"), InputAction::Submit("after".into()));
    assert!(s.take_warnings().is_empty());
    let aside = format!("{}.corrupt", path.display());
    assert_eq!(fs::read(aside).unwrap(), b"[1, 2]");
    let fresh = InputState::new(&project, Some(&home));
    assert_eq!(fresh.history().entries().len(), 1);
}

#[test]
fn a_recalled_paste_comes_back_as_its_chip() {
    let (_dir, home, project) = setup();
    let mut s = InputState::new(&project, Some(&home));
    let paste: String = (0..30).map(|i| format!("row {i}\n")).collect();
    s.handle_paste(paste.clone());
    for c in " explain".chars() {
        s.handle_key(key(KeyCode::Char(c)));
    }
    s.handle_key(key(KeyCode::Enter));
    let mut s = InputState::new(&project, Some(&home));
    s.handle_key(key(KeyCode::Up));
    assert_eq!(s.text(), "[pasted 30 lines #1] explain");
    // A new paste gets the next number, and both expand.
    s.handle_key(key(KeyCode::End));
    s.handle_paste("x".repeat(600));
    assert_eq!(
        s.text(),
        "[pasted 30 lines #1] explain[pasted 600 chars #2]"
    );
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit(format!("{paste} explain{}", "x".repeat(600)))
    );
}

#[test]
fn the_file_is_bounded() {
    let (_dir, home, project) = setup();
    let entries: Vec<serde_json::Value> = (0..HISTORY_MAX_ENTRIES + 10)
        .map(|i| serde_json::json!({"text": format!("prompt {i}")}))
        .collect();
    let path = history_path(&home, &project);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        &path,
        serde_json::to_string(&serde_json::json!({"project": "p", "entries": entries})).unwrap(),
    )
    .unwrap();
    let mut s = InputState::new(&project, Some(&home));
    assert_eq!(s.history().entries().len(), HISTORY_MAX_ENTRIES);
    assert_eq!(s.history().entries()[0].text, "prompt 10");
    submit(&mut s, "newest");
    let fresh = InputState::new(&project, Some(&home));
    let entries = fresh.history().entries();
    assert_eq!(entries.len(), HISTORY_MAX_ENTRIES);
    assert_eq!(entries[0].text, "prompt 11");
    assert_eq!(entries[HISTORY_MAX_ENTRIES - 1].text, "newest");
}
