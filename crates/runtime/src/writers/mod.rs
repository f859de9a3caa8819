//! Parallel writers: support workers that edit, each in its own git worktree, merged back into
//! the project in dependency order.
//!
//! A brain with `routing.parallelWriters` marks the support workers of editing roles as
//! writers. When the plan has two or more, the project is a git repository and the run may
//! change files, each writer gets a detached worktree of the project as the run found it
//! ([`worktree`]), edit tools rooted there, a sandbox whose one writable root is that
//! worktree, and a gate for it. When they are done, their changes come back one writer at a
//! time ([`merge`]): upstream writers first, then plan order; a clean merge is written through
//! the run's ledger (so `braincode undo` takes it back), a conflict goes to the primary with the
//! three sides, an edit made in the project meanwhile refuses the writer. Each merge is a
//! `writer_merge` record; the worktrees are removed whatever happened.
//!
//! Otherwise writers run as the support workers they are, and a warning says why.

mod merge;
mod worktree;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use braincode_brain::RuntimePlan;
use braincode_protocol::{MergeOutcome, Record, TaskStatus, WriterMerge};
use braincode_sandbox::Sandbox;

use crate::approval::{PermissionMode, PolicyGate};
use crate::ledger::CallOrigin;
use crate::run::state::RunShared;
use crate::run::workers::{WorkerRun, upstream_of};
use merge::{FileAction, FileSides, MergePlan, plan_merge};
pub use worktree::{LeftoverWriters, Worktrees, leftover_writers};

/// The largest file a merge reads on any side.
const MAX_MERGE_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// How much of each side of a conflict the primary is shown.
const CONFLICT_SIDE_CHARS: usize = 3_000;

/// Where one writer works.
#[derive(Clone)]
pub(crate) struct WriterPlace {
    /// Its worktree (the root of its tools).
    pub root: PathBuf,
    /// Its commands' sandbox: the worktree writable, nothing else of the project.
    pub sandbox: Option<Arc<Sandbox>>,
    /// Its gate, for paths under its worktree.
    pub gate: Arc<PolicyGate>,
}

/// The writers of one run: their worktrees, keyed by plan index.
pub(crate) struct Writers {
    worktrees: Worktrees,
    places: BTreeMap<usize, WriterPlace>,
}

impl Writers {
    /// Where writer `index` works, when it is a parallel writer.
    pub fn place(&self, index: usize) -> Option<WriterPlace> {
        self.places.get(&index).cloned()
    }

    /// Removes the worktrees of a run that stopped before its merge.
    pub async fn discard(self) {
        self.worktrees.remove_all().await;
    }
}

/// The plan's writers, by index.
fn writer_indexes(plan: &RuntimePlan) -> Vec<usize> {
    (plan.workers.iter().enumerate())
        .filter(|(_, w)| w.writer)
        .map(|(i, _)| i)
        .collect()
}

/// Sets the plan's writers up in worktrees, or says (a warning) why they run as support
/// workers: fewer than two, a read-only run, a replay, a project that is not a git repository.
pub(crate) async fn prepare(shared: &RunShared, plan: &RuntimePlan) -> Option<Writers> {
    let writers = writer_indexes(plan);
    if writers.is_empty() {
        return None;
    }
    let not_parallel = |why: &str| {
        shared.sink.warning(format!(
            "writers not parallel: {why}; they run as support workers and the primary makes the change"
        ));
        None
    };
    if writers.len() < 2 {
        return not_parallel("the plan has one writer");
    }
    if shared.permission == PermissionMode::ReadOnly {
        return not_parallel("this run may not change files");
    }
    if shared.tape.is_some() {
        return not_parallel("a replayed or resumed run does not make worktrees again");
    }
    let worktrees = match Worktrees::start(
        &shared.project_root,
        shared.home.root(),
        shared.ids.run_id(),
    )
    .await
    {
        Ok(worktrees) => worktrees,
        Err(why) => return not_parallel(&why),
    };
    let mut places = BTreeMap::new();
    for index in writers {
        let worker = &plan.workers[index];
        let root = match worktrees.add(worker.context_id.as_str()).await {
            Ok(root) => root,
            Err(why) => {
                worktrees.remove_all().await;
                return not_parallel(&format!("a worktree could not be made ({why})"));
            }
        };
        let sandbox =
            crate::run::writer_sandbox(&shared.home, &root, &shared.settings, shared.permission);
        if let Err(why) = &sandbox {
            shared.sink.warning(format!(
                "{} writer: no sandbox for its worktree ({why}); its commands need a person",
                worker.role
            ));
        }
        let gate = Arc::new(shared.gate.for_root(root.clone(), sandbox.is_ok()));
        shared.sink.status(format!(
            "{} writer works in {}",
            worker.role,
            root.display()
        ));
        places.insert(
            index,
            WriterPlace {
                root,
                sandbox: sandbox.ok(),
                gate,
            },
        );
    }
    Some(Writers { worktrees, places })
}

/// The order writers merge in: a writer after every writer upstream of it, then plan order.
fn merge_order(plan: &RuntimePlan, writers: &[usize]) -> Vec<usize> {
    let mut order = Vec::new();
    let mut left: BTreeSet<usize> = writers.iter().copied().collect();
    while !left.is_empty() {
        let ready = left.iter().copied().find(|&index| {
            upstream_of(plan, index)
                .iter()
                .all(|upstream| !left.contains(upstream))
        });
        // A cycle (the plan's normalizer breaks them; belt and braces): plan order.
        let next = ready.unwrap_or_else(|| *left.iter().next().unwrap_or(&0));
        left.remove(&next);
        order.push(next);
    }
    order
}

/// Merges every writer back, records each merge, removes the worktrees, and returns what the
/// primary must be told about each writer whose change was not written (by plan index).
pub(crate) async fn merge_back(
    shared: &RunShared,
    plan: &RuntimePlan,
    writers: Writers,
    runs: &BTreeMap<usize, WorkerRun>,
) -> BTreeMap<usize, String> {
    let indexes: Vec<usize> = writers.places.keys().copied().collect();
    let mut expected: HashMap<String, Option<Vec<u8>>> = HashMap::new();
    let mut notes = BTreeMap::new();
    for index in merge_order(plan, &indexes) {
        let worker = &plan.workers[index];
        let Some(place) = writers.places.get(&index) else {
            continue;
        };
        let mut record = WriterMerge {
            role: worker.role,
            context_id: worker.context_id.to_string(),
            worktree: place.root.display().to_string(),
            outcome: MergeOutcome::Failed,
            files: Vec::new(),
            reason: None,
            patch_path: None,
        };
        let completed = runs
            .get(&index)
            .is_some_and(|run| run.status() == TaskStatus::Completed);
        if !completed {
            record.reason = Some("the writer did not complete; it contributes nothing".into());
            shared.sink.record(Record::WriterMerge(record));
            continue;
        }
        let sides = match file_sides(&writers.worktrees, &place.root).await {
            Ok(sides) => sides,
            Err(why) => {
                record.reason = Some(format!("its change could not be read: {why}"));
                shared.sink.record(Record::WriterMerge(record));
                continue;
            }
        };
        let merge = plan_merge(&sides, &expected);
        record.outcome = merge.outcome;
        record.files = merge.files.clone();
        record.reason = merge.reason.clone();
        match merge.outcome {
            MergeOutcome::Clean => {
                if let Err(why) = write_merge(shared, &merge, &worker.context_id.to_string()) {
                    record.outcome = MergeOutcome::Failed;
                    record.reason = Some(why);
                    record.patch_path = save_patch(shared, &worker.context_id.to_string(), &sides);
                    let failed = MergePlan {
                        reason: record.reason.clone(),
                        ..merge.clone()
                    };
                    notes.insert(index, primary_note(&failed, record.patch_path.as_deref()));
                } else {
                    for (path, action) in &merge.actions {
                        let content = match action {
                            FileAction::Write(bytes) => Some(bytes.clone()),
                            FileAction::Delete => None,
                        };
                        expected.insert(path.clone(), content);
                    }
                }
            }
            MergeOutcome::Conflict | MergeOutcome::Refused => {
                record.patch_path = save_patch(shared, &worker.context_id.to_string(), &sides);
                notes.insert(index, primary_note(&merge, record.patch_path.as_deref()));
            }
            MergeOutcome::Empty | MergeOutcome::Failed => {}
        }
        shared.sink.record(Record::WriterMerge(record));
    }
    writers.worktrees.remove_all().await;
    notes
}

/// The writer's changed files with their three sides.
async fn file_sides(worktrees: &Worktrees, worktree: &Path) -> Result<Vec<FileSides>, String> {
    let mut sides = Vec::new();
    for path in worktrees.changed_files(worktree).await? {
        sides.push(FileSides {
            base: worktrees.snapshot_content(&path).await,
            ours: read(worktrees.root(), &path)?,
            theirs: read(worktree, &path)?,
            path,
        });
    }
    Ok(sides)
}

/// A file beneath `root` with no link followed (`None`: not there).
fn read(root: &Path, path: &str) -> Result<Option<Vec<u8>>, String> {
    let relative = Path::new(path);
    match braincode_sandbox::beneath::stat(root, relative) {
        Ok(None) => Ok(None),
        Ok(Some(_)) => braincode_sandbox::beneath::read_file(root, relative, MAX_MERGE_FILE_BYTES)
            .map(Some)
            .map_err(|err| format!("{path}: {err}")),
        Err(err) => Err(format!("{path}: {err}")),
    }
}

/// Writes a clean merge into the project through the run's ledger (one `file_change` per
/// file, under the writer's merge as its call), beneath the root with no link followed.
fn write_merge(shared: &RunShared, merge: &MergePlan, context_id: &str) -> Result<(), String> {
    let paths: Vec<String> = merge.actions.iter().map(|(path, _)| path.clone()).collect();
    let snapshot = shared
        .ledger
        .as_ref()
        .and_then(|l| l.snapshot_paths(&paths));
    let mut failed = None;
    for (done, (path, action)) in merge.actions.iter().enumerate() {
        let relative = Path::new(path);
        let written = match action {
            FileAction::Delete => {
                braincode_sandbox::beneath::remove_file(&shared.project_root, relative)
            }
            FileAction::Write(bytes) => {
                let mode = braincode_sandbox::beneath::stat(&shared.project_root, relative)
                    .ok()
                    .flatten()
                    .map_or(0o644, |entry| entry.mode & 0o7777);
                braincode_sandbox::beneath::write_file(&shared.project_root, relative, bytes, mode)
            }
        };
        if let Err(err) = written {
            // The files before it are written: they go in the ledger below, so `braincode
            // undo` takes them back; the writer is reported failed with its patch saved.
            failed = Some(format!(
                "{path} could not be written ({err}); {done} file(s) of this writer were written before it and can be undone"
            ));
            break;
        }
    }
    if let (Some(ledger), Some(snapshot)) = (&shared.ledger, snapshot) {
        let call = format!("merge-{context_id}");
        ledger.after(
            snapshot,
            CallOrigin {
                tool_call_id: &call,
                tool_name: "writer_merge",
                agent_session_id: None,
            },
        );
    }
    failed.map_or(Ok(()), Err)
}

/// Saves the writer's change as a patch under the Braincode home; its path, when saved.
fn save_patch(shared: &RunShared, context_id: &str, sides: &[FileSides]) -> Option<String> {
    let mut patch = String::new();
    for side in sides {
        let text = |bytes: &Option<Vec<u8>>| {
            bytes
                .as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let (base, theirs) = (text(&side.base), text(&side.theirs));
        let body = diffy::create_patch(&base, &theirs).to_string();
        // diffy's own header names no file: the file's names, then its hunks.
        patch.push_str(&format!("--- a/{0}\n+++ b/{0}\n", side.path));
        let hunks = body
            .split_once("\n+++ ")
            .map_or(body.as_str(), |(_, rest)| {
                rest.split_once('\n').map_or("", |(_, hunks)| hunks)
            });
        patch.push_str(hunks);
    }
    let dir = shared.home.root().join("writers").join(shared.ids.run_id());
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("{context_id}.patch"));
    std::fs::write(&path, patch).ok()?;
    Some(path.display().to_string())
}

/// What the primary is told about a writer whose change was not written.
fn primary_note(merge: &MergePlan, patch: Option<&str>) -> String {
    let mut note = format!(
        "This writer's change was NOT applied to the project: {}.",
        merge.reason.as_deref().unwrap_or("it could not be merged")
    );
    if let Some(patch) = patch {
        note.push_str(&format!(" Its patch is saved at {patch}."));
    }
    for conflict in &merge.conflicts {
        let clip =
            |text: &str| braincode_protocol::clip_chars_noting_rest(text, CONFLICT_SIDE_CHARS);
        note.push_str(&format!(
            "\nResolve {path} with your edit tools: keep the project's current content and add this writer's change.\n--- base (the run's start)\n{}\n--- project now\n{}\n--- this writer\n{}",
            clip(&conflict.base),
            clip(&conflict.ours),
            clip(&conflict.theirs),
            path = conflict.path,
        ));
    }
    note
}
