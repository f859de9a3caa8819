//! Each parallel writer's checks run in its own worktree when it completes, before its merge:
//! the checks its changed files select (here a Makefile's `test`), in its sandbox, on its
//! worktree's files. Their outcome comes back on its `writer_merge` record; a failure is told
//! to the primary before it looks at the merged tree; what a check writes in the worktree is
//! never merged; an untrusted project's checks do not run there either, nor do they when the
//! project's `checks.json` says `inWriters: false`; a run cancelled while a writer's check
//! runs stops it, merges nothing and leaves no worktree directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use crate::suite::writers::{PROMPT, assert_no_worktree_left, merges, read, writers_script};
use crate::support::{BrainConfig, Matcher, Reply, Script, TestOutcome, TestRun};
use braincode_protocol::{CheckStatus, MergeOutcome, Role, WriterMerge};
use braincode_runtime::PermissionMode;
use braincode_test_support::TempRepo;

/// The project's check: says where it runs, leaves a log file beside it, and fails when the
/// schema drops a table.
const MAKEFILE: &str = "test:\n\t@pwd\n\t@echo ran > check.log\n\t@if grep -q DROP db/schema.sql; then echo 'DROP in db/schema.sql'; exit 1; fi\n";

fn repo_with_a_check() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    repo.write("Makefile", MAKEFILE);
    repo.write(".gitignore", "");
    repo.commit("start");
    repo
}

/// The frontend writer's edit passes the check; the dba writer's drops a table and fails it.
/// The primary's first prompt is kept in `seen`.
fn script(seen: Arc<Mutex<String>>) -> Script {
    Script::new()
        .when_fn(Matcher::primary(), move |call| {
            let mut seen = seen.lock().unwrap();
            if seen.is_empty() {
                *seen = call.first_user_text().to_string();
            }
            Reply::text("Done.")
        })
        .then(writers_script(vec![
            (Role::Frontend, "web/form.ts", "[]", "['email']"),
            (Role::Dba, "db/schema.sql", "-- tables", "DROP TABLE users;"),
        ]))
}

async fn run(repo: &TempRepo, trusted: bool, seen: Arc<Mutex<String>>) -> TestOutcome {
    let run = TestRun::new(PROMPT)
        .project_dir(repo.path())
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .script(script(seen));
    let run = if trusted { run.trusted() } else { run };
    run.run().await
}

fn merge_of(merges: &[&WriterMerge], role: Role) -> WriterMerge {
    (merges.iter().find(|m| m.role == role))
        .map(|m| (*m).clone())
        .unwrap_or_else(|| panic!("no merge of the {role} writer: {merges:?}"))
}

#[tokio::test]
async fn each_writer_runs_its_checks_in_its_worktree_before_its_merge() {
    let repo = repo_with_a_check();
    let seen = Arc::new(Mutex::new(String::new()));
    let outcome = run(&repo, true, seen.clone()).await;
    let merges = merges(&outcome);
    assert_eq!(merges.len(), 2, "{:?}", outcome.report.warnings);

    let frontend = merge_of(&merges, Role::Frontend);
    let checks = frontend
        .checks
        .as_ref()
        .expect("the frontend writer's checks");
    assert_eq!(checks.status, CheckStatus::Passed, "{checks:?}");
    assert_eq!(checks.results.len(), 1, "{checks:?}");
    // It ran in the writer's worktree, not in the project.
    let ran_in = checks.results[0].output_tail.trim().to_string();
    assert_eq!(
        std::fs::canonicalize(&ran_in).ok(),
        std::fs::canonicalize(&frontend.worktree).ok(),
        "the check ran in {ran_in}, the writer worked in {}",
        frontend.worktree
    );
    assert_ne!(
        std::fs::canonicalize(&ran_in).ok(),
        std::fs::canonicalize(repo.path()).ok()
    );

    // The dba writer's check saw its own worktree's schema, and failed on it.
    let dba = merge_of(&merges, Role::Dba);
    let checks = dba.checks.as_ref().expect("the dba writer's checks");
    assert_eq!(checks.status, CheckStatus::Failed, "{checks:?}");
    assert!(
        checks.results[0]
            .output_tail
            .contains("DROP in db/schema.sql"),
        "{checks:?}"
    );
    assert_eq!(
        dba.checks_phrase().as_deref(),
        Some(format!("checks failed: {}", checks.results[0].name).as_str())
    );

    // Both changes are merged all the same, and nothing the checks wrote in the worktrees.
    for merge in [&frontend, &dba] {
        assert_eq!(merge.outcome, MergeOutcome::Clean, "{merge:?}");
        let files: Vec<&str> = merge.files.iter().map(|f| f.path.as_str()).collect();
        assert!(!files.contains(&"check.log"), "{files:?}");
        assert_eq!(files.len(), 1, "{files:?}");
    }
    assert_eq!(
        read(repo.path(), "db/schema.sql"),
        "DROP TABLE users;\n",
        "the dba writer's change is merged"
    );
    // The primary heard of the failure, with the check's output, before it answered.
    let prompt = seen.lock().unwrap().clone();
    assert!(
        prompt.contains("checks FAILED in its own worktree"),
        "{prompt}"
    );
    assert!(prompt.contains("DROP in db/schema.sql"), "{prompt}");
    // The run's own checks then ran on the merged tree, as always.
    assert!(
        outcome.report.checks.is_some(),
        "the merged tree's checks: {:?}",
        outcome.report
    );
    assert_no_worktree_left(repo.path());
}

#[tokio::test]
async fn an_untrusted_projects_checks_do_not_run_in_a_writers_worktree() {
    let repo = repo_with_a_check();
    let seen = Arc::new(Mutex::new(String::new()));
    let outcome = run(&repo, false, seen.clone()).await;
    let merges = merges(&outcome);
    assert_eq!(merges.len(), 2, "{:?}", outcome.report.warnings);
    for merge in merges {
        let checks = merge.checks.as_ref().expect("the checks' summary");
        assert_eq!(checks.status, CheckStatus::Skipped, "{checks:?}");
        assert!(checks.results.is_empty(), "{checks:?}");
        let reason = checks.reason.as_deref().unwrap_or_default();
        assert!(reason.contains("trust"), "{reason}");
        assert_eq!(merge.outcome, MergeOutcome::Clean);
    }
    assert!(!repo.path().join("check.log").exists());
    // Had the dba writer's check run, it would have failed and the primary would be told.
    let prompt = seen.lock().unwrap().clone();
    assert!(!prompt.is_empty());
    assert!(!prompt.contains("checks FAILED"), "{prompt}");
    assert_no_worktree_left(repo.path());
}

#[tokio::test]
async fn checks_in_writers_off_runs_them_only_on_the_merged_tree() {
    let repo = repo_with_a_check();
    repo.write(".braincode/checks.json", r#"{"inWriters": false}"#);
    repo.commit("no checks in the writers' worktrees");
    let outcome = run(&repo, true, Arc::new(Mutex::new(String::new()))).await;
    let merges = merges(&outcome);
    assert_eq!(merges.len(), 2, "{:?}", outcome.report.warnings);
    assert!(merges.iter().all(|m| m.checks.is_none()), "{merges:?}");
    // The merged tree's checks ran, and failed on the dba writer's schema.
    let checks = outcome
        .report
        .checks
        .as_ref()
        .expect("the merged tree's checks");
    assert_eq!(checks.status, CheckStatus::Failed, "{checks:?}");
    assert_no_worktree_left(repo.path());
}

/// The command line of the writer's check that outlives any test (unique to this test).
const SLEEPER: &str = "sleep 47.0815";

/// Whether a writer's check has said it started (a file in its worktree).
fn check_started(project: &std::path::Path) -> bool {
    let Ok(writers) = std::fs::read_dir(project.join(".git/braincode-writers")) else {
        return false;
    };
    (writers.flatten())
        .filter_map(|run| std::fs::read_dir(run.path()).ok())
        .flat_map(Iterator::flatten)
        .any(|worktree| worktree.path().join("started").exists())
}

/// Whether a process runs [`SLEEPER`] (the check runs in its sandbox's own pid namespace: it
/// is found by its command line).
fn sleeper_alive() -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    (procs.flatten()).any(|p| {
        std::fs::read(p.path().join("cmdline"))
            .is_ok_and(|cmd| String::from_utf8_lossy(&cmd).replace('\0', " ").trim() == SLEEPER)
    })
}

#[tokio::test]
async fn cancelling_a_run_while_a_writer_runs_its_checks_stops_them_and_merges_nothing() {
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    // The check says it started (a file in the worktree), then outlives any test.
    repo.write(
        "Makefile",
        &format!("test:\n\t@touch started; exec {SLEEPER}\n"),
    );
    repo.commit("start");
    let run = TestRun::new(PROMPT)
        .project_dir(repo.path())
        .permission(PermissionMode::AllowEdits)
        .brain(BrainConfig::per_role().parallel_writers())
        .script(script(Arc::new(Mutex::new(String::new()))))
        .trusted()
        .start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if check_started(repo.path()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no writer's check started; records: {:?}",
            run.journal().snapshot().types()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(sleeper_alive(), "the check's process is not found");
    run.cancel("test cancelled");
    let outcome = run.finish().await;
    assert_eq!(
        outcome.report.status,
        braincode_protocol::FinalStatus::Aborted
    );
    // The check's process is gone with the run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while sleeper_alive() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        !sleeper_alive(),
        "the writer's check outlived the cancelled run"
    );
    // Nothing was merged: the project is as it was, and no worktree is left.
    assert!(merges(&outcome).is_empty(), "{:?}", merges(&outcome));
    assert_eq!(
        read(repo.path(), "web/form.ts"),
        "export const fields = [];\n"
    );
    assert_eq!(read(repo.path(), "db/schema.sql"), "-- tables\n");
    // The run stopped before its cleanup: its worktrees' directories went with it, and what
    // git still lists of them is prunable (the next run with writers prunes it).
    let writers = repo.path().join(".git/braincode-writers");
    let left: Vec<_> = std::fs::read_dir(&writers)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "worktrees left behind: {left:?}");
    let listed = repo.git(&["worktree", "list", "--porcelain"]);
    let extra: Vec<&str> = listed
        .split("\n\n")
        .skip(1)
        .filter(|e| !e.trim().is_empty())
        .collect();
    assert!(
        extra.iter().all(|entry| entry.contains("prunable")),
        "{listed}"
    );
}
