//! The patch ledger: every file a run's writes changed, journaled as `file_change` records
//! with hashes and a bounded diff, and the content each file had before the run first
//! touched it, kept in `<home>/undo/<session>/<sha256>` so `braincode undo` can put it back.
//!
//! The agent loop snapshots the paths a Write tool's arguments name (after the gate allowed
//! the call) and hands the snapshot back once the call ended ([`PatchLedger::before`],
//! [`PatchLedger::after`]). Files a command changed are not seen that way:
//! [`PatchLedger::reconcile`] finds them in the run's patch summary. A replay writes
//! nothing: it serves the journaled records back.

mod diff;
mod store;
pub mod undo;

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use braincode_protocol::{FileChange, PatchSummary, Record};
use serde_json::Value;

pub use diff::file_diff;
pub use store::{BlobStore, FileState, MAX_SNAPSHOT_BYTES, sha256_hex};

use crate::git::PatchBaseline;
use crate::sink::RunSink;
use crate::tape::Tape;

/// The paths of one call, as they were before it ran.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: Vec<(String, FileState)>,
}

impl Snapshot {
    /// The paths snapshotted, relative to the project root.
    pub fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|(path, _)| path.as_str()).collect()
    }
}

/// The tool call a change is journaled under.
#[derive(Debug, Clone, Copy)]
pub struct CallOrigin<'a> {
    /// Its id.
    pub tool_call_id: &'a str,
    /// The tool.
    pub tool_name: &'a str,
    /// The agent session that made it.
    pub agent_session_id: Option<&'a str>,
}

/// What the ledger knows of the tree a run started from, when it reconciles: a file dirty then
/// has no known before state.
#[derive(Debug, Clone, Copy)]
pub enum TreeAtStart<'a> {
    /// The baseline taken when the run started.
    Baseline(&'a PatchBaseline),
    /// None was taken (a replay, or outside git): no file's before state is known.
    Unknown,
}

impl TreeAtStart<'_> {
    fn is_dirty(self, path: &str) -> bool {
        match self {
            TreeAtStart::Baseline(baseline) => baseline.is_dirty(path),
            TreeAtStart::Unknown => true,
        }
    }
}

#[derive(Debug, Default)]
struct LedgerState {
    /// Every path the run changed, with its latest after hash.
    latest: BTreeMap<String, Option<String>>,
    /// Reconciliations made (a replay serves the n-th one's records).
    reconciles: usize,
}

/// One run's ledger of file changes.
pub struct PatchLedger {
    root: PathBuf,
    /// `None` in a replay: nothing is read or written, the journal has it all.
    store: Option<BlobStore>,
    sink: RunSink,
    tape: Option<Arc<Tape>>,
    state: Mutex<LedgerState>,
}

impl PatchLedger {
    /// The ledger of a run in `root`, journaling to `sink`, keeping before contents under
    /// `home_root` for session `session_id`. With a strict (replay) `tape` it writes nothing;
    /// with a resume tape it goes on from the changes the interrupted run journaled.
    pub fn new(
        root: PathBuf,
        home_root: &Path,
        session_id: &str,
        sink: RunSink,
        tape: Option<Arc<Tape>>,
    ) -> PatchLedger {
        let replaying = tape.as_deref().is_some_and(Tape::is_strict);
        let mut state = LedgerState::default();
        if let Some(tape) = tape.as_deref().filter(|_| !replaying) {
            state.latest = tape.changed_files().clone();
        }
        PatchLedger {
            root,
            store: (!replaying).then(|| BlobStore::new(home_root, session_id)),
            sink,
            tape,
            state: Mutex::new(state),
        }
    }

    fn state(&self) -> MutexGuard<'_, LedgerState> {
        match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The project-relative paths a call of `tool_name` writes, as the permission policy
    /// reads them from its arguments; paths outside the project and in `.git` are left out.
    pub fn targets(&self, tool_name: &str, arguments: &Value) -> Vec<String> {
        let targets =
            braincode_tools::policy::targets::extract(tool_name, arguments, &self.root, None);
        let mut paths: Vec<String> = Vec::new();
        for target in &targets.paths {
            let raw = Path::new(&target.raw);
            let full = if raw.is_absolute() {
                raw.to_path_buf()
            } else {
                let base = target.base.as_deref().unwrap_or("");
                self.root.join(base).join(raw)
            };
            if let Some(relative) = relative_to(&self.root, &full)
                && !relative.split('/').any(|part| part == ".git")
                && !paths.contains(&relative)
            {
                paths.push(relative);
            }
        }
        paths
    }

    /// `paths` as they were before a call created them (missing); `None` in a replay or for no
    /// path.
    pub fn created(&self, paths: &[String]) -> Option<Snapshot> {
        self.store.as_ref()?;
        let files: Vec<(String, FileState)> = (paths.iter())
            .filter(|path| is_project_relative(path))
            .map(|path| (path.clone(), FileState::Missing))
            .collect();
        (!files.is_empty()).then_some(Snapshot { files })
    }

    /// The state of `paths` before Braincode itself writes them (a writer's merge); `None` in
    /// a replay or for no path.
    pub fn snapshot_paths(&self, paths: &[String]) -> Option<Snapshot> {
        self.store.as_ref()?;
        let files: Vec<(String, FileState)> = (paths.iter())
            .map(|path| (path.clone(), FileState::read(&self.root, path)))
            .collect();
        (!files.is_empty()).then_some(Snapshot { files })
    }

    /// The state of what a Write call is about to change (`None` in a replay, or when its
    /// arguments name no path).
    pub fn before(&self, tool_name: &str, arguments: &Value) -> Option<Snapshot> {
        self.store.as_ref()?;
        let files: Vec<(String, FileState)> = self
            .targets(tool_name, arguments)
            .into_iter()
            .map(|path| {
                let state = FileState::read(&self.root, &path);
                (path, state)
            })
            .collect();
        (!files.is_empty()).then_some(Snapshot { files })
    }

    /// Journals what the call changed since `snapshot` (one `file_change` per changed path)
    /// and returns the records.
    pub fn after(&self, snapshot: Snapshot, origin: CallOrigin<'_>) -> Vec<FileChange> {
        let mut changes = Vec::new();
        for (path, before) in snapshot.files {
            let after = FileState::read(&self.root, &path);
            if before == after || before.hash().is_none() && after.hash().is_none() {
                continue;
            }
            let mut change = self.change(&path, &before, &after);
            change.tool_call_id = Some(origin.tool_call_id.to_string());
            change.tool_name = Some(origin.tool_name.to_string());
            change.agent_session_id = origin.agent_session_id.map(str::to_string);
            self.sink.record(Record::FileChange(change.clone()));
            changes.push(change);
        }
        changes
    }

    /// The record of `path` going from `before` to `after`; keeps the before content the
    /// first time the run changes the path.
    fn change(&self, path: &str, before: &FileState, after: &FileState) -> FileChange {
        let first_touch = !self.state().latest.contains_key(path);
        let mut change = FileChange {
            path: path.to_string(),
            before_hash: before.hash().map(str::to_string),
            after_hash: after.hash().map(str::to_string),
            undoable: true,
            ..FileChange::default()
        };
        let bytes = |state: &FileState| match state {
            FileState::File { bytes, .. } => bytes.clone(),
            FileState::Missing | FileState::Other => None,
        };
        match before {
            FileState::Missing => {}
            FileState::Other => {
                change.undoable = false;
                change.reason = Some("it was not a regular file before".into());
            }
            FileState::File { hash, mode, bytes } => {
                change.mode = Some(*mode);
                match (bytes, &self.store) {
                    (None, _) => {
                        change.undoable = false;
                        change.reason = Some(format!(
                            "it was over {} MiB, too big to keep",
                            MAX_SNAPSHOT_BYTES / (1024 * 1024)
                        ));
                    }
                    (Some(bytes), Some(store)) if first_touch => {
                        if let Err(err) = store.save(hash, bytes) {
                            change.undoable = false;
                            change.reason = Some(format!("its content could not be kept: {err}"));
                        }
                    }
                    (Some(_), Some(store)) => change.undoable = store.path(hash).is_file(),
                    (Some(_), None) => change.undoable = false,
                }
            }
        }
        if matches!(after, FileState::Other) {
            change.undoable = false;
            change.reason = Some("it is no longer a regular file".into());
        }
        let sides = (bytes(before), bytes(after));
        let known = |state: &FileState, side: &Option<Vec<u8>>| {
            matches!(state, FileState::Missing) || side.is_some()
        };
        if known(before, &sides.0) && known(after, &sides.1) {
            let diff = file_diff(path, sides.0.as_deref(), sides.1.as_deref());
            change.diff = diff.text;
            change.diff_truncated = diff.truncated;
            change.binary = diff.binary;
            change.added = diff.added;
            change.removed = diff.removed;
        }
        self.state()
            .latest
            .insert(path.to_string(), change.after_hash.clone());
        change
    }

    /// Journals the changes of `summary` (the run's patch summary, measured in `root`) the
    /// tool hook did not see: files a command changed. A file that was clean before the run
    /// gets its before state from git's last commit; one that was already dirty cannot be
    /// undone. A file the ledger knows that changed again since its last record gets a new
    /// record. Call it after each `patch_summary` record; a replay serves the journaled
    /// records of the same call back.
    pub async fn reconcile(
        &self,
        summary: &PatchSummary,
        root: &Path,
        start: TreeAtStart<'_>,
    ) -> Vec<FileChange> {
        let call = {
            let mut state = self.state();
            state.reconciles += 1;
            state.reconciles
        };
        if self.store.is_none() {
            let served =
                (self.tape.as_deref()).map_or_else(Vec::new, |t| t.reconciled_changes(call));
            for change in &served {
                self.sink.record(Record::FileChange(change.clone()));
            }
            return served;
        }
        let latest = self.state().latest.clone();
        let mut paths: Vec<String> = summary
            .changed_files
            .iter()
            .map(|file| file.path.clone())
            .collect();
        for path in latest.keys() {
            if !paths.contains(path) {
                paths.push(path.clone());
            }
        }
        let mut changes = Vec::new();
        for path in paths {
            let after = FileState::read(root, &path);
            let change = match latest.get(&path) {
                Some(last) if last.as_deref() == after.hash() => continue,
                Some(last) => {
                    let mut change = FileChange {
                        path: path.clone(),
                        before_hash: last.clone(),
                        after_hash: after.hash().map(str::to_string),
                        undoable: true,
                        ..FileChange::default()
                    };
                    if matches!(after, FileState::Other) {
                        change.undoable = false;
                        change.reason = Some("it is no longer a regular file".into());
                    }
                    self.state()
                        .latest
                        .insert(path.clone(), change.after_hash.clone());
                    change
                }
                None if start.is_dirty(&path) => {
                    let change = FileChange {
                        path: path.clone(),
                        after_hash: after.hash().map(str::to_string),
                        undoable: false,
                        reason: Some(
                            "it had uncommitted changes before the run, so its earlier content is not known"
                                .into(),
                        ),
                        ..FileChange::default()
                    };
                    self.state()
                        .latest
                        .insert(path.clone(), change.after_hash.clone());
                    change
                }
                None => {
                    let before = match crate::git::committed_content(root, &path).await {
                        Some(bytes) => FileState::File {
                            hash: sha256_hex(&bytes),
                            mode: committed_mode(&after),
                            bytes: Some(bytes),
                        },
                        None => FileState::Missing,
                    };
                    if before == after {
                        continue;
                    }
                    self.change(&path, &before, &after)
                }
            };
            self.sink.record(Record::FileChange(change.clone()));
            changes.push(change);
        }
        changes
    }
}

/// The mode a committed file is restored with: the current file's, else a plain file's.
fn committed_mode(after: &FileState) -> u32 {
    match after {
        FileState::File { mode, .. } => *mode,
        FileState::Missing | FileState::Other => 0o644,
    }
}

/// `full` relative to `root` (`/`-separated), lexically normalized; `None` when it leaves
/// the root or is the root itself.
fn relative_to(root: &Path, full: &Path) -> Option<String> {
    let mut normal = PathBuf::new();
    for component in full.components() {
        match component {
            Component::ParentDir => {
                if !normal.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => normal.push(other.as_os_str()),
        }
    }
    let relative = normal.strip_prefix(root).ok()?;
    let parts: Vec<&str> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<Vec<_>>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A plain project-relative path: not empty, not absolute, no `..` and nothing in `.git`.
fn is_project_relative(path: &str) -> bool {
    let path_ref = Path::new(path);
    !path.is_empty()
        && path_ref
            .components()
            .all(|c| matches!(c, Component::Normal(part) if part != ".git"))
}

#[cfg(test)]
mod tests;
