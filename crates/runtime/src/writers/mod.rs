//! Parallel writers: support workers that edit, each in its own git worktree, merged back into
//! the project in dependency order.
//!
//! A brain with `routing.parallelWriters` marks the support workers of editing roles as
//! writers. When the plan has two or more, the project is a git repository and the run may
//! change files, each writer gets a detached worktree of the project as the run found it
//! ([`worktree`]), checked out sparsely: a file reaches its disk when the writer first uses it
//! ([`sparse`]). It gets edit tools rooted there, a sandbox whose one writable root is that
//! worktree, and a gate for it. A writer downstream of others starts from their change
//! ([`carry`]). When they are done, their changes come back one writer at a
//! time ([`merge`]): upstream writers first, then plan order; a clean merge is written through
//! the run's ledger (so `braincode undo` takes it back), a conflict goes to the primary with the
//! three sides, an edit made in the project meanwhile refuses the writer. Each merge is a
//! `writer_merge` record; the worktrees are removed whatever happened.
//!
//! A run killed before its cleanup leaves its snapshot and worktrees; `run --resume` takes them
//! up: a writer the journal has working goes on in its worktree as it was left (its journaled
//! model calls and tools are served from the journal, never made or run again), a writer whose
//! merge was journaled is not merged again. A writer whose worktree is gone (another run
//! removed it) works again from its start in a new one.
//!
//! Otherwise writers run as the support workers they are, and a warning says why.

mod carry;
mod done;
mod leftovers;
mod merge;
pub(crate) mod sparse;
mod worktree;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use braincode_brain::RuntimePlan;
use braincode_protocol::{CheckSummary, MergeOutcome, Record, TaskStatus, WriterMerge};
use braincode_sandbox::Sandbox;

use crate::approval::{PermissionMode, PolicyGate};
use crate::ledger::CallOrigin;
use crate::run::state::RunShared;
use crate::run::workers::{WorkerRun, upstream_of};
use crate::tape::Tape;
pub use leftovers::{LeftoverWriters, leftover_writers};
use merge::{FileAction, FileSides, MergePlan, plan_merge};
pub use sparse::SparseWorktree;
pub use worktree::Worktrees;

/// The largest file a merge reads on any side.
const MAX_MERGE_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// How much of each side of a conflict the primary is shown.
const CONFLICT_SIDE_CHARS: usize = 3_000;

/// Where one writer works.
#[derive(Clone)]
pub(crate) struct WriterPlace {
    /// Its worktree (the root of its tools).
    pub root: PathBuf,
    /// The same worktree as its tools see it: checked out sparsely, a file written on first
    /// use.
    pub lazy: Arc<sparse::SparseWorktree>,
    /// Its commands' sandbox: the worktree writable, nothing else of the project.
    pub sandbox: Option<Arc<Sandbox>>,
    /// Its gate, for paths under its worktree.
    pub gate: Arc<PolicyGate>,
    /// A resumed writer whose worktree is gone: it works again from its start, nothing
    /// served from the journal (its journaled edits are not in the new worktree).
    pub from_start: bool,
}

/// The writers of one run: their worktrees, keyed by plan index.
pub(crate) struct Writers {
    worktrees: Worktrees,
    places: BTreeMap<usize, WriterPlace>,
    /// What each writer changed, read as soon as it completed (its worktree no longer
    /// changes), and its checks, run while the others still work: the merge-back waits only
    /// on the last one's.
    done: done::Done,
}

impl Writers {
    /// Where writer `index` works, when it is a parallel writer.
    pub fn place(&self, index: usize) -> Option<WriterPlace> {
        self.places.get(&index).cloned()
    }

    /// Before writer `index` runs: what its upstream writers among `upstream` (all completed)
    /// changed is carried into its worktree, so it starts from their code. Says so, or why
    /// not (it then starts from the project as the run found it).
    pub async fn start_from_upstream(
        &self,
        shared: &RunShared,
        plan: &RuntimePlan,
        index: usize,
        upstream: &[usize],
    ) {
        let Some(place) = self.places.get(&index) else {
            return;
        };
        let upstream: Vec<usize> = (upstream.iter().copied())
            .filter(|u| self.places.contains_key(u))
            .collect();
        // Each upstream writer's change as read when it completed, once its checks are done
        // (what they wrote is not carried).
        let mut from: Vec<(&sparse::SparseWorktree, Option<Vec<String>>)> = Vec::new();
        for u in merge_order(plan, &upstream) {
            let Some(place) = self.places.get(&u) else {
                continue;
            };
            let paths = match self.done.of(u) {
                Some(finishing) => (finishing.await.changes.as_ref())
                    .ok()
                    .map(|sides| sides.iter().map(|s| s.path.clone()).collect()),
                None => None,
            };
            from.push((place.lazy.as_ref(), paths));
        }
        if from.is_empty() {
            return;
        }
        let role = plan.workers[index].role;
        match self.worktrees.carry(&place.lazy, &from).await {
            Ok(carried) if carried.is_empty() => {}
            Ok(carried) => shared.sink.status(format!(
                "{role} writer starts from its upstream writers' change ({} file{})",
                carried.len(),
                if carried.len() == 1 { "" } else { "s" }
            )),
            Err(why) => shared.sink.warning(format!(
                "{role} writer: its upstream writers' change could not be carried into its worktree ({why}); it starts from the project as the run found it"
            )),
        }
    }

    /// Removes the worktrees of a run that stopped before its merge (what still ran in them
    /// stopped first).
    pub async fn discard(self) {
        self.done.stop();
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

/// The run's snapshot for its writers being taken (a resumed run reopening the one it left).
pub(crate) type Opening = tokio::task::JoinHandle<Result<Worktrees, String>>;

/// Starts taking the run's snapshot for its writers, on its own task (a plan with fewer than
/// two writers does not wait for it, and what it made goes when it ends). `None` when this run
/// cannot have parallel writers whatever its plan: its brain has none, it may not change
/// files, it is a replay ([`prepare`] says why).
pub(crate) fn open(shared: &RunShared) -> Option<Opening> {
    if !shared.brain.routing.parallel_writers
        || shared.permission == PermissionMode::ReadOnly
        || shared.tape.as_deref().is_some_and(Tape::is_strict)
    {
        return None;
    }
    let root = shared.project_root.clone();
    let home = shared.home.root().to_path_buf();
    let run_id = shared.ids.run_id().to_string();
    let resumed = shared.tape.is_some();
    Some(tokio::spawn(async move {
        match resumed {
            true => Worktrees::reopen(&root, &home, &run_id).await,
            false => Worktrees::start(&root, &home, &run_id).await,
        }
    }))
}

/// Sets the plan's writers up in worktrees of the snapshot [`open`] took (a resumed run takes
/// up those it left), or says (a warning) why they run as support workers: fewer than two, a
/// read-only run, a replay, a project that is not a git repository.
pub(crate) async fn prepare(
    shared: &RunShared,
    plan: &RuntimePlan,
    opening: Option<Opening>,
) -> Option<Writers> {
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
    if shared.tape.as_deref().is_some_and(Tape::is_strict) {
        return not_parallel("a replay does not make worktrees");
    }
    let Some(opening) = opening.or_else(|| open(shared)) else {
        return not_parallel("this run's brain has no parallel writers");
    };
    let worktrees = match opening.await {
        Ok(Ok(worktrees)) => worktrees,
        Ok(Err(why)) => return not_parallel(&why),
        Err(stopped) => return not_parallel(&format!("the snapshot was not taken ({stopped})")),
    };
    let resumed = shared.tape.as_deref();
    // A writer the interrupted run had working goes on where it was; the others get a new
    // worktree.
    let setups: Vec<(usize, Option<PathBuf>, bool)> = (writers.iter())
        .map(|&index| {
            let name = plan.workers[index].context_id.as_str();
            let worked = resumed.is_some_and(|tape| tape.has_agent_work(name));
            let reused = worked.then(|| worktrees.reuse(name)).flatten();
            let from_start = worked
                && reused.is_none()
                && resumed.and_then(|tape| tape.writer_merge(name)).is_none();
            (index, reused, from_start)
        })
        .collect();
    // All at once: git registers them one at a time, then each is set up on its own.
    let made = futures::future::join_all(setups.iter().map(|(index, reused, _)| {
        let worktrees = &worktrees;
        async move {
            match reused {
                Some(root) => worktrees.sparse(root.clone()),
                None => {
                    worktrees
                        .add(plan.workers[*index].context_id.as_str())
                        .await
                }
            }
        }
    }))
    .await;
    let mut places = BTreeMap::new();
    for ((index, _, from_start), made) in setups.into_iter().zip(made) {
        let worker = &plan.workers[index];
        let lazy = match made {
            Ok(lazy) => Arc::new(lazy),
            Err(why) => {
                worktrees.remove_all().await;
                return not_parallel(&format!("a worktree could not be made ({why})"));
            }
        };
        let root = lazy.path().to_path_buf();
        if from_start {
            shared.sink.warning(format!(
                "{} writer: the worktree it had before the interruption is gone; it works again from its start (its model calls are made again)",
                worker.role
            ));
        }
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
                lazy,
                sandbox: sandbox.ok(),
                gate,
                from_start,
            },
        );
    }
    Some(Writers {
        worktrees,
        places,
        done: done::Done::default(),
    })
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

/// Merges every writer back, records each merge, and returns what the primary must be told
/// about each writer whose change was not written (by plan index), and the removal of the
/// worktrees, under way while the run goes on (the run waits for it before it ends).
pub(crate) async fn merge_back(
    shared: &RunShared,
    plan: &RuntimePlan,
    writers: Writers,
    runs: &BTreeMap<usize, WorkerRun>,
) -> (BTreeMap<usize, String>, tokio::task::JoinHandle<()>) {
    let indexes: Vec<usize> = writers.places.keys().copied().collect();
    let mut expected: HashMap<String, Option<String>> = HashMap::new();
    let mut notes = BTreeMap::new();
    // Read for every writer that completed and was not merged before an interruption (its
    // worktree is its alone and no longer changes): most were read as they completed.
    let to_read: Vec<(usize, &SparseWorktree)> = (writers.places.iter())
        .filter(|(index, _)| {
            let context_id = plan.workers[**index].context_id.as_str();
            let merged =
                (shared.tape.as_deref()).is_some_and(|t| t.writer_merge(context_id).is_some());
            let completed = runs
                .get(index)
                .is_some_and(|run| run.status() == TaskStatus::Completed);
            completed && !merged
        })
        .map(|(index, place)| (*index, place.lazy.as_ref()))
        .collect();
    let mut changes = changes_of(&writers, &to_read).await;
    for index in merge_order(plan, &indexes) {
        let worker = &plan.workers[index];
        let Some(place) = writers.places.get(&index) else {
            continue;
        };
        let journaled = (shared.tape.as_deref())
            .and_then(|tape| Some((tape, tape.writer_merge(worker.context_id.as_str())?)));
        if let Some((tape, merged)) = journaled {
            // Merged before the interruption: not again. What it wrote is what the merges
            // after it expect; the resumed run's report lists it too.
            if merged.outcome == MergeOutcome::Clean {
                for file in &merged.files {
                    if let Some(hash) = tape.changed_files().get(&file.path) {
                        expected.insert(file.path.clone(), hash.clone());
                    }
                }
            }
            if let Some(note) = journaled_note(merged) {
                notes.insert(index, note);
            }
            shared.sink.record(Record::WriterMerge(merged.clone()));
            continue;
        }
        let mut record = WriterMerge {
            role: worker.role,
            context_id: worker.context_id.to_string(),
            worktree: place.root.display().to_string(),
            outcome: MergeOutcome::Failed,
            files: Vec::new(),
            reason: None,
            patch_path: None,
            checks: None,
        };
        let completed = runs
            .get(&index)
            .is_some_and(|run| run.status() == TaskStatus::Completed);
        if !completed {
            record.reason = Some("the writer did not complete; it contributes nothing".into());
            shared.sink.record(Record::WriterMerge(record));
            continue;
        }
        let (read_now, checks) = changes.remove(&index).unwrap_or((Ok(Vec::new()), None));
        let checks_note = checks.as_ref().and_then(done::failed_checks_note);
        record.checks = checks;
        let sides = read_now.and_then(|mut sides| {
            for side in &mut sides {
                side.ours = read_beneath(writers.worktrees.root(), &side.path)?;
            }
            Ok(sides)
        });
        let sides = match sides {
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
                    expected.extend(merge.after.iter().cloned());
                }
            }
            MergeOutcome::Conflict | MergeOutcome::Refused => {
                record.patch_path = save_patch(shared, &worker.context_id.to_string(), &sides);
                notes.insert(index, primary_note(&merge, record.patch_path.as_deref()));
            }
            MergeOutcome::Empty => expected.extend(merge.after.iter().cloned()),
            MergeOutcome::Failed => {}
        }
        if let Some(checks_note) = checks_note {
            let note = notes.entry(index).or_insert_with(String::new);
            if !note.is_empty() {
                note.push('\n');
            }
            note.push_str(&checks_note);
        }
        shared.sink.record(Record::WriterMerge(record));
    }
    let worktrees = writers.worktrees;
    let removal = tokio::spawn(async move { worktrees.remove_all().await });
    (notes, removal)
}

/// What the writers in `worktrees_of` (plan index → worktree) left: what was read as each
/// completed with its checks, the others read now (no checks), side by side.
async fn changes_of(
    writers: &Writers,
    worktrees_of: &[(usize, &SparseWorktree)],
) -> BTreeMap<usize, (done::Changes, Option<CheckSummary>)> {
    let read = futures::future::join_all((worktrees_of.iter()).map(|(index, worktree)| {
        let early = writers.done.of(*index);
        async move {
            match early {
                Some(finishing) => {
                    let finished = finishing.await;
                    (finished.changes.clone(), finished.checks.clone())
                }
                None => (worktree.changes().await, None),
            }
        }
    }))
    .await;
    (worktrees_of.iter().map(|(index, _)| *index))
        .zip(read)
        .collect()
}

/// A file beneath `root` with no link followed (`None`: not there).
pub(super) fn read_beneath(root: &Path, path: &str) -> Result<Option<Vec<u8>>, String> {
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
    let mut note = not_applied(merge.reason.as_deref(), patch);
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

/// The opening of the note about a writer whose change was not written: why, and its patch.
fn not_applied(reason: Option<&str>, patch: Option<&str>) -> String {
    let mut note = format!(
        "This writer's change was NOT applied to the project: {}.",
        reason.unwrap_or("it could not be merged")
    );
    if let Some(patch) = patch {
        note.push_str(&format!(" Its patch is saved at {patch}."));
    }
    note
}

/// What the primary of a resumed run is told about a writer whose merge, journaled before the
/// interruption, did not write its change (its patch holds the change; the three sides are
/// not journaled).
fn journaled_note(merge: &WriterMerge) -> Option<String> {
    let told = match merge.outcome {
        MergeOutcome::Conflict | MergeOutcome::Refused => true,
        MergeOutcome::Failed => merge.patch_path.is_some(),
        MergeOutcome::Clean | MergeOutcome::Empty => false,
    };
    let checks = merge.checks.as_ref().and_then(done::failed_checks_note);
    match (told, checks) {
        (true, Some(checks)) => Some(format!(
            "{}\n{checks}",
            not_applied(merge.reason.as_deref(), merge.patch_path.as_deref())
        )),
        (true, None) => Some(not_applied(
            merge.reason.as_deref(),
            merge.patch_path.as_deref(),
        )),
        (false, checks) => checks,
    }
}
