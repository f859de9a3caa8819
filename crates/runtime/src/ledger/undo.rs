//! Taking a run's changes back (`braincode undo`): the plan comes from the run's
//! `file_change` records (for each file the earliest before state and the latest after
//! hash), is checked against the tree as it is now, and is applied byte for byte.

use std::path::{Path, PathBuf};

use braincode_protocol::{JournalEntry, Record, UndoneFile};

use super::store::{BlobStore, FileState};

/// Why an undo cannot be planned or applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UndoError {
    /// The session has no run with an id.
    #[error("the session has no run to undo")]
    NoRun,
    /// `--run` matched no run.
    #[error("the session has no run {query:?}; its runs: {runs}")]
    NoSuchRun {
        /// What was asked.
        query: String,
        /// The run ids there are.
        runs: String,
    },
    /// `--run` matched several runs.
    #[error("{query:?} names several runs ({runs}); give more of the id")]
    AmbiguousRun {
        /// What was asked.
        query: String,
        /// The matching run ids.
        runs: String,
    },
    /// The run's `run_start` does not say where it ran.
    #[error("run {run_id} does not record its project directory, so its files cannot be found")]
    NoProject {
        /// The run.
        run_id: String,
    },
    /// `--writer` matched no parallel writer of the run.
    #[error("run {run_id} has no writer {query:?}; its writers: {writers}")]
    NoSuchWriter {
        /// The run.
        run_id: String,
        /// What was asked.
        query: String,
        /// Its writers (`role context-id`), or `none`.
        writers: String,
    },
    /// `--writer` named a role that several writers of the run had.
    #[error("{query:?} names several writers of run {run_id} ({writers}); give the context id")]
    AmbiguousWriter {
        /// The run.
        run_id: String,
        /// What was asked.
        query: String,
        /// The matching writers.
        writers: String,
    },
    /// A file could not be put back.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// One file the run changed, as the undo sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoFile {
    /// Path relative to the project root.
    pub path: String,
    /// Hash of the content before the run first changed it (`None`: it did not exist).
    pub before_hash: Option<String>,
    /// Hash after the run last changed it (`None`: the run deleted it).
    pub after_hash: Option<String>,
    /// Mode before.
    pub mode: Option<u32>,
    /// Whether the before state is known.
    pub undoable: bool,
    /// Why not, when it is not.
    pub reason: Option<String>,
}

impl UndoFile {
    /// What undoing does to the file: `restored`, `deleted` or `recreated`.
    pub fn action(&self) -> &'static str {
        match (&self.before_hash, &self.after_hash) {
            (None, _) => "deleted",
            (Some(_), None) => "recreated",
            (Some(_), Some(_)) => "restored",
        }
    }
}

/// A parallel writer of a run, as the undo names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoWriter {
    /// Its task context (its merge's changes are journaled under `merge-<context>`).
    pub context_id: String,
    /// Its role.
    pub role: braincode_protocol::Role,
}

/// What undoing one run, or one parallel writer's merge of it, means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoPlan {
    /// The run.
    pub run_id: String,
    /// The writer whose merge alone is undone; none: the whole run.
    pub writer: Option<UndoWriter>,
    /// Its project directory.
    pub root: PathBuf,
    /// The files it changed (ones it left as it found them are not listed).
    pub files: Vec<UndoFile>,
    /// Whether an `undo` record for the run is already journaled.
    pub already_undone: bool,
}

/// Why the tree cannot be put back now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Blockers {
    /// Files whose content is no longer what the run left.
    pub changed_since: Vec<String>,
    /// Files whose before state is not known, with why.
    pub not_undoable: Vec<(String, String)>,
}

impl Blockers {
    /// Whether nothing stands in the way.
    pub fn is_empty(&self) -> bool {
        self.changed_since.is_empty() && self.not_undoable.is_empty()
    }
}

/// The run ids of a session's runs, in journal order (a resumed run's id once).
pub fn run_ids(entries: &[JournalEntry]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for entry in entries {
        if let Record::RunStart(start) = &entry.record
            && let Some(id) = &start.run_id
        {
            ids.retain(|known| known != id);
            ids.push(id.clone());
        }
    }
    ids
}

/// The undo of run `run` (an id or a unique prefix; `None`: the session's last run that
/// changed a file and is not undone yet, else its last run) from a session's records. Every
/// segment of the run counts (a resumed run's too). A writer whose merge was undone on its
/// own is left out.
pub fn plan(entries: &[JournalEntry], run: Option<&str>) -> Result<UndoPlan, UndoError> {
    scoped(entries, run, None)
}

/// The undo of one parallel writer's merge in run `run` (as [`plan`]; `None`: the session's
/// last run with such a writer whose merge is not undone yet): `writer` is its context id (or
/// a unique prefix) or its role. Only the files its merge wrote are put back; a file changed
/// again after the merge (by a later writer or the primary) refuses, as any undo does.
pub fn plan_writer(
    entries: &[JournalEntry],
    run: Option<&str>,
    writer: &str,
) -> Result<UndoPlan, UndoError> {
    scoped(entries, run, Some(writer))
}

fn scoped(
    entries: &[JournalEntry],
    run: Option<&str>,
    writer: Option<&str>,
) -> Result<UndoPlan, UndoError> {
    let ids = run_ids(entries);
    if run.is_none() {
        // The session's last run that changed a file and is not undone yet: a later run that
        // only answered a question does not hide the edits before it.
        for id in ids.iter().rev() {
            if let Ok(plan) = scoped(entries, Some(id), writer)
                && !plan.files.is_empty()
                && !plan.already_undone
            {
                return Ok(plan);
            }
        }
    }
    let run_id = match run {
        None => ids.last().cloned().ok_or(UndoError::NoRun)?,
        Some(query) => {
            let matching: Vec<&String> = match ids.iter().find(|id| *id == query) {
                Some(exact) => vec![exact],
                None => ids.iter().filter(|id| id.starts_with(query)).collect(),
            };
            match matching.as_slice() {
                [one] => (*one).clone(),
                [] => {
                    return Err(UndoError::NoSuchRun {
                        query: query.to_string(),
                        runs: if ids.is_empty() {
                            "none".into()
                        } else {
                            ids.join(", ")
                        },
                    });
                }
                many => {
                    return Err(UndoError::AmbiguousRun {
                        query: query.to_string(),
                        runs: many
                            .iter()
                            .map(|id| id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
            }
        }
    };
    let writer = match writer {
        Some(query) => Some(find_writer(entries, &run_id, query)?),
        None => None,
    };
    let merge_call = |context_id: &str| format!("merge-{context_id}");
    // Writers undone on their own: their merges are no longer the run's to undo.
    let undone_writers: Vec<String> = (entries.iter())
        .filter_map(|entry| match &entry.record {
            Record::Undo(undo) if undo.run_id == run_id => undo.writer.as_deref().map(merge_call),
            _ => None,
        })
        .collect();
    let counts = |call: Option<&str>| match &writer {
        Some(writer) => call == Some(merge_call(&writer.context_id).as_str()),
        None => call.is_none_or(|call| !undone_writers.iter().any(|undone| undone == call)),
    };
    let mut root = None;
    let mut files: Vec<UndoFile> = Vec::new();
    let mut already_undone = false;
    let mut in_run = false;
    for entry in entries {
        match &entry.record {
            Record::RunStart(start) => {
                in_run = start.run_id.as_deref() == Some(run_id.as_str());
                if in_run && root.is_none() {
                    root = start
                        .project_support
                        .as_ref()
                        .map(|s| PathBuf::from(&s.root));
                }
            }
            Record::Undo(undo) if undo.run_id == run_id => {
                // The whole run's undo covers every writer; a writer's covers itself.
                already_undone |= match (&undo.writer, &writer) {
                    (None, _) => true,
                    (Some(undone), Some(asked)) => *undone == asked.context_id,
                    (Some(_), None) => false,
                };
            }
            Record::FileChange(change) if in_run && counts(change.tool_call_id.as_deref()) => {
                match files.iter_mut().find(|f| f.path == change.path) {
                    Some(file) => file.after_hash = change.after_hash.clone(),
                    None => files.push(UndoFile {
                        path: change.path.clone(),
                        before_hash: change.before_hash.clone(),
                        after_hash: change.after_hash.clone(),
                        mode: change.mode,
                        undoable: change.undoable,
                        reason: change.reason.clone(),
                    }),
                }
            }
            _ => {}
        }
    }
    let root = root.ok_or_else(|| UndoError::NoProject {
        run_id: run_id.clone(),
    })?;
    files.retain(|f| f.before_hash != f.after_hash || !f.undoable);
    Ok(UndoPlan {
        run_id,
        writer,
        root,
        files,
        already_undone,
    })
}

/// The parallel writer of run `run_id` that `query` names: its context id, a unique prefix of
/// it, or its role when one writer had it.
fn find_writer(
    entries: &[JournalEntry],
    run_id: &str,
    query: &str,
) -> Result<UndoWriter, UndoError> {
    let mut writers: Vec<UndoWriter> = Vec::new();
    let mut in_run = false;
    for entry in entries {
        match &entry.record {
            Record::RunStart(start) => in_run = start.run_id.as_deref() == Some(run_id),
            Record::WriterMerge(merge)
                if in_run && !writers.iter().any(|w| w.context_id == merge.context_id) =>
            {
                writers.push(UndoWriter {
                    context_id: merge.context_id.clone(),
                    role: merge.role,
                });
            }
            _ => {}
        }
    }
    let named = |found: &[&UndoWriter]| {
        found
            .iter()
            .map(|w| format!("{} {}", w.role, w.context_id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let exact: Vec<&UndoWriter> = writers.iter().filter(|w| w.context_id == query).collect();
    let matching: Vec<&UndoWriter> = if exact.is_empty() {
        (writers.iter())
            .filter(|w| w.context_id.starts_with(query) || w.role.as_str() == query)
            .collect()
    } else {
        exact
    };
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(UndoError::NoSuchWriter {
            run_id: run_id.to_string(),
            query: query.to_string(),
            writers: match named(&writers.iter().collect::<Vec<_>>()) {
                none if none.is_empty() => "none (the run had no parallel writer)".into(),
                some => some,
            },
        }),
        many => Err(UndoError::AmbiguousWriter {
            run_id: run_id.to_string(),
            query: query.to_string(),
            writers: named(many),
        }),
    }
}

/// What stands in the way of `plan` now: files changed since the run, files it cannot put
/// back.
pub fn check(plan: &UndoPlan) -> Blockers {
    let mut blockers = Blockers::default();
    for file in &plan.files {
        let now = FileState::read(&plan.root, &file.path);
        let unchanged = match now {
            FileState::Other => false,
            _ => now.hash() == file.after_hash.as_deref(),
        };
        if !unchanged {
            blockers.changed_since.push(file.path.clone());
        }
        if !file.undoable {
            let reason = file
                .reason
                .clone()
                .unwrap_or_else(|| "its earlier content is not known".into());
            blockers.not_undoable.push((file.path.clone(), reason));
        }
    }
    blockers
}

/// Puts every file of `plan` back (content and mode; files the run created are deleted),
/// each atomically. Every saved content is read and checked before anything is written, so
/// a missing one changes nothing. Call [`check`] first.
pub fn apply(plan: &UndoPlan, store: &BlobStore) -> Result<Vec<UndoneFile>, UndoError> {
    let mut contents = Vec::new();
    for file in &plan.files {
        let bytes = match &file.before_hash {
            Some(hash) => Some(store.load(hash).map_err(|reason| UndoError::File {
                path: file.path.clone(),
                reason,
            })?),
            None => None,
        };
        contents.push(bytes);
    }
    let mut done = Vec::new();
    for (file, bytes) in plan.files.iter().zip(contents) {
        // Every write and removal goes beneath the root with no symlink followed: a link
        // planted since the run (`x -> $HOME`) makes undo refuse that file, never write
        // through it.
        let relative = Path::new(&file.path);
        let failed = |action: &str, err: std::io::Error| UndoError::File {
            path: file.path.clone(),
            reason: if braincode_sandbox::beneath::is_link_refusal(&err) {
                format!(
                    "cannot {action} it: a component of its path is now a symbolic link, and undo never writes through a link"
                )
            } else {
                format!("cannot {action} it: {err}")
            },
        };
        match bytes {
            None => braincode_sandbox::beneath::remove_file(&plan.root, relative)
                .map_err(|err| failed("delete", err))?,
            Some(bytes) => braincode_sandbox::beneath::write_file(
                &plan.root,
                relative,
                &bytes,
                file.mode.unwrap_or(0o644),
            )
            .map_err(|err| failed("restore", err))?,
        }
        done.push(UndoneFile {
            path: file.path.clone(),
            action: file.action().to_string(),
        });
    }
    Ok(done)
}
