//! The prompt editor: a multi-line draft, paste chips, history and completion.
//!
//! Keys (many terminals cannot report Shift+Enter, so the newline keys do not rely on it):
//!
//! | key | does |
//! |---|---|
//! | Enter | submit (or accept the highlighted completion when it changes the draft) |
//! | Alt+Enter, Ctrl+J (Shift+Enter where the terminal reports it) | newline |
//! | ←/→, Ctrl+B/F | character; Alt/Ctrl+←/→, Alt+B/F: word |
//! | Home/End, Ctrl+A/E | start/end of the line |
//! | Backspace, Delete, Ctrl+H/D | delete a character (a paste chip goes whole) |
//! | Ctrl+U / Ctrl+K | delete to the start / end of the line |
//! | Ctrl+W, Alt+Backspace | delete the word before the cursor |
//! | ↑/↓ | move between lines; on the first/last line walk the history |
//! | Ctrl+P/N | walk the history |
//! | Tab | accept the completion; ↑/↓ move in the popup, Esc closes it |
//!
//! A paste of more than [`PASTE_INLINE_MAX_LINES`] lines or [`PASTE_INLINE_MAX_CHARS`]
//! characters becomes a chip (`[pasted 120 lines #1]`) that is expanded on submit; the
//! history keeps the chip and its text, so recalling it shows the chip again.

mod buffer;
pub mod complete;
mod draw;
pub mod history;

use std::path::PathBuf;

use braincode_config::{Home, SessionInfo};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use crate::slash::{self, SlashCommand};
use buffer::TextBuffer;
use complete::{Completer, FileIndex, Popup};
pub use draw::{INPUT_MAX_ROWS, draw};
use history::{History, HistoryEntry, PastedText};

/// A paste with more lines than this becomes a chip.
pub const PASTE_INLINE_MAX_LINES: usize = 5;
/// A paste with more characters than this becomes a chip.
pub const PASTE_INLINE_MAX_CHARS: usize = 500;

/// What a key asks of the event loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputAction {
    /// The editor used the key (redraw); nothing else to do.
    None,
    /// Not an editor key (Ctrl+C, PgUp, Ctrl+D on an empty draft, …): the event loop's.
    Unhandled,
    /// Enter on a prompt: the text with paste chips expanded. The draft is cleared and the
    /// prompt is in the history.
    Submit(String),
    /// Enter on a `/command` line: the parsed command (the draft is cleared), or why it
    /// does not parse (the draft is kept, to be fixed).
    SlashCommand(Result<SlashCommand, String>),
    /// Esc with no popup open: the event loop decides (close a panel, interrupt the run, …).
    Cancel,
}

enum Outcome {
    Edited,
    Moved,
    Done(InputAction),
}

/// The editor's state.
#[derive(Debug)]
pub struct InputState {
    buffer: TextBuffer,
    pastes: Vec<PastedText>,
    next_paste: usize,
    history: History,
    completer: Completer,
    warnings: Vec<String>,
}

impl InputState {
    /// An editor for a project. With a home, the project's history is loaded from it (an
    /// unreadable history file becomes a warning, see [`take_warnings`](Self::take_warnings))
    /// and `@@` offers its sessions.
    pub fn new(project_root: impl Into<PathBuf>, home: Option<&Home>) -> InputState {
        let root = project_root.into();
        let mut warnings = Vec::new();
        let history = match home {
            Some(home) => {
                let (history, warning) = History::load(home, &root);
                warnings.extend(warning);
                history
            }
            None => History::in_memory(),
        };
        InputState {
            buffer: TextBuffer::default(),
            pastes: Vec::new(),
            next_paste: 0,
            history,
            completer: Completer::new(root, home.cloned()),
            warnings,
        }
    }

    /// The draft as typed (chips unexpanded).
    pub fn text(&self) -> &str {
        self.buffer.text()
    }

    /// The cursor, a byte offset into [`text`](Self::text).
    pub fn cursor(&self) -> usize {
        self.buffer.cursor()
    }

    /// Whether the draft is empty.
    pub fn is_empty(&self) -> bool {
        self.buffer.text().is_empty()
    }

    /// The draft with its paste chips expanded.
    pub fn expanded_text(&self) -> String {
        expand(self.buffer.text(), &self.pastes)
    }

    /// Replaces the draft (a queued prompt to edit, `/handoff`'s `@@id`), cursor at the end.
    pub fn set_text(&mut self, text: &str) {
        self.pastes.clear();
        self.next_paste = 0;
        self.buffer.set_atoms(Vec::new());
        self.buffer.set_text(text);
        self.history.reset_walk();
        self.update_completion();
    }

    /// Empties the draft.
    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// The open completion popup.
    pub fn popup(&self) -> Option<&Popup> {
        self.completer.popup()
    }

    /// The history (oldest first).
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Warnings for the user (an ignored history file, a failed save), once each.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Call on each tick: picks up a file index or session list read in the background;
    /// true when the popup changed (redraw).
    pub fn poll(&mut self) -> bool {
        self.completer
            .poll(self.buffer.text(), self.buffer.cursor())
    }

    /// Forgets the `@` file index (`/files`): the next `@` reads the project again.
    pub fn refresh_files(&mut self) {
        self.completer.refresh_files();
        self.update_completion();
    }

    /// Uses this file index instead of walking the project.
    pub fn set_file_index(&mut self, index: FileIndex) {
        self.completer.set_file_index(index);
        self.update_completion();
    }

    /// Uses these sessions for `@@` instead of listing the home's.
    pub fn set_sessions(&mut self, sessions: Vec<SessionInfo>) {
        self.completer.set_sessions(sessions);
        self.update_completion();
    }

    /// A bracketed paste: inserted as typed, or as a chip when it is long.
    pub fn handle_paste(&mut self, text: String) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        let lines = text.lines().count();
        let chars = text.chars().count();
        if lines > PASTE_INLINE_MAX_LINES || chars > PASTE_INLINE_MAX_CHARS {
            self.next_paste += 1;
            let label = if lines > 1 {
                format!("[pasted {lines} lines #{}]", self.next_paste)
            } else {
                format!("[pasted {chars} chars #{}]", self.next_paste)
            };
            self.buffer.insert_str(&label);
            self.pastes.push(PastedText { label, text });
            self.sync_atoms();
        } else {
            let clean: String = text
                .replace('\t', "    ")
                .chars()
                .filter(|c| *c == '\n' || !c.is_control())
                .collect();
            self.buffer.insert_str(&clean);
        }
        self.after(Outcome::Edited);
    }

    /// One key press (releases are ignored).
    pub fn handle_key(&mut self, key: KeyEvent) -> InputAction {
        if key.kind == KeyEventKind::Release {
            return InputAction::None;
        }
        if let Some(action) = self.popup_key(key) {
            return action;
        }
        let outcome = self.edit_key(key);
        self.after(outcome)
    }

    fn after(&mut self, outcome: Outcome) -> InputAction {
        match outcome {
            Outcome::Edited => {
                self.history.reset_walk();
                self.update_completion();
                InputAction::None
            }
            Outcome::Moved => {
                self.update_completion();
                InputAction::None
            }
            Outcome::Done(action) => action,
        }
    }

    fn update_completion(&mut self) {
        self.completer
            .update(self.buffer.text(), self.buffer.cursor());
    }

    fn sync_atoms(&mut self) {
        let labels = self.pastes.iter().map(|p| p.label.clone()).collect();
        self.buffer.set_atoms(labels);
    }

    /// Keys the open popup takes; `None` when there is no popup or the key is not its.
    fn popup_key(&mut self, key: KeyEvent) -> Option<InputAction> {
        let popup = self.completer.popup()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let plain = key.modifiers.difference(KeyModifiers::SHIFT).is_empty();
        match key.code {
            KeyCode::Tab if plain => self.accept_completion(),
            KeyCode::BackTab | KeyCode::Up => self.completer.move_selection(-1),
            KeyCode::Char('p') if ctrl => self.completer.move_selection(-1),
            KeyCode::Down => self.completer.move_selection(1),
            KeyCode::Char('n') if ctrl => self.completer.move_selection(1),
            KeyCode::Esc => self.completer.dismiss(),
            KeyCode::Enter if key.modifiers.is_empty() => {
                let changes = popup.selected_candidate().is_some_and(|c| {
                    self.buffer.text().get(popup.range.clone()) != Some(c.insert.trim_end())
                });
                if !changes {
                    return None;
                }
                self.accept_completion();
            }
            _ => return None,
        }
        Some(InputAction::None)
    }

    fn accept_completion(&mut self) {
        let Some(popup) = self.completer.popup() else {
            return;
        };
        let Some(candidate) = popup.selected_candidate() else {
            return;
        };
        let range = popup.range.clone();
        let mut insert = candidate.insert.clone();
        // Do not double the space when one already follows the token.
        if self.buffer.text()[range.end..].starts_with(char::is_whitespace) {
            insert = insert.trim_end().to_string();
        }
        self.buffer.replace_range(range, &insert);
        self.history.reset_walk();
        self.update_completion();
    }

    fn edit_key(&mut self, key: KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let b = &mut self.buffer;
        match key.code {
            KeyCode::Enter if key.modifiers.is_empty() => Outcome::Done(self.submit()),
            KeyCode::Enter => {
                b.insert_char('\n');
                Outcome::Edited
            }
            KeyCode::Char(c) if ctrl && !alt => self.control_key(c),
            KeyCode::Char('b') if alt && !ctrl => {
                b.word_left();
                Outcome::Moved
            }
            KeyCode::Char('f') if alt && !ctrl => {
                b.word_right();
                Outcome::Moved
            }
            KeyCode::Char(_) if alt && !ctrl => Outcome::Done(InputAction::Unhandled),
            // Ctrl+Alt+key is how some terminals report AltGr characters: type them.
            KeyCode::Char(c) => {
                b.insert_char(c);
                Outcome::Edited
            }
            KeyCode::Backspace if ctrl || alt => {
                b.delete_word_before();
                Outcome::Edited
            }
            KeyCode::Backspace => {
                b.backspace();
                Outcome::Edited
            }
            KeyCode::Delete => {
                b.delete();
                Outcome::Edited
            }
            KeyCode::Left if ctrl || alt => {
                b.word_left();
                Outcome::Moved
            }
            KeyCode::Right if ctrl || alt => {
                b.word_right();
                Outcome::Moved
            }
            KeyCode::Left => {
                b.left();
                Outcome::Moved
            }
            KeyCode::Right => {
                b.right();
                Outcome::Moved
            }
            KeyCode::Home if !ctrl => {
                b.home();
                Outcome::Moved
            }
            KeyCode::End if !ctrl => {
                b.end();
                Outcome::Moved
            }
            KeyCode::Up if key.modifiers.is_empty() => {
                if b.up() {
                    Outcome::Moved
                } else {
                    self.recall_previous()
                }
            }
            KeyCode::Down if key.modifiers.is_empty() => {
                if b.down() {
                    Outcome::Moved
                } else {
                    self.recall_next()
                }
            }
            KeyCode::Esc => Outcome::Done(InputAction::Cancel),
            _ => Outcome::Done(InputAction::Unhandled),
        }
    }

    fn control_key(&mut self, c: char) -> Outcome {
        let b = &mut self.buffer;
        match c.to_ascii_lowercase() {
            'j' => b.insert_char('\n'),
            'a' => {
                b.home();
                return Outcome::Moved;
            }
            'e' => {
                b.end();
                return Outcome::Moved;
            }
            'b' => {
                b.left();
                return Outcome::Moved;
            }
            'f' => {
                b.right();
                return Outcome::Moved;
            }
            'h' => b.backspace(),
            'd' if b.text().is_empty() => return Outcome::Done(InputAction::Unhandled),
            'd' => b.delete(),
            'u' => b.kill_to_line_start(),
            'k' => b.kill_to_line_end(),
            'w' => b.delete_word_before(),
            'p' => return self.recall_previous(),
            'n' => return self.recall_next(),
            _ => return Outcome::Done(InputAction::Unhandled),
        }
        Outcome::Edited
    }

    fn draft_entry(&self) -> HistoryEntry {
        let text = self.buffer.text().to_string();
        let pastes = self
            .pastes
            .iter()
            .filter(|p| text.contains(&p.label))
            .cloned()
            .collect();
        HistoryEntry { text, pastes }
    }

    fn recall_previous(&mut self) -> Outcome {
        let draft = self.draft_entry();
        match self.history.older(draft) {
            Some(entry) => self.recall(entry),
            None => Outcome::Done(InputAction::None),
        }
    }

    fn recall_next(&mut self) -> Outcome {
        match self.history.newer() {
            Some(entry) => self.recall(entry),
            None => Outcome::Done(InputAction::None),
        }
    }

    /// Shows a history entry without ending the walk; no popup opens on it (↑ must keep
    /// walking the history through a recalled `/command`).
    fn recall(&mut self, entry: HistoryEntry) -> Outcome {
        self.next_paste = entry
            .pastes
            .iter()
            .filter_map(|p| {
                p.label
                    .rsplit('#')
                    .next()?
                    .trim_end_matches(']')
                    .parse()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        self.pastes = entry.pastes;
        self.sync_atoms();
        self.buffer.set_text(&entry.text);
        self.update_completion();
        self.completer.dismiss();
        Outcome::Done(InputAction::None)
    }

    fn submit(&mut self) -> InputAction {
        if self.buffer.text().trim().is_empty() {
            return InputAction::None;
        }
        let entry = self.draft_entry();
        let expanded = self.expanded_text();
        let prompt = expanded.trim_end().trim_start_matches(['\n', '\r']);
        if prompt.trim_start().starts_with('/') {
            let parsed = slash::parse(prompt);
            if parsed.is_ok() {
                self.remember(entry);
                self.clear();
            }
            return InputAction::SlashCommand(parsed);
        }
        let prompt = prompt.to_string();
        self.remember(entry);
        self.clear();
        InputAction::Submit(prompt)
    }

    fn remember(&mut self, entry: HistoryEntry) {
        if let Err(warning) = self.history.push(entry) {
            self.warnings.push(warning);
        }
    }
}

/// `text` with every chip label replaced by its paste.
fn expand(text: &str, pastes: &[PastedText]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = pastes
            .iter()
            .filter_map(|p| rest.find(&p.label).map(|at| (at, p)))
            .min_by_key(|(at, _)| *at);
        let Some((at, paste)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..at]);
        out.push_str(&paste.text);
        rest = &rest[at + paste.label.len()..];
    }
}
