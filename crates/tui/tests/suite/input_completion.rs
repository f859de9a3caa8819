//! `@` file, `@@` session and `/` command completion.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{key, typed};
use braincode_config::{SessionInfo, SessionStatus};
use braincode_protocol::SessionId;
use braincode_tui::input::complete::{CompletionKind, FileIndex};
use braincode_tui::input::{InputAction, InputState};
use braincode_tui::slash::SlashCommand;
use crossterm::event::KeyCode;

fn write(root: &Path, path: &str) {
    let path = root.join(path);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, "x").unwrap();
}

/// A project with ignored files, a `.git` directory and a hidden file.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    for path in [
        "src/main.rs",
        "src/lib.rs",
        "src/parser/mod.rs",
        "src/domain/maintenance.rs",
        "docs/main-notes.md",
        "target/debug/main.rs",
        "build.log",
        ".git/config",
        ".github/workflows/ci.yml",
        "README.md",
        "has space.txt",
    ] {
        write(root, path);
    }
    dir
}

fn labels(state: &InputState) -> Vec<String> {
    state
        .popup()
        .map(|p| p.candidates.iter().map(|c| c.label.clone()).collect())
        .unwrap_or_default()
}

#[test]
fn the_index_follows_gitignore_and_skips_git() {
    let dir = project();
    let index = FileIndex::build(dir.path(), 100);
    let files = index.files();
    assert!(files.contains(&"src/main.rs".to_string()), "{files:?}");
    assert!(files.contains(&".github/workflows/ci.yml".to_string()));
    assert!(files.contains(&".gitignore".to_string()));
    for hidden in [
        "target/debug/main.rs",
        "build.log",
        ".git/config",
        "has space.txt",
    ] {
        assert!(
            !files.contains(&hidden.to_string()),
            "{hidden} in {files:?}"
        );
    }
    assert!(!index.truncated());
    let small = FileIndex::build(dir.path(), 3);
    assert_eq!(small.files().len(), 3);
    assert!(small.truncated());
}

#[test]
fn ranking_prefers_file_names_then_contiguous_matches() {
    let dir = project();
    let index = FileIndex::build(dir.path(), 100);
    assert_eq!(
        index.rank("main", 10),
        vec![
            "src/main.rs",
            "docs/main-notes.md",
            "src/domain/maintenance.rs"
        ]
    );
    assert_eq!(index.rank("prsmod", 1), vec!["src/parser/mod.rs"]);
    assert_eq!(index.rank("READ", 1), vec!["README.md"]);
}

#[test]
fn at_completes_files_and_tab_accepts() {
    let dir = project();
    let mut s = InputState::new(dir.path(), None);
    s.set_file_index(FileIndex::build(dir.path(), 100));
    typed(&mut s, "look at @mai");
    let popup = s.popup().expect("a popup");
    assert_eq!(popup.kind, CompletionKind::File);
    assert_eq!(labels(&s)[0], "src/main.rs");
    s.handle_key(key(KeyCode::Down));
    assert_eq!(s.popup().unwrap().selected, 1);
    s.handle_key(key(KeyCode::Up));
    s.handle_key(key(KeyCode::Tab));
    assert_eq!(s.text(), "look at @src/main.rs ");
    assert!(s.popup().is_none());
    // Enter on a finished reference submits; it does not re-accept.
    typed(&mut s, "@src/lib.rs");
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::Submit("look at @src/main.rs @src/lib.rs".into())
    );
}

#[test]
fn enter_accepts_a_completion_that_changes_the_draft() {
    let dir = project();
    let mut s = InputState::new(dir.path(), None);
    s.set_file_index(FileIndex::build(dir.path(), 100));
    typed(&mut s, "@pars");
    assert_eq!(s.handle_key(key(KeyCode::Enter)), InputAction::None);
    assert_eq!(s.text(), "@src/parser/mod.rs ");
}

#[test]
fn esc_closes_the_popup_until_the_next_token() {
    let dir = project();
    let mut s = InputState::new(dir.path(), None);
    s.set_file_index(FileIndex::build(dir.path(), 100));
    typed(&mut s, "@ma");
    assert!(s.popup().is_some());
    assert_eq!(s.handle_key(key(KeyCode::Esc)), InputAction::None);
    assert!(s.popup().is_none());
    typed(&mut s, "in");
    assert!(s.popup().is_none());
    typed(&mut s, " @li");
    assert_eq!(labels(&s)[0], "src/lib.rs");
    s.handle_key(key(KeyCode::Esc));
    // With nothing open, Esc is the event loop's.
    assert_eq!(s.handle_key(key(KeyCode::Esc)), InputAction::Cancel);
}

#[test]
fn the_index_is_read_in_the_background() {
    let dir = project();
    let mut s = InputState::new(dir.path(), None);
    typed(&mut s, "@lib");
    let deadline = Instant::now() + Duration::from_secs(20);
    while labels(&s).is_empty() {
        let note = s.popup().and_then(|p| p.note.clone());
        assert_eq!(note.as_deref(), Some("indexing files…"));
        assert!(Instant::now() < deadline, "the index never arrived");
        std::thread::sleep(Duration::from_millis(10));
        s.poll();
    }
    assert_eq!(labels(&s), ["src/lib.rs"]);
    assert!(!s.poll());
}

fn session(id: &str, prompt: &str) -> SessionInfo {
    SessionInfo {
        id: SessionId::new(id).unwrap(),
        status: SessionStatus::Completed,
        prompt_preview: Some(prompt.into()),
        project_root: None,
        updated_at: 0,
        started_at: None,
        runs: 1,
        runs_exact: true,
        bytes: 10,
        path: "/nowhere".into(),
    }
}

#[test]
fn double_at_completes_sessions_with_their_first_prompt() {
    let mut s = InputState::new(std::env::temp_dir(), None);
    s.set_sessions(vec![
        session("20250102-090000-aaaaaa", "migrate the database"),
        session("20250101-080000-bbbbbb", "fix the login form"),
    ]);
    typed(&mut s, "continue @@");
    let popup = s.popup().unwrap();
    assert_eq!(popup.kind, CompletionKind::Session);
    assert_eq!(popup.candidates.len(), 2);
    assert_eq!(popup.candidates[1].detail, "completed · fix the login form");
    typed(&mut s, "login");
    assert_eq!(labels(&s), ["20250101-080000-bbbbbb"]);
    s.handle_key(key(KeyCode::Tab));
    assert_eq!(s.text(), "continue @@20250101-080000-bbbbbb ");
    s.clear();
    typed(&mut s, "@@20250102");
    assert_eq!(labels(&s), ["20250102-090000-aaaaaa"]);
}

#[test]
fn without_a_home_sessions_say_so() {
    let mut s = InputState::new(std::env::temp_dir(), None);
    typed(&mut s, "@@");
    let popup = s.popup().unwrap();
    assert!(popup.candidates.is_empty());
    assert!(popup.note.as_deref().unwrap().contains("no Braincode home"));
}

#[test]
fn slash_completes_commands_at_the_start_only() {
    let mut s = InputState::new(std::env::temp_dir(), None);
    typed(&mut s, "/pe");
    assert_eq!(labels(&s), ["/permissions [ask|edits|yes|read-only]"]);
    s.handle_key(key(KeyCode::Tab));
    assert_eq!(s.text(), "/permissions ");
    typed(&mut s, "yes /pe");
    assert!(s.popup().is_none());
    s.clear();
    typed(&mut s, "/help");
    assert_eq!(
        s.handle_key(key(KeyCode::Enter)),
        InputAction::SlashCommand(Ok(SlashCommand::Help))
    );
}

#[test]
fn sessions_are_listed_from_the_home_in_the_background() {
    use braincode_config::{Home, JournalWriter};
    use braincode_protocol::Record;

    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    fs::create_dir_all(&project).unwrap();
    let id = SessionId::new("20250101-000000-cccccc").unwrap();
    let start: Record = serde_json::from_value(serde_json::json!({
        "type": "run_start",
        "prompt": "refactor the parser",
        "projectSupport": {"root": project.to_str().unwrap()},
        "attempt": 1
    }))
    .unwrap();
    JournalWriter::open(&home, &id)
        .unwrap()
        .append(&start)
        .unwrap();

    let mut s = InputState::new(&project, Some(&home));
    typed(&mut s, "@@");
    let deadline = Instant::now() + Duration::from_secs(20);
    while labels(&s).is_empty() {
        assert!(Instant::now() < deadline, "the sessions never arrived");
        std::thread::sleep(Duration::from_millis(10));
        s.poll();
    }
    let popup = s.popup().unwrap();
    assert_eq!(popup.candidates[0].label, "20250101-000000-cccccc");
    assert_eq!(
        popup.candidates[0].detail,
        "incomplete · refactor the parser"
    );
}
