//! What a writer left when it completed: its change, read at once (its worktree is its alone
//! and no longer changes), then the checks its changed files select, run in its worktree
//! while the other writers still work. A writer downstream of it starts from that change once
//! its checks are done, and its merge waits for them: the merge record carries them, and the
//! primary hears of a failure before it looks at the merged tree.

use std::collections::BTreeMap;
use std::sync::Arc;

use braincode_protocol::{CheckStatus, CheckSummary, Role};
use braincode_tools::LazyFiles;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};

use super::merge::FileSides;
use super::{WriterPlace, Writers};
use crate::run::checks::{CheckContext, approve, missing_results, outcome_reason, run_specs};
use crate::run::state::RunShared;

/// A writer's changed files with their sides, or why they could not be read.
pub(super) type Changes = Result<Vec<FileSides>, String>;

/// What one writer left.
pub(super) struct Finished {
    /// Its change, read before its checks ran: what the checks write is never merged.
    pub changes: Changes,
    /// Its checks (none: it changed nothing, or none were selected).
    pub checks: Option<CheckSummary>,
}

/// A writer's [`Finished`], being made; awaited by its merge and by the writers downstream.
pub(super) type Finishing = Shared<BoxFuture<'static, Arc<Finished>>>;

/// The writers that completed: what each left, by plan index.
#[derive(Default)]
pub(super) struct Done {
    finishing: std::sync::Mutex<BTreeMap<usize, (Finishing, tokio::task::AbortHandle)>>,
}

impl Done {
    /// What writer `index` left, when it completed in this run.
    pub fn of(&self, index: usize) -> Option<Finishing> {
        let finishing = self
            .finishing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        finishing.get(&index).map(|(f, _)| f.clone())
    }

    /// Stops whatever is still running (a stopped run's checks), before the worktrees go.
    pub fn stop(&self) {
        let finishing = self
            .finishing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (_, abort) in finishing.values() {
            abort.abort();
        }
    }
}

impl Writers {
    /// Writer `index` completed: its change is read now, then its checks run in its worktree.
    /// A writer whose merge the interrupted run journaled is not read again.
    pub fn completed(&self, shared: &Arc<RunShared>, index: usize, role: Role, context_id: &str) {
        let Some(place) = self.places.get(&index).cloned() else {
            return;
        };
        if (shared.tape.as_deref()).is_some_and(|t| t.writer_merge(context_id).is_some()) {
            return;
        }
        let shared = Arc::clone(shared);
        let call_id = format!("writer-checks:{}:{context_id}", shared.sink.session_id());
        let task = tokio::spawn(async move {
            let changes = place.lazy.changes().await;
            let checks = match &changes {
                Ok(sides) if !sides.is_empty() => {
                    let paths: Vec<&str> = sides.iter().map(|s| s.path.as_str()).collect();
                    writer_checks(&shared, &place, role, call_id, &paths).await
                }
                _ => None,
            };
            Arc::new(Finished { changes, checks })
        });
        let abort = task.abort_handle();
        let finishing = async move {
            task.await.unwrap_or_else(|stopped| {
                Arc::new(Finished {
                    changes: Err(format!("its change was not read ({stopped})")),
                    checks: None,
                })
            })
        }
        .boxed()
        .shared();
        let mut all =
            (self.done.finishing.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
        all.insert(index, (finishing, abort));
    }
}

/// The checks `changed` selects, run in the writer's worktree with its sandbox and its gate.
/// `None` when none are selected, or the run's checks or its writers' (`checks.inWriters`) are
/// off. The worktree is written out
/// whole first (the checks read the project: its manifests, its other files), and only when
/// something will run: the project as the run found it tells.
async fn writer_checks(
    shared: &RunShared,
    place: &WriterPlace,
    role: Role,
    call_id: String,
    changed: &[&str],
) -> Option<CheckSummary> {
    let select = |root: &std::path::Path| {
        braincode_tools::checks::select(
            root,
            changed,
            &shared.checks.config,
            &shared.checks.overrides,
        )
    };
    if !shared.checks.config.in_writers {
        return None;
    }
    let first = select(&shared.project_root);
    if first.skipped.is_some() || (first.checks.is_empty() && first.missing.is_empty()) {
        return None;
    }
    if let Err(why) = place.lazy.materialize_all().await {
        let mut summary = first.summary();
        summary.reason = Some(format!("its worktree could not be written out: {why}"));
        return Some(summary);
    }
    let selection = select(&place.root);
    let mut summary = selection.summary();
    if selection.skipped.is_some() {
        return Some(summary);
    }
    let missing = missing_results(&selection);
    if selection.checks.is_empty() {
        if missing.is_empty() {
            return None;
        }
        summary.status = CheckStatus::of_results(&missing);
        summary.results = missing;
        return Some(summary);
    }
    if !shared.checks.trusted && !place.gate.has_person() {
        summary.reason = Some(crate::approval::untrusted_checks_reason());
        return Some(summary);
    }
    if let Err(reason) = approve(shared, &place.gate, call_id, &selection).await {
        summary.reason = Some(reason);
        return Some(summary);
    }
    let ran = run_specs(
        &selection.checks,
        &CheckContext {
            root: &place.root,
            sandbox: place.sandbox.as_deref(),
            cancel: &shared.cancel,
            config: &shared.checks.config,
        },
        |check| {
            (shared.sink).status(format!(
                "{role} writer check: {} (in its worktree)",
                check.name
            ));
        },
    )
    .await
    .ok()?;
    let mut results = missing;
    results.extend(ran.results);
    summary.status = CheckStatus::of_results(&results);
    summary.reason = Some(outcome_reason(&selection.reason, &results, &ran.not_run));
    summary.results = results;
    Some(summary)
}

/// What the primary is told of a writer whose checks failed in its worktree (its change was
/// merged all the same: the checks run again on the merged tree, and their failures go to
/// the fix loop).
pub(super) fn failed_checks_note(checks: &CheckSummary) -> Option<String> {
    if checks.status != CheckStatus::Failed {
        return None;
    }
    let mut note = String::from(
        "This writer's checks FAILED in its own worktree, before its change was merged:",
    );
    for result in (checks.results.iter()).filter(|r| !r.passed && r.environment.is_none()) {
        note.push_str(&format!(
            "\n- {} ({}):\n{}",
            result.name,
            result.command,
            crate::run::checks::fix_excerpt(&result.output_tail)
        ));
    }
    Some(note)
}
