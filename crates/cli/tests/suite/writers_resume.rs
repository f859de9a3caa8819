//! Parallel writers killed with SIGKILL, then `braincode run --resume`: killed while a writer
//! works, killed after the merge-back, and killed at points spread over a whole run. Every
//! resumed run ends with one answer; each writer's edit is in the project exactly once (never
//! lost, never merged twice); what the journal has of a writer (its model replies, its tool
//! results) is not asked of the model or run again; and no worktree is left behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::run_harness::{command, configure_writers, journal, review_reply, spawn_braincode};
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, RecordedRequest, Reply, Script, ScriptedServer, TempHome, TempRepo,
    router_decision_json, worker_result_for,
};
use serde_json::{Value, json};

const PROMPT: &str = "Add the signup form field and its table";
const ANSWER: &str = "Signup is in: the form field and the table.";
/// How long a held reply waits: longer than any test runs, so only the kill ends it.
const HELD: Duration = Duration::from_secs(120);
/// A guard against a hung run, never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(90);

/// The project after both writers: each edit once.
const FORM: &str = "export const fields = ['email'];\n";
const SCHEMA: &str = "-- tables\nCREATE TABLE users (email TEXT);\n";

/// Which replies are held (answered only after [`HELD`]) while the first run is killed.
#[derive(Clone, Default)]
struct Holds {
    /// The dba writer's result (its edit is done by then).
    dba_result: Arc<AtomicBool>,
    /// The primary's answer (both merges are done by then).
    primary: Arc<AtomicBool>,
}

fn held(reply: Reply, hold: &AtomicBool) -> Reply {
    if hold.load(Ordering::SeqCst) {
        reply.delayed(HELD)
    } else {
        reply
    }
}

/// Router → backend primary with frontend and dba support writers; each writer edits its
/// file (the dba's edit adds a line, so an edit applied twice would show), then reports; the
/// reviewer approves; the primary answers.
fn writers_script(holds: &Holds) -> Script {
    let mut script = Script::new().always(
        Matcher::router(),
        Reply::json(&router_decision_json(
            Role::Backend,
            &[Role::Frontend, Role::Dba],
        )),
    );
    for (role, file, old, new) in [
        (Role::Frontend, "web/form.ts", "[]", "['email']"),
        (
            Role::Dba,
            "db/schema.sql",
            "-- tables",
            "-- tables\nCREATE TABLE users (email TEXT);",
        ),
    ] {
        let hold = holds.dba_result.clone();
        script = script.when_fn(Matcher::support(role), move |call| {
            if call.is_tool_turn() {
                let result =
                    Reply::json(&worker_result_for(call, &format!("{role} edited {file}")));
                match role {
                    Role::Dba => held(result, &hold),
                    _ => result,
                }
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": file, "oldString": old, "newString": new}),
                )
            }
        });
    }
    let hold = holds.primary.clone();
    script
        .always(Matcher::review(), review_reply("approved"))
        .when_fn(Matcher::primary(), move |_| {
            held(Reply::text(ANSWER), &hold)
        })
}

/// A committed project with the two files the writers edit.
fn project() -> TempRepo {
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    repo.commit("start");
    repo
}

/// The only session of `home`.
fn session_of(home: &TempHome) -> Option<String> {
    let dir = std::fs::read_dir(home.path().join("sessions")).ok()?;
    dir.flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
}

/// The session's records, when its journal exists (torn last line left out).
fn records_so_far(home: &TempHome) -> Vec<Value> {
    let Some(session) = session_of(home) else {
        return Vec::new();
    };
    let path = home
        .path()
        .join("sessions")
        .join(format!("{session}.jsonl"));
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Starts the run and kills it (SIGKILL) once its journal satisfies `ready`, or after `after`.
async fn run_and_kill(
    home: &TempHome,
    project: &Path,
    ready: impl Fn(&[Value]) -> bool,
    after: Option<Duration>,
) -> Vec<Value> {
    let args = ["run", "--json", "--allow-edits", PROMPT];
    let mut child = spawn_braincode(home, project, &args);
    let started = Instant::now();
    loop {
        if after.is_some_and(|after| started.elapsed() >= after) || ready(&records_so_far(home)) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before the point it was to be killed at");
        }
        assert!(started.elapsed() < PATIENCE, "the kill point never came");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    child.start_kill().unwrap();
    let _ = child.wait().await;
    records_so_far(home)
}

/// `braincode run --json --allow-edits --resume <session>`: its exit code and report.
async fn resume(home: &TempHome, project: &Path, session: &str) -> (i32, String, String) {
    let args = ["run", "--json", "--allow-edits", "--resume", session];
    let out = tokio::time::timeout(PATIENCE, command(home, project, &args).output())
        .await
        .expect("the resumed run finished")
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Support worker requests of `role` among `requests`.
fn asked(requests: &[RecordedRequest], role: Role) -> usize {
    let matcher = Matcher::support(role);
    (requests.iter())
        .filter(|r| matcher.matches(&r.summary()))
        .count()
}

fn is_terminal(record: &Value) -> bool {
    record["type"] == "run_end" || (record["type"] == "run_error" && !record["status"].is_null())
}

fn of_type<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// The writers' files: role, path, content before, content after its edit.
const FILES: [(&str, &str, &str, &str); 2] = [
    (
        "frontend",
        "web/form.ts",
        "export const fields = [];\n",
        FORM,
    ),
    ("dba", "db/schema.sql", "-- tables\n", SCHEMA),
];

/// The roles whose edit the kill cut: its start journaled, not its end. The resumed run does
/// not run such a call again (it may have had its effect) and tells the writer to check;
/// this scripted writer does not, so its edit is in the worktree or not, as the kill left it.
fn cut_edits(crashed: &[Value]) -> Vec<String> {
    let calls = |stage: &str| -> Vec<(String, String)> {
        (crashed.iter())
            .filter(|r| r["type"] == "tool_execution_summary" && r["stage"] == stage)
            .map(|r| (r["role"].to_string(), r["toolCallId"].to_string()))
            .collect()
    };
    let ended = calls("end");
    (calls("start").into_iter())
        .filter(|call| !ended.contains(call))
        .map(|(role, _)| role.trim_matches('"').to_string())
        .collect()
}

/// What every resumed run must show, whatever the kill interrupted: one answer, each edit
/// once (an edit in `cut` at most once) with each writer merged once, no worktree left.
/// Returns the resumed run's records.
fn assert_resumed_well(
    repo: &TempRepo,
    home: &TempHome,
    session: &str,
    (code, stdout, stderr): &(i32, String, String),
    cut: &[String],
    what: &str,
) -> Vec<Value> {
    assert_eq!(*code, 0, "{what}: {stderr}\n{stdout}");
    let report: Value = serde_json::from_str(stdout).unwrap();
    assert_eq!(report["modelSummary"], ANSWER, "{what}");
    let records = journal(home, session);
    let start = (records.iter())
        .rposition(|r| r["type"] == "run_start")
        .unwrap();
    assert!(records[start]["resumeOf"].is_string(), "{what}");
    let run = records[start..].to_vec();
    assert_eq!(
        run.iter().filter(|r| is_terminal(r)).count(),
        1,
        "{what}: one answer"
    );
    assert_eq!(run.last().unwrap()["type"], "run_end", "{what}");
    let warnings: Vec<&str> = (of_type(&run, "warning").into_iter())
        .map(|w| w["message"].as_str().unwrap())
        .collect();
    assert!(
        !warnings
            .iter()
            .any(|w| w.starts_with("writers not parallel")),
        "{what}: the resumed run's writers are parallel writers again: {warnings:?}"
    );
    // Each edit exactly once, each writer merged once over the whole session.
    let mut written = 0;
    for (role, path, before, after) in FILES {
        let now = repo.read(path);
        if cut.iter().any(|c| c == role) {
            assert!(now == before || now == after, "{what}: {path} is {now:?}");
            assert!(
                (warnings.iter()).any(|w| w.contains("may have run before the interruption")),
                "{what}: {warnings:?}"
            );
        } else {
            assert_eq!(now, after, "{what}");
        }
        written += usize::from(now == after);
    }
    let merges: Vec<(String, String)> = of_type(&run, "writer_merge")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(merges.len(), 2, "{what}: {merges:?}");
    assert!(
        (merges.iter()).all(|(role, o)| o == "clean" || o == "empty" && cut.contains(role)),
        "{what}: {merges:?}"
    );
    assert_eq!(report["merges"].as_array().unwrap().len(), 2, "{what}");
    let merge_writes = (records.iter())
        .filter(|r| r["type"] == "file_change" && r["toolName"] == "writer_merge")
        .count();
    // A merge the kill cut after it wrote a file and before it journaled the write finds the
    // file holding the writer's content: it is left as it is, not written again.
    let found_written = (of_type(&run, "writer_merge").iter())
        .flat_map(|m| m["files"].as_array().unwrap())
        .filter(|f| f["status"] == "already_in_project")
        .count();
    assert_eq!(
        merge_writes + found_written,
        written,
        "{what}: one merged write per file"
    );
    // Nothing of the writers is left.
    let left: Vec<_> = std::fs::read_dir(repo.path().join(".git/braincode-writers"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{what}: worktrees left behind: {left:?}");
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "{what}: {worktrees}"
    );
    run
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_while_a_writer_works_resumes_in_its_worktree() {
    let holds = Holds::default();
    holds.dba_result.store(true, Ordering::SeqCst);
    let server = ScriptedServer::start(writers_script(&holds)).await;
    let repo = project();
    let home = TempHome::new();
    configure_writers(&home, &server);

    // Killed once the frontend writer is done and the dba writer's edit is made (its result
    // is held).
    let crashed = run_and_kill(
        &home,
        repo.path(),
        |records| {
            let frontend_done = records
                .iter()
                .any(|r| r["type"] == "worker_end" && r["worker"] == "frontend");
            let dba_edited = records.iter().any(|r| {
                r["type"] == "tool_execution_summary" && r["stage"] == "end" && r["role"] == "dba"
            });
            frontend_done && dba_edited
        },
        None,
    )
    .await;
    assert!(of_type(&crashed, "writer_merge").is_empty());
    // The killed run left the dba's edit in its worktree, not in the project.
    let dba_worktree = (crashed.iter())
        .find(|r| r["type"] == "worker_start" && r["worker"] == "dba")
        .and_then(|r| r["worktree"].as_str())
        .unwrap()
        .to_string();
    assert!(
        std::fs::read_to_string(Path::new(&dba_worktree).join("db/schema.sql"))
            .unwrap()
            .contains("CREATE TABLE"),
    );
    assert_eq!(repo.read("db/schema.sql"), "-- tables\n");

    holds.dba_result.store(false, Ordering::SeqCst);
    let before = server.chat_requests().len();
    let session = session_of(&home).unwrap();
    let out = resume(&home, repo.path(), &session).await;
    let cut = cut_edits(&crashed);
    assert!(cut.is_empty(), "{cut:?}");
    let run = assert_resumed_well(
        &repo,
        &home,
        &session,
        &out,
        &cut,
        "killed while the dba works",
    );

    // What the journal had was not asked again: not the router, not the frontend writer, not
    // the dba's edit; the dba's held result is asked once, in the same worktree.
    let after = server.chat_requests()[before..].to_vec();
    let router = Matcher::router();
    assert_eq!(
        after
            .iter()
            .filter(|r| router.matches(&r.summary()))
            .count(),
        0
    );
    assert_eq!(asked(&after, Role::Frontend), 0);
    assert_eq!(asked(&after, Role::Dba), 1);
    let dba_start = (run.iter())
        .find(|r| r["type"] == "worker_start" && r["worker"] == "dba")
        .unwrap();
    assert_eq!(dba_start["worktree"], dba_worktree.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_after_its_merges_does_not_merge_again() {
    let holds = Holds::default();
    holds.primary.store(true, Ordering::SeqCst);
    let server = ScriptedServer::start(writers_script(&holds)).await;
    let repo = project();
    let home = TempHome::new();
    configure_writers(&home, &server);

    let crashed = run_and_kill(
        &home,
        repo.path(),
        |records| of_type(records, "writer_merge").len() == 2,
        None,
    )
    .await;
    assert_eq!(repo.read("db/schema.sql"), SCHEMA);

    holds.primary.store(false, Ordering::SeqCst);
    let before = server.chat_requests().len();
    let session = session_of(&home).unwrap();
    let out = resume(&home, repo.path(), &session).await;
    let run = assert_resumed_well(&repo, &home, &session, &out, &[], "killed after the merges");
    // The resumed run lists the merges the killed run made, as it made them.
    let merges = |records: &[Value]| -> Vec<Value> {
        (of_type(records, "writer_merge").into_iter())
            .map(|m| json!([m["contextId"], m["outcome"], m["files"], m["worktree"]]))
            .collect()
    };
    assert_eq!(merges(&run), merges(&crashed));
    let after = server.chat_requests()[before..].to_vec();
    assert_eq!(asked(&after, Role::Frontend), 0);
    assert_eq!(asked(&after, Role::Dba), 0);
}

/// Kill points spread over a whole run (measured once, unkilled): whatever each kill
/// interrupted — the plan, the writers, the merge-back, the primary — the resumed run ends
/// well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_killed_anywhere_resume_with_each_edit_once() {
    let holds = Holds::default();
    let server = ScriptedServer::start(writers_script(&holds)).await;
    let whole = {
        let repo = project();
        let home = TempHome::new();
        configure_writers(&home, &server);
        let started = Instant::now();
        let args = ["run", "--json", "--allow-edits", PROMPT];
        let out = command(&home, repo.path(), &args).output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(repo.read("db/schema.sql"), SCHEMA);
        started.elapsed()
    };
    let mut resumed = 0;
    for point in 1..8u32 {
        let kill_after = whole * point / 8;
        let repo = project();
        let home = TempHome::new();
        configure_writers(&home, &server);
        let args = ["run", "--json", "--allow-edits", PROMPT];
        let mut child = spawn_braincode(&home, repo.path(), &args);
        tokio::time::sleep(kill_after).await;
        child.start_kill().unwrap();
        let _ = child.wait().await;
        let crashed = records_so_far(&home);
        let Some(session) = session_of(&home) else {
            continue;
        };
        if !crashed.iter().any(|r| r["type"] == "run_start") || crashed.iter().any(is_terminal) {
            // Killed before the run began, or after it answered: nothing to resume.
            continue;
        }
        resumed += 1;
        let last = crashed.last().map(|r| r["type"].to_string());
        eprintln!("killed after {kill_after:?}, the journal's last record {last:?}");
        let out = resume(&home, repo.path(), &session).await;
        assert_resumed_well(
            &repo,
            &home,
            &session,
            &out,
            &cut_edits(&crashed),
            &format!("killed after {kill_after:?} of {whole:?}"),
        );
    }
    assert!(resumed > 0, "no kill point left a run to resume");
}
