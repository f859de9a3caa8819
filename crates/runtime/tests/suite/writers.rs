//! Parallel writers, run in process against scripted models and real git repositories: two
//! writers on different files both land; two on the same line conflict and the primary
//! resolves it with the three sides it is shown; the user's uncommitted and untracked changes
//! are in every writer's worktree and still in the project afterwards; an edit made in the
//! project during the run refuses the writer instead of being written over; a project that is
//! not a git repository, or a plan with one writer, runs as before and says why; no worktree
//! is left behind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::support::{
    BrainConfig, Matcher, Reply, Script, TestOutcome, TestRun, review_json, router_decision_json,
    worker_result_for,
};
use braincode_protocol::{MergeOutcome, ReviewVerdict, Role, Warning, WriterMerge};
use braincode_runtime::PermissionMode;
use braincode_test_support::TempRepo;
use serde_json::{Value, json};

pub(crate) const PROMPT: &str = "Add the signup endpoint, its form and its table";
pub(crate) const ANSWER: &str = "Signup is in: endpoint, form and table.";

/// Router → backend primary, frontend and dba support writers; each writer edits `file`'s
/// `old` into `new` (by role), then reports; the reviewer approves; the primary answers.
pub(crate) fn writers_script(
    edits: Vec<(Role, &'static str, &'static str, &'static str)>,
) -> Script {
    let mut script = Script::new().always(
        Matcher::router(),
        Reply::json(&router_decision_json(
            Role::Backend,
            &[Role::Frontend, Role::Dba],
        )),
    );
    for (role, file, old, new) in edits {
        script = script.when_fn(Matcher::support(role), move |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, &format!("{role} edited {file}")))
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": file, "oldString": old, "newString": new}),
                )
            }
        });
    }
    script
        .always(
            Matcher::review(),
            Reply::json(&review_json(ReviewVerdict::Approved)),
        )
        .always(Matcher::primary(), Reply::text(ANSWER))
}

pub(crate) fn merges(outcome: &TestOutcome) -> Vec<&WriterMerge> {
    outcome.journal.of_type::<WriterMerge>()
}

/// `role`'s writer: its edit (`edit_file` arguments), then `meanwhile` (something that happens
/// in the project while it works), then its result.
fn writer_then(role: Role, edit: Value, meanwhile: impl Fn() + Send + Sync + 'static) -> Script {
    Script::new().when_fn(Matcher::support(role), move |call| {
        if call.is_tool_turn() {
            meanwhile();
            Reply::json(&worker_result_for(call, &format!("{role} edited")))
        } else {
            Reply::tool_call("edit_file", edit.clone())
        }
    })
}

/// A run with edits allowed and parallel writers, in `repo`.
pub(crate) async fn run_writers(repo: &TempRepo, script: Script) -> TestOutcome {
    TestRun::new(PROMPT)
        .project_dir(repo.path())
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .script(script)
        .run()
        .await
}

/// A committed repository with the two files the writers of [`writers_script`] edit.
pub(crate) fn form_and_schema_repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    repo.commit("start");
    repo
}

pub(crate) fn read(root: &Path, relative: &str) -> String {
    std::fs::read_to_string(root.join(relative)).unwrap_or_else(|err| panic!("{relative}: {err}"))
}

/// Nothing of the writers is left: no directory under `.git/braincode-writers/`, no worktree
/// in git's list.
pub(crate) fn assert_no_worktree_left(project: &Path) {
    let writers = project.join(".git/braincode-writers");
    let left: Vec<_> = std::fs::read_dir(&writers)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "worktrees left behind: {left:?}");
    let list = std::process::Command::new("git")
        .args(["worktree", "list", "--porcelain"])
        .current_dir(project)
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
}

#[tokio::test]
async fn two_writers_on_different_files_both_land_and_leave_no_worktree() {
    let repo = form_and_schema_repo();
    // What a run killed with `kill -9` left: its writers directory, its lock held by nobody.
    let killed = repo.path().join(".git/braincode-writers/killed-run/t-1");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::write(killed.join("half-edited.ts"), "x").unwrap();
    let outcome = TestRun::new(PROMPT)
        .project_dir(repo.path())
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .script(writers_script(vec![
            (Role::Frontend, "web/form.ts", "[]", "['email', 'password']"),
            (
                Role::Dba,
                "db/schema.sql",
                "-- tables",
                "CREATE TABLE users (email TEXT);",
            ),
        ]))
        .run()
        .await;

    let project = repo.path();
    let merges = merges(&outcome);
    // No merge at all: the warnings say why the writers did not run in parallel.
    assert_eq!(merges.len(), 2, "{:?}", outcome.report.warnings);
    assert_eq!(
        read(project, "web/form.ts"),
        "export const fields = ['email', 'password'];\n"
    );
    assert_eq!(
        read(project, "db/schema.sql"),
        "CREATE TABLE users (email TEXT);\n"
    );
    assert!(
        merges.iter().all(|m| m.outcome == MergeOutcome::Clean),
        "{merges:?}"
    );
    assert_eq!(outcome.report.merges.len(), 2);
    // Each writer worked in its own worktree, not in the project.
    assert!(
        merges
            .iter()
            .all(|m| m.worktree.contains("/.git/braincode-writers/"))
    );
    // The merge is the ledger's: `braincode undo` can take each file back.
    assert_eq!(
        outcome.journal.count("file_change"),
        2,
        "one file_change per merged file"
    );
    // This run's worktrees and the killed run's directory are gone.
    assert_no_worktree_left(project);
    assert_eq!(outcome.folded_report(), outcome.report);
}

#[tokio::test]
async fn a_conflict_goes_to_the_primary_with_the_three_sides_and_it_resolves_it() {
    let primary_prompt = Arc::new(Mutex::new(String::new()));
    let seen = primary_prompt.clone();
    let script = writers_script(vec![
        (Role::Frontend, "src/limits.rs", "10", "20"),
        (Role::Dba, "src/limits.rs", "10", "30"),
    ]);
    // The primary resolves by writing both intents, once it has been told.
    let script = Script::new()
        .when_fn(Matcher::primary(), move |call| {
            if call.is_tool_turn() {
                return Reply::text(ANSWER);
            }
            *seen.lock().unwrap() = call.first_user_text().to_string();
            Reply::tool_call(
                "edit_file",
                json!({"path": "src/limits.rs", "oldString": "20", "newString": "20 + 30"}),
            )
        })
        .then(script);
    let outcome = TestRun::new(PROMPT)
        .git_repo()
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .file("src/limits.rs", "pub const MAX: u32 = 10;\n")
        .script(script)
        .run()
        .await;

    let merges = merges(&outcome);
    let outcomes: Vec<MergeOutcome> = merges.iter().map(|m| m.outcome).collect();
    assert_eq!(
        outcomes,
        [MergeOutcome::Clean, MergeOutcome::Conflict],
        "{merges:?}"
    );
    let conflict = merges[1];
    assert!(
        conflict
            .reason
            .as_deref()
            .unwrap()
            .contains("src/limits.rs")
    );
    let patch = conflict
        .patch_path
        .as_deref()
        .expect("the conflicting patch is saved");
    assert!(
        std::fs::read_to_string(patch)
            .unwrap()
            .contains("+pub const MAX: u32 = 30;")
    );
    // The primary was shown what happened and the three sides.
    let prompt = primary_prompt.lock().unwrap().clone();
    assert!(prompt.contains("NOT applied"), "{prompt}");
    assert!(prompt.contains("pub const MAX: u32 = 30;"), "{prompt}");
    assert!(prompt.contains("pub const MAX: u32 = 20;"), "{prompt}");
    // The first writer landed, the primary's resolution on top of it.
    assert_eq!(
        read(outcome.project(), "src/limits.rs"),
        "pub const MAX: u32 = 20 + 30;\n"
    );
    assert_no_worktree_left(outcome.project());
}

#[tokio::test]
async fn uncommitted_and_untracked_changes_reach_the_writers_and_stay_in_the_project() {
    let repo = form_and_schema_repo();
    // The user's work in progress: a modified tracked file and a new one, neither committed.
    repo.write("web/form.ts", "export const fields = []; // wip\n");
    repo.write("NOTES.md", "my notes\n");
    let head = repo.git(&["rev-parse", "HEAD"]);
    let outcome = TestRun::new(PROMPT)
        .project_dir(repo.path())
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .script(writers_script(vec![
            // Only matches the user's uncommitted text: the worktree has it.
            (
                Role::Frontend,
                "web/form.ts",
                "[]; // wip",
                "['email']; // wip",
            ),
            (
                Role::Dba,
                "db/schema.sql",
                "-- tables",
                "CREATE TABLE users ();",
            ),
        ]))
        .run()
        .await;

    let merges = merges(&outcome);
    assert!(
        merges.iter().all(|m| m.outcome == MergeOutcome::Clean),
        "{merges:?}"
    );
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = ['email']; // wip\n"
    );
    assert_eq!(read(repo.path(), "NOTES.md"), "my notes\n");
    // Nothing was committed or staged for the user.
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(repo.git(&["branch", "--list"]).lines().count(), 1);
    assert_eq!(repo.git(&["diff", "--cached", "--name-only"]).trim(), "");
    assert_no_worktree_left(repo.path());
}

#[tokio::test]
async fn an_edit_made_in_the_project_during_the_run_refuses_the_writer() {
    let repo = form_and_schema_repo();
    let project = repo.path().to_path_buf();
    // While the frontend writer works, the user saves the same file in their editor.
    let script = writer_then(
        Role::Frontend,
        json!({"path": "web/form.ts", "oldString": "[]", "newString": "['email']"}),
        move || {
            std::fs::write(
                project.join("web/form.ts"),
                "export const fields = ['mine'];\n",
            )
            .unwrap();
        },
    )
    .then(writers_script(vec![(
        Role::Dba,
        "db/schema.sql",
        "-- tables",
        "CREATE TABLE users ();",
    )]));
    let outcome = run_writers(&repo, script).await;

    let merges = merges(&outcome);
    let frontend = merges.iter().find(|m| m.role == Role::Frontend).unwrap();
    assert_eq!(frontend.outcome, MergeOutcome::Refused, "{merges:?}");
    assert!(
        frontend
            .reason
            .as_deref()
            .unwrap()
            .contains("web/form.ts changed in the project")
    );
    // The user's edit stands; the other writer landed.
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = ['mine'];\n"
    );
    assert_eq!(
        read(repo.path(), "db/schema.sql"),
        "CREATE TABLE users ();\n"
    );
    assert_no_worktree_left(repo.path());
}

#[tokio::test]
async fn a_link_planted_in_the_project_during_the_run_is_never_written_through() {
    let repo = form_and_schema_repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("schema.sql"), "-- tables\n").unwrap();
    let (project, target) = (repo.path().to_path_buf(), outside.path().to_path_buf());
    // While the dba writer works, `db/` becomes a link to a directory outside the project.
    let edit = json!({"path": "db/schema.sql", "oldString": "-- tables", "newString": "DROP TABLE users;"});
    let script = writer_then(Role::Dba, edit, move || {
        std::fs::remove_dir_all(project.join("db")).unwrap();
        std::os::unix::fs::symlink(&target, project.join("db")).unwrap();
    })
    .then(writers_script(vec![(
        Role::Frontend,
        "web/form.ts",
        "[]",
        "['email']",
    )]));
    let outcome = run_writers(&repo, script).await;

    let merges = merges(&outcome);
    let dba = merges.iter().find(|m| m.role == Role::Dba).unwrap();
    assert_eq!(dba.outcome, MergeOutcome::Failed, "{merges:?}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("schema.sql")).unwrap(),
        "-- tables\n",
        "the file behind the link is untouched"
    );
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = ['email'];\n"
    );
}

#[tokio::test]
async fn without_git_or_with_one_writer_the_run_goes_on_as_before_and_says_why() {
    let plain = TestRun::new(PROMPT)
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .file("web/form.ts", "export const fields = [];\n")
        .script(writers_script(vec![]).then(
            Script::new().when_fn(Matcher::any_support(), |call| {
                Reply::json(&worker_result_for(call, "looked"))
            }),
        ))
        .run()
        .await;
    let warnings: Vec<&str> = plain
        .journal
        .of_type::<Warning>()
        .iter()
        .map(|w| w.message.as_str())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("writers not parallel:") && w.contains("not a git repository")),
        "{warnings:?}"
    );
    assert!(merges(&plain).is_empty());
    assert_eq!(plain.report.model_summary, ANSWER);

    let read_only = TestRun::new(PROMPT)
        .git_repo()
        .brain(BrainConfig::per_role().parallel_writers())
        .file("web/form.ts", "export const fields = [];\n")
        .script(writers_script(vec![]).then(
            Script::new().when_fn(Matcher::any_support(), |call| {
                Reply::json(&worker_result_for(call, "looked"))
            }),
        ))
        .run()
        .await;
    let said = read_only
        .journal
        .of_type::<Warning>()
        .iter()
        .any(|w| w.message.contains("this run may not change files"));
    assert!(said);
    assert_eq!(
        read(read_only.project(), "web/form.ts"),
        "export const fields = [];\n"
    );
}

/// `braincode undo --writer`: one writer's merge is taken back alone (the other writer's file
/// stays), the same writer twice is refused as done, an unknown writer is named with the
/// run's writers, and the whole run's undo afterwards takes back the rest only.
#[tokio::test]
async fn one_writer_is_undone_alone_then_the_rest_of_the_run() {
    use braincode_runtime::BlobStore;
    use braincode_runtime::undo::{self, UndoError};

    let repo = form_and_schema_repo();
    let outcome = run_writers(
        &repo,
        writers_script(vec![
            (Role::Frontend, "web/form.ts", "[]", "['email']"),
            (
                Role::Dba,
                "db/schema.sql",
                "-- tables",
                "CREATE TABLE users (email TEXT);",
            ),
        ]),
    )
    .await;
    let project = repo.path();
    assert_eq!(merges(&outcome).len(), 2, "{:?}", outcome.report.warnings);
    let store = BlobStore::new(
        outcome.fixtures.home.path(),
        outcome.report.session_id.as_str(),
    );
    let mut entries = outcome.journal.entries().to_vec();

    // By role: the frontend writer's file goes back to the commit; the dba's stays merged.
    let plan = undo::plan_writer(&entries, None, "frontend").unwrap();
    let writer = plan.writer.clone().unwrap();
    assert_eq!(writer.role, Role::Frontend);
    let paths: Vec<&str> = plan.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["web/form.ts"]);
    assert!(undo::check(&plan).is_empty(), "{:?}", undo::check(&plan));
    let done = undo::apply(&plan, &store).unwrap();
    assert_eq!(read(project, "web/form.ts"), "export const fields = [];\n");
    assert_eq!(
        read(project, "db/schema.sql"),
        "CREATE TABLE users (email TEXT);\n"
    );
    // What `braincode undo` journals.
    entries.push(braincode_protocol::JournalEntry::new(
        0,
        braincode_protocol::Record::Undo(braincode_protocol::UndoRecord {
            run_id: plan.run_id.clone(),
            writer: Some(writer.context_id.clone()),
            files: done,
        }),
    ));

    // The same writer again, by its context id: already undone.
    let again = undo::plan_writer(&entries, Some(&plan.run_id), &writer.context_id).unwrap();
    assert!(again.already_undone);
    // A writer the run did not have: the error names the ones it had.
    let err = undo::plan_writer(&entries, Some(&plan.run_id), "security").unwrap_err();
    assert!(
        matches!(&err, UndoError::NoSuchWriter { writers, .. } if writers.contains("dba") && writers.contains("frontend")),
        "{err}"
    );

    // The whole run now: only what is left (the dba's merge), not the undone writer's file.
    let rest = undo::plan(&entries, None).unwrap();
    assert!(!rest.already_undone);
    let paths: Vec<&str> = rest.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["db/schema.sql"]);
    assert!(undo::check(&rest).is_empty(), "{:?}", undo::check(&rest));
    undo::apply(&rest, &store).unwrap();
    assert_eq!(read(project, "db/schema.sql"), "-- tables\n");
}

/// A run makes its writers' worktrees all at once: each one holds the whole snapshot (the
/// user's uncommitted file included) without a file of it on disk until one is used, none
/// fails for being made beside another, and all go.
#[tokio::test]
async fn worktrees_made_at_once_each_hold_the_snapshot() {
    use braincode_runtime::WriterWorktrees;
    use braincode_tools::LazyFiles;
    let repo = form_and_schema_repo();
    for n in 0..40 {
        repo.write(
            &format!("src/m{n}.rs"),
            &format!("pub const N: u32 = {n};\n"),
        );
    }
    // A tracked file `.gitignore` matches is the project's all the same.
    repo.write(".gitignore", "*.log\n");
    repo.write("keep.log", "tracked\n");
    let forced = std::process::Command::new("git")
        .args(["add", "-f", "keep.log"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(forced.success());
    repo.commit("more files");
    repo.write("NOTES.md", "not committed\n");
    let home = tempfile::tempdir().unwrap();
    for round in 0..10 {
        let worktrees = WriterWorktrees::start(repo.path(), home.path(), &format!("run-{round}"))
            .await
            .unwrap();
        let made = futures::future::join_all((0..8).map(|n| {
            let worktrees = &worktrees;
            async move { worktrees.add(&format!("writer-{n}")).await }
        }))
        .await;
        for tree in &made {
            let tree = tree
                .as_ref()
                .unwrap_or_else(|why| panic!("round {round}: {why}"));
            let root = tree.path();
            let on_disk: Vec<_> = std::fs::read_dir(root)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .collect();
            assert_eq!(on_disk, [".git"], "a new worktree writes no project file");
            let wanted = ["NOTES.md", "src/m39.rs", "web/form.ts", "keep.log"].map(String::from);
            let pending = tree.pending().await.unwrap();
            assert_eq!(pending.len(), 46, "{pending:?}");
            let contents = tree.read_pending(&wanted).await.unwrap();
            assert_eq!(contents["NOTES.md"], b"not committed\n");
            assert_eq!(contents["src/m39.rs"], b"pub const N: u32 = 39;\n");
            assert_eq!(contents["keep.log"], b"tracked\n");
            tree.materialize(&wanted[1..3]).await.unwrap();
            assert_eq!(read(root, "src/m39.rs"), "pub const N: u32 = 39;\n");
            assert_eq!(read(root, "web/form.ts"), "export const fields = [];\n");
            assert!(!root.join("NOTES.md").exists());
            assert_eq!(tree.pending().await.unwrap().len(), 44);
            // What a write cut by a kill leaves is nothing the writer made.
            std::fs::write(root.join("web/.form.ts.braincode-99-1.tmp"), "half").unwrap();
            let changed = tree.changed_files().await.unwrap();
            assert!(
                changed.is_empty(),
                "a new worktree has no change: {changed:?}"
            );
        }
        worktrees.remove_all().await;
        assert_no_worktree_left(repo.path());
    }
}
