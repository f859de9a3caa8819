//! A writer's worktree is checked out sparsely (no project file on disk until it is used), yet
//! the writer sees the whole project: `list_files` and `search_files` find the files not on
//! disk, `apply_patch` deletes one, and a command reads one (the tree is written out before a
//! command runs). Only what the writer changed is merged back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use crate::suite::writers::{ANSWER, assert_no_worktree_left, merges, read, run_writers};
use crate::support::{
    Matcher, Reply, Script, review_json, router_decision_json, worker_result_for,
};
use braincode_protocol::{MergeOutcome, ReviewVerdict, Role};
use braincode_test_support::TempRepo;
use serde_json::json;

#[tokio::test]
async fn a_writer_sees_the_whole_project_from_a_worktree_that_starts_empty() {
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    repo.write("lib/util.ts", "export const helper = 1;\n");
    repo.write("docs/old.md", "old docs\n");
    repo.write("bin/run.sh", "#!/bin/sh\necho run\n");
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(repo.path().join("bin/run.sh"), executable).unwrap();
    repo.commit("start");
    // The user's uncommitted edit reaches the writer's (empty) worktree too.
    repo.write("lib/util.ts", "export const helper = 2;\n");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let frontend_saw = seen.clone();
    let delete_docs = "--- a/docs/old.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-old docs\n";
    let script = Script::new()
        .always(
            Matcher::router(),
            Reply::json(&router_decision_json(
                Role::Backend,
                &[Role::Frontend, Role::Dba],
            )),
        )
        .when_fn(Matcher::support(Role::Frontend), move |call| {
            let results = call.tool_results();
            if let Some(last) = results.last() {
                frontend_saw.lock().unwrap().push(last.clone());
            }
            match results.len() {
                0 => Reply::tool_call("list_files", json!({})),
                1 => Reply::tool_call("search_files", json!({"query": "helper"})),
                2 => Reply::tool_call("list_files", json!({"directory": "lib"})),
                3 => Reply::tool_call("apply_patch", json!({"patch": delete_docs})),
                4 => Reply::tool_call(
                    "shell",
                    json!({"command": "cat lib/util.ts > web/copy.ts && test -x bin/run.sh && ls db"}),
                ),
                _ => Reply::json(&worker_result_for(call, "frontend copied the helper")),
            }
        })
        .when_fn(Matcher::support(Role::Dba), |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, "dba edited the schema"))
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": "db/schema.sql", "oldString": "-- tables", "newString": "CREATE TABLE t (x INT);"}),
                )
            }
        })
        .always(
            Matcher::review(),
            Reply::json(&review_json(ReviewVerdict::Approved)),
        )
        .always(Matcher::primary(), Reply::text(ANSWER));
    let outcome = run_writers(&repo, script).await;

    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 5, "{seen:?}");
    for file in [
        "bin/run.sh",
        "db/schema.sql",
        "docs/old.md",
        "lib/util.ts",
        "web/form.ts",
    ] {
        assert!(
            seen[0].contains(file),
            "list_files misses {file}: {}",
            seen[0]
        );
    }
    assert!(
        seen[1].contains("lib/util.ts:1:export const helper = 2;"),
        "search_files: {}",
        seen[1]
    );
    assert_eq!(seen[2].trim(), "lib/util.ts", "list_files lib");
    assert!(!seen[3].contains("failed"), "apply_patch: {}", seen[3]);
    assert!(seen[4].contains("schema.sql"), "shell: {}", seen[4]);

    let project = repo.path();
    let merges = merges(&outcome);
    assert_eq!(merges.len(), 2, "{:?}", outcome.journal.warnings());
    let about_writers: Vec<&str> = (outcome.journal.warnings().into_iter())
        .filter(|w| w.contains("writer"))
        .collect();
    assert!(about_writers.is_empty(), "{about_writers:?}");
    for merge in &merges {
        assert_eq!(merge.outcome, MergeOutcome::Clean, "{merge:?}");
    }
    let frontend = merges.iter().find(|m| m.role == Role::Frontend).unwrap();
    // The files written out for the command are not the writer's change.
    let files: Vec<(&str, &str)> = (frontend.files.iter())
        .map(|f| (f.path.as_str(), f.status.as_str()))
        .collect();
    assert_eq!(
        files,
        [("docs/old.md", "deleted"), ("web/copy.ts", "written")],
        "{frontend:?}"
    );
    assert!(!project.join("docs/old.md").exists());
    assert_eq!(read(project, "web/copy.ts"), "export const helper = 2;\n");
    assert_eq!(read(project, "db/schema.sql"), "CREATE TABLE t (x INT);\n");
    assert_eq!(read(project, "lib/util.ts"), "export const helper = 2;\n");
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_no_worktree_left(project);
}
