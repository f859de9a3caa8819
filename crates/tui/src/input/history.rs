//! Prompt history, per project, persisted under the Braincode home.
//!
//! One file per project: `<home>/history/<dir-name>-<16 hex of sha256(canonical root)>.json`,
//! written atomically (mode 0600: prompts can hold anything) after each submission. A save
//! first re-reads the file, so two sessions in the same project add to each other instead of
//! overwriting. A file that cannot be read is ignored with a warning — never a panic — and
//! moved aside to `<file>.corrupt` by the next save rather than silently replaced.

use std::path::{Path, PathBuf};

use braincode_config::{Home, read_json_file, write_json_atomic};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most entries kept per project (oldest dropped first).
pub const HISTORY_MAX_ENTRIES: usize = 500;
/// Entries larger than this (text plus pasted text, bytes) are kept for the session only:
/// the file stays small enough to rewrite on every submission.
pub const HISTORY_MAX_ENTRY_BYTES: usize = 16 * 1024;

/// A pasted text behind a chip label.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PastedText {
    /// The chip as it appears in the draft (`[pasted 120 lines #1]`).
    pub label: String,
    /// What the chip expands to.
    pub text: String,
}

/// One submitted draft, chips unexpanded (so recalling it shows the chip, not the paste).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// The draft as typed.
    pub text: String,
    /// The pastes its chips stand for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pastes: Vec<PastedText>,
}

impl HistoryEntry {
    fn bytes(&self) -> usize {
        self.text.len() + self.pastes.iter().map(|p| p.text.len()).sum::<usize>()
    }
}

/// The file's shape.
#[derive(Debug, Serialize, Deserialize)]
struct HistoryFile {
    /// The project root, for a person reading the directory.
    project: String,
    /// Oldest first.
    entries: Vec<HistoryEntry>,
}

/// Prompt history with the ↑/↓ walk state.
#[derive(Debug, Default)]
pub struct History {
    path: Option<PathBuf>,
    project: String,
    entries: Vec<HistoryEntry>,
    /// Index into `entries` while walking.
    walk: Option<usize>,
    /// The draft being written when the walk started.
    stash: Option<HistoryEntry>,
    /// The file could not be read: move it aside before the first save.
    corrupt: bool,
}

/// The history file of a project.
pub fn history_path(home: &Home, project_root: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.into());
    let digest = Sha256::digest(canonical.to_string_lossy().as_bytes());
    let hex = braincode_protocol::lower_hex(&digest[..8]);
    let name: String = braincode_protocol::safe_name(
        &canonical
            .file_name()
            .map_or_else(|| "root".into(), |n| n.to_string_lossy().into_owned()),
    )
    .chars()
    .take(40)
    .collect();
    home.root()
        .join("history")
        .join(format!("{name}-{hex}.json"))
}

fn read_entries(path: &Path) -> Result<Vec<HistoryEntry>, String> {
    match read_json_file::<HistoryFile>(path) {
        Ok(Some(file)) => Ok(file.entries),
        Ok(None) => Ok(Vec::new()),
        Err(err) => Err(err.to_string()),
    }
}

fn push_bounded(entries: &mut Vec<HistoryEntry>, entry: HistoryEntry) {
    if entries.last() == Some(&entry) {
        return;
    }
    entries.push(entry);
    if entries.len() > HISTORY_MAX_ENTRIES {
        let excess = entries.len() - HISTORY_MAX_ENTRIES;
        entries.drain(..excess);
    }
}

impl History {
    /// A history kept in memory only (no home).
    pub fn in_memory() -> History {
        History::default()
    }

    /// Loads the project's history; the warning says why an unreadable file was ignored.
    pub fn load(home: &Home, project_root: &Path) -> (History, Option<String>) {
        let path = history_path(home, project_root);
        let mut history = History {
            project: project_root.to_string_lossy().into_owned(),
            ..History::default()
        };
        let warning = match read_entries(&path) {
            Ok(mut entries) => {
                let keep = entries.len().saturating_sub(HISTORY_MAX_ENTRIES);
                entries.drain(..keep);
                history.entries = entries;
                None
            }
            Err(err) => {
                history.corrupt = true;
                Some(format!(
                    "prompt history ignored: {err}. It will be kept as {}.corrupt and a new history started",
                    path.display()
                ))
            }
        };
        history.path = Some(path);
        (history, warning)
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// The history file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Adds a submission (consecutive duplicates once), ends the walk and saves; the error
    /// says why the file could not be written (the entry is kept in memory anyway).
    pub fn push(&mut self, entry: HistoryEntry) -> Result<(), String> {
        self.reset_walk();
        if entry.text.trim().is_empty() {
            return Ok(());
        }
        push_bounded(&mut self.entries, entry.clone());
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if entry.bytes() > HISTORY_MAX_ENTRY_BYTES {
            return Ok(());
        }
        if self.corrupt {
            let aside = PathBuf::from(format!("{}.corrupt", path.display()));
            // Best effort: if it cannot be moved it is overwritten, as the warning said.
            let _ = std::fs::rename(&path, aside);
            self.corrupt = false;
        }
        // Another session may have added entries since we loaded: start from the file, under
        // its update lock so two sessions saving at once keep both entries.
        let _lock = braincode_config::lock_for_update(&path)
            .map_err(|err| format!("prompt history not saved: {err}"))?;
        let mut on_disk = read_entries(&path).unwrap_or_default();
        push_bounded(&mut on_disk, entry);
        on_disk.retain(|e| e.bytes() <= HISTORY_MAX_ENTRY_BYTES);
        let file = HistoryFile {
            project: self.project.clone(),
            entries: on_disk,
        };
        write_json_atomic(&path, &file, 0o600)
            .map_err(|err| format!("prompt history not saved: {err}"))
    }

    /// Whether ↑/↓ are walking the history.
    pub fn walking(&self) -> bool {
        self.walk.is_some()
    }

    /// Stops walking (the draft was edited).
    pub fn reset_walk(&mut self) {
        self.walk = None;
        self.stash = None;
    }

    /// The entry before the current one; `draft` is what to come back to.
    pub fn older(&mut self, draft: HistoryEntry) -> Option<HistoryEntry> {
        let index = match self.walk {
            Some(0) => return None,
            Some(i) => i - 1,
            None if self.entries.is_empty() => return None,
            None => {
                self.stash = Some(draft);
                self.entries.len() - 1
            }
        };
        self.walk = Some(index);
        self.entries.get(index).cloned()
    }

    /// The entry after the current one, or the stashed draft past the newest.
    pub fn newer(&mut self) -> Option<HistoryEntry> {
        let index = self.walk?;
        if index + 1 < self.entries.len() {
            self.walk = Some(index + 1);
            return self.entries.get(index + 1).cloned();
        }
        self.walk = None;
        Some(self.stash.take().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(text: &str) -> HistoryEntry {
        HistoryEntry {
            text: text.into(),
            pastes: Vec::new(),
        }
    }

    #[test]
    fn walks_back_and_returns_to_the_draft() {
        let mut h = History::in_memory();
        h.push(entry("one")).unwrap();
        h.push(entry("two")).unwrap();
        h.push(entry("two")).unwrap();
        assert_eq!(h.entries().len(), 2);
        assert_eq!(h.older(entry("draft")).unwrap().text, "two");
        assert_eq!(h.older(entry("ignored")).unwrap().text, "one");
        assert!(h.older(entry("x")).is_none());
        assert_eq!(h.newer().unwrap().text, "two");
        assert_eq!(h.newer().unwrap().text, "draft");
        assert!(h.newer().is_none());
    }

    #[test]
    fn bounded_to_the_newest() {
        let mut h = History::in_memory();
        for i in 0..HISTORY_MAX_ENTRIES + 7 {
            h.push(entry(&format!("p{i}"))).unwrap();
        }
        assert_eq!(h.entries().len(), HISTORY_MAX_ENTRIES);
        assert_eq!(h.entries()[0].text, "p7");
    }
}
