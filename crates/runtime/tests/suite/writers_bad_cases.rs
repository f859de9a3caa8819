//! The bad cases of parallel writers, end to end with scripted models and real git
//! repositories: a writer that fails after editing contributes nothing and is named; two
//! writers creating the same new file, a binary file changed on both sides, and a rename on
//! one side with an edit on the other are conflicts; a conflict the primary leaves alone
//! leaves the project as it was before that writer, its patch saved and its path given.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::suite::writers::{assert_no_worktree_left, merges, read, run_writers as run};
use crate::support::{
    Matcher, Reply, Script, TestOutcome, review_json, router_decision_json, worker_result_for,
};
use braincode_protocol::{MergeOutcome, ReviewVerdict, Role};
use braincode_test_support::TempRepo;
use serde_json::{Value, json};

const ANSWER: &str = "Done; see the merges.";

/// Router → backend primary, frontend and dba support writers (merged in that order); each
/// writer makes its one tool call, then reports; the primary answers without touching
/// anything (it resolves no conflict).
fn one_call_each(frontend: (&'static str, Value), dba: (&'static str, Value)) -> Script {
    let mut script = Script::new().always(
        Matcher::router(),
        Reply::json(&router_decision_json(
            Role::Backend,
            &[Role::Frontend, Role::Dba],
        )),
    );
    for (role, (tool, arguments)) in [(Role::Frontend, frontend), (Role::Dba, dba)] {
        script = script.when_fn(Matcher::support(role), move |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, &format!("{role} did its part")))
            } else {
                Reply::tool_call(tool, arguments.clone())
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

fn shell(command: &str) -> (&'static str, Value) {
    ("shell", json!({ "command": command }))
}

fn repo_with(files: &[(&str, &[u8])]) -> TempRepo {
    let repo = TempRepo::new();
    for (path, bytes) in files {
        let full = repo.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, bytes).unwrap();
    }
    repo.commit("start");
    repo
}

/// The first writer merged clean, the second is a conflict whose file has `status`, its
/// patch saved (holding `in_patch`) and named in the report.
fn clean_then_conflict(outcome: &TestOutcome, status: &str, in_patch: &str) {
    let merges = merges(outcome);
    let outcomes: Vec<(Role, MergeOutcome)> = merges.iter().map(|m| (m.role, m.outcome)).collect();
    assert_eq!(
        outcomes,
        [
            (Role::Frontend, MergeOutcome::Clean),
            (Role::Dba, MergeOutcome::Conflict)
        ],
        "{merges:?}"
    );
    let conflict = merges[1];
    assert!(
        conflict.files.iter().any(|f| f.status == status),
        "{conflict:?}"
    );
    let patch = conflict.patch_path.as_deref().expect("its patch is saved");
    let saved = std::fs::read_to_string(patch).unwrap();
    assert!(saved.contains(in_patch), "{saved}");
    let reported = &outcome.report.merges[1];
    assert_eq!(reported.patch_path.as_deref(), Some(patch));
    assert_no_worktree_left(outcome.fixtures.project.path());
}

#[tokio::test]
async fn a_writer_that_fails_after_editing_contributes_nothing_and_is_named() {
    let repo = repo_with(&[
        ("web/form.ts", b"export const fields = [];\n"),
        ("db/schema.sql", b"-- tables\n"),
    ]);
    let script = Script::new()
        .when_fn(Matcher::support(Role::Frontend), |call| {
            if call.is_tool_turn() {
                Reply::http_error(400, r#"{"error":{"message":"bad request"}}"#)
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": "web/form.ts", "oldString": "[]", "newString": "['half']"}),
                )
            }
        })
        .then(one_call_each(
            shell("true"),
            (
                "edit_file",
                json!({"path": "db/schema.sql", "oldString": "-- tables", "newString": "CREATE TABLE t (x INT);"}),
            ),
        ));
    let outcome = run(&repo, script).await;

    let merges = merges(&outcome);
    let frontend = merges.iter().find(|m| m.role == Role::Frontend).unwrap();
    assert_eq!(frontend.outcome, MergeOutcome::Failed, "{frontend:?}");
    assert!(
        (frontend.reason.as_deref().unwrap_or_default()).contains("did not complete"),
        "{frontend:?}"
    );
    // Its half-made edit never reaches the project; the other writer's does.
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = [];\n"
    );
    assert_eq!(
        read(repo.path(), "db/schema.sql"),
        "CREATE TABLE t (x INT);\n"
    );
    // The report names it.
    assert!(
        (outcome.report.warnings.iter()).any(|w| w.contains("frontend")),
        "{:?}",
        outcome.report.warnings
    );
    assert!(
        (outcome.report.merges.iter())
            .any(|m| m.role == Role::Frontend && m.outcome == MergeOutcome::Failed)
    );
    assert_no_worktree_left(repo.path());
}

#[tokio::test]
async fn two_writers_creating_the_same_new_file_and_an_unresolved_conflict_leaves_the_first() {
    let repo = repo_with(&[("README.md", b"project\n")]);
    let outcome = run(
        &repo,
        one_call_each(
            shell("mkdir -p src && printf 'pub fn signup() {}\\n' > src/new.rs"),
            shell("mkdir -p src && printf 'pub fn users() {}\\n' > src/new.rs"),
        ),
    )
    .await;
    clean_then_conflict(&outcome, "conflict", "pub fn users() {}");
    // The primary resolved nothing: the project is as the first writer left it.
    assert_eq!(read(repo.path(), "src/new.rs"), "pub fn signup() {}\n");
}

#[tokio::test]
async fn a_binary_file_changed_by_both_writers_is_a_conflict() {
    let repo = repo_with(&[("assets/logo.bin", b"\x00\x01start\x00")]);
    let outcome = run(
        &repo,
        one_call_each(
            shell("printf '\\000\\002front\\000' > assets/logo.bin"),
            shell("printf '\\000\\003dba\\000' > assets/logo.bin"),
        ),
    )
    .await;
    clean_then_conflict(&outcome, "binary_conflict", "assets/logo.bin");
    assert_eq!(
        std::fs::read(repo.path().join("assets/logo.bin")).unwrap(),
        b"\x00\x02front\x00"
    );
}

#[tokio::test]
async fn a_rename_on_one_side_and_an_edit_on_the_other_is_a_conflict() {
    let repo = repo_with(&[("src/old.rs", b"pub fn f() {}\n")]);
    let outcome = run(
        &repo,
        one_call_each(
            shell("mv src/old.rs src/new.rs"),
            (
                "edit_file",
                json!({"path": "src/old.rs", "oldString": "{}", "newString": "{ edited() }"}),
            ),
        ),
    )
    .await;
    clean_then_conflict(&outcome, "deleted_on_one_side", "edited()");
    // The rename landed; the edit of the file it moved did not come back as a stray file.
    assert_eq!(read(repo.path(), "src/new.rs"), "pub fn f() {}\n");
    assert!(!repo.path().join("src/old.rs").exists());
}
