//! Where a parallel writer starts from: a downstream writer from its upstream writers'
//! change (carried into its worktree and committed there), and a project whose submodules a
//! worktree would have empty, which keeps writers out of worktrees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use crate::suite::writers::{
    ANSWER, assert_no_worktree_left, form_and_schema_repo, merges, read, run_writers,
    writers_script,
};
use crate::support::{
    Matcher, Reply, Script, review_json, router_decision_json, worker_result_for,
};
use braincode_protocol::{MergeOutcome, ReviewVerdict, Role, Warning};
use braincode_test_support::TempRepo;
use serde_json::json;

/// A project with a submodule (or a nested repository git records as one): a writer's worktree
/// would have its directory empty and lose what the writer wrote there, so writers run as
/// support workers, the warning names the submodule, and the submodule's files are untouched.
#[tokio::test]
async fn a_project_with_submodules_keeps_writers_out_of_worktrees_and_says_why() {
    let library = TempRepo::new();
    library.write("lib.ts", "export const version = 1;\n");
    library.commit("library");
    let repo = form_and_schema_repo();
    let added = std::process::Command::new("git")
        .args(["-c", "protocol.file.allow=always", "submodule", "add", "-q"])
        .arg(library.path())
        .arg("vendor/lib")
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    repo.commit("with a submodule");
    let outcome = run_writers(
        &repo,
        writers_script(vec![
            (Role::Frontend, "web/form.ts", "[]", "['email']"),
            (
                Role::Dba,
                "db/schema.sql",
                "-- tables",
                "CREATE TABLE t (x TEXT);",
            ),
        ]),
    )
    .await;
    let warnings: Vec<&str> = (outcome.journal.of_type::<Warning>().iter())
        .map(|w| w.message.as_str())
        .collect();
    assert!(
        warnings.iter().any(
            |w| w.starts_with("writers not parallel:") && w.contains("submodules (vendor/lib)")
        ),
        "{warnings:?}"
    );
    assert!(merges(&outcome).is_empty());
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_eq!(
        read(repo.path(), "vendor/lib/lib.ts"),
        "export const version = 1;\n"
    );
    assert_no_worktree_left(repo.path());
}

/// A downstream writer starts from its upstream writer's code: the dba writer (upstream of the
/// frontend one) adds `db/users.ts`; the frontend writer reads it in its own worktree before
/// it edits the form. Both merges are clean, and the frontend's merge writes only its own file.
#[tokio::test]
async fn a_downstream_writer_starts_from_its_upstream_writers_change() {
    let repo = form_and_schema_repo();
    let mut plan = router_decision_json(Role::Backend, &[Role::Dba, Role::Frontend]);
    plan["dependencies"] =
        json!([{"from": "todo-dba", "to": "todo-frontend", "reason": "the form uses the table"}]);
    let seen = Arc::new(Mutex::new(None::<String>));
    let seen_by_frontend = seen.clone();
    let script = Script::new()
        .always(Matcher::router(), Reply::json(&plan))
        .when_fn(Matcher::support(Role::Dba), |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, "dba added the users table"))
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": "db/users.ts", "content": "export const USERS = 'users';\n"}),
                )
            }
        })
        .when_fn(Matcher::support(Role::Frontend), move |call| {
            match call.tool_results().len() {
                0 => Reply::tool_call("read_file", json!({"path": "db/users.ts"})),
                1 => {
                    *seen_by_frontend.lock().unwrap() = Some(call.tool_results()[0].clone());
                    Reply::tool_call(
                        "edit_file",
                        json!({"path": "web/form.ts", "oldString": "[]", "newString": "[USERS]"}),
                    )
                }
                _ => Reply::json(&worker_result_for(call, "frontend edited the form")),
            }
        })
        .always(
            Matcher::review(),
            Reply::json(&review_json(ReviewVerdict::Approved)),
        )
        .always(Matcher::primary(), Reply::text(ANSWER));
    let outcome = run_writers(&repo, script).await;

    let read_by_frontend = seen.lock().unwrap().clone().unwrap_or_default();
    assert!(
        read_by_frontend.contains("export const USERS"),
        "the frontend writer did not see the dba writer's file: {read_by_frontend}"
    );
    let merged: Vec<(Role, MergeOutcome, Vec<String>)> = (merges(&outcome).into_iter())
        .map(|m| {
            let files = m.files.iter().map(|f| f.path.clone()).collect();
            (m.role, m.outcome, files)
        })
        .collect();
    assert_eq!(
        merged,
        vec![
            (
                Role::Dba,
                MergeOutcome::Clean,
                vec!["db/users.ts".to_string()]
            ),
            (
                Role::Frontend,
                MergeOutcome::Clean,
                vec!["web/form.ts".to_string()]
            ),
        ]
    );
    assert_eq!(
        read(repo.path(), "db/users.ts"),
        "export const USERS = 'users';\n"
    );
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = [USERS];\n"
    );
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_no_worktree_left(repo.path());
}
