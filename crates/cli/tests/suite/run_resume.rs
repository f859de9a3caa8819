//! Crash-resume: a multi-worker run killed with SIGKILL at many points, then `braincode run
//! --resume`. Every resumed run ends with one answer, every journal stays readable, and the
//! requests the server gets prove that workers which had finished were not run again.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::run_harness::{
    self, braincode, configure, journal, repo, review_reply, spawn_braincode,
};
use braincode_test_support::{Matcher, RecordedRequest, Script, ScriptedServer, TempHome};
use serde_json::Value;

const PROMPT: &str = "Build a login page in React, a backend auth API in the server, a database \
migration for the users table, and check the security of the session tokens";

/// Support workers (backend, dba, security), the primary (frontend) and the review all answer
/// after a delay, so a kill lands in the middle of something.
async fn slow_server() -> ScriptedServer {
    let delay = Duration::from_millis(120);
    let worker = |summary: &str| run_harness::worker_reply(summary).delayed(delay);
    ScriptedServer::start(
        Script::new()
            .always(Matcher::model("security"), worker("tokens are signed"))
            .always(
                Matcher::model("review"),
                review_reply("approved").delayed(delay),
            )
            .always(
                Matcher::model("backend"),
                // backend, dba (support) and frontend (primary) share this model: a worker
                // result is also a fine primary answer.
                worker("the API and the migration are planned"),
            ),
    )
    .await
}

/// Requests of support worker `role` among `requests` (its handoff names the role).
fn worker_requests(requests: &[String], role: &str) -> usize {
    let marker = format!("\"agentRole\": \"{role}\"");
    requests
        .iter()
        .filter(|text| text.contains("Run this isolated worker handoff") && text.contains(&marker))
        .count()
}

/// Support roles whose `worker_end` says they completed, in the first run of `records`.
fn finished_support(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .filter(|r| {
            r["type"] == "worker_end"
                && r["phase"] == "support"
                && r["result"]["progress"]["status"] == "completed"
        })
        .map(|r| r["worker"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_runs_resume_without_running_finished_workers_again() {
    let server = slow_server().await;
    let project = repo();
    // A simple LCG: the kill points are spread over the run with some jitter; the seed is
    // printed so a failure can be reproduced.
    let mut seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("kill-point seed {seed}");
    let mut resumed = 0;
    for point in 0..50u64 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let kill_after = Duration::from_millis(point * 14 + (seed >> 33) % 14);
        let home = TempHome::new();
        configure(&home, &server, &[], &[]);
        let args = ["run", "--json", "--heuristic", "--mode", "radical", PROMPT];
        let mut child = spawn_braincode(&home, project.path(), &args);
        tokio::time::sleep(kill_after).await;
        child.start_kill().unwrap();
        let _ = child.wait().await;

        let sessions: Vec<_> = std::fs::read_dir(home.path().join("sessions"))
            .map(|dir| dir.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        let Some(path) = sessions.first() else {
            // Killed before the journal existed: nothing to resume.
            continue;
        };
        let session = path.file_stem().unwrap().to_string_lossy().into_owned();
        // The journal is readable whatever the kill interrupted.
        let show = braincode(&home, project.path(), &["sessions", "show", &session]).await;
        assert_eq!(show.code, 0, "{}\n{}", show.stdout, show.stderr);
        let crashed = journal(&home, &session);
        if !crashed.iter().any(|r| r["type"] == "run_start") {
            // Killed before the run's first record: there is nothing to resume, and it says so.
            let out = braincode(
                &home,
                project.path(),
                &["run", "--json", "--resume", &session],
            )
            .await;
            assert_eq!(out.code, 1, "{}", out.stderr);
            assert!(out.stderr.contains("has no run yet"), "{}", out.stderr);
            continue;
        }
        let answered = crashed.iter().any(|r| {
            r["type"] == "run_end" || (r["type"] == "run_error" && !r["status"].is_null())
        });
        let before = server.chat_requests().len();
        let out = braincode(
            &home,
            project.path(),
            &["run", "--json", "--resume", &session],
        )
        .await;
        if answered {
            assert_eq!(out.code, 1, "a finished run is not resumed: {}", out.stderr);
            assert!(out.stderr.contains("already ended"), "{}", out.stderr);
            continue;
        }
        resumed += 1;
        assert!(
            matches!(out.code, 0 | 3 | 6),
            "kill after {kill_after:?}: {}\n{}",
            out.stderr,
            out.stdout
        );
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        assert!(!report["modelSummary"].as_str().unwrap().trim().is_empty());
        // One answer: the resumed run ends with exactly one terminal record, last.
        let records = journal(&home, &session);
        let resume_start = records
            .iter()
            .rposition(|r| r["type"] == "run_start")
            .unwrap();
        assert!(records[resume_start]["resumeOf"].is_string());
        let run = &records[resume_start..];
        let terminals = run
            .iter()
            .filter(|r| {
                r["type"] == "run_end" || (r["type"] == "run_error" && !r["status"].is_null())
            })
            .count();
        assert_eq!(terminals, 1, "kill after {kill_after:?}");
        assert_eq!(run.last().unwrap()["type"], "run_end");
        // Finished workers were not asked again.
        let after: Vec<String> = server.chat_requests()[before..]
            .iter()
            .map(RecordedRequest::all_text)
            .collect();
        for role in finished_support(&crashed) {
            assert_eq!(
                worker_requests(&after, &role),
                0,
                "kill after {kill_after:?}: the {role} worker had finished and was run again"
            );
        }
    }
    assert!(resumed > 0, "no kill point left a run to resume");
}

/// A run killed while a `shell` call runs (its start journaled, the command's effect done,
/// its end not journaled): the resumed run does not run the command a second time, tells the
/// model it may have run, and the report says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_interrupted_after_it_started_is_not_run_again_on_resume() {
    use braincode_test_support::Reply;
    use serde_json::json;
    let project = repo();
    let counter = project.path().join("counter.txt");
    let server = ScriptedServer::start(
        Script::new()
            .when(
                Matcher::tool_offered("shell"),
                [
                    Reply::tool_call(
                        "shell",
                        json!({"command": "echo ran >> counter.txt; sleep 5"}),
                    ),
                    Reply::text("done"),
                ],
            )
            .always(Matcher::model("any"), Reply::text("ok")),
    )
    .await;
    let home = TempHome::new();
    run_harness::configure_one_model(&home, &server);
    let args = [
        "run",
        "--json",
        "--heuristic",
        "--yes",
        "fix the failing build script in src/main.rs",
    ];
    let mut child = spawn_braincode(&home, project.path(), &args);
    let started = std::time::Instant::now();
    while !counter.exists() && started.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(counter.exists(), "the command never ran");
    child.start_kill().unwrap();
    let _ = child.wait().await;
    let session = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
        .next()
        .unwrap();
    let crashed = journal(&home, &session);
    assert!(
        crashed
            .iter()
            .any(|r| r["type"] == "tool_execution_summary" && r["stage"] == "start"),
        "the kill must land after the call's start"
    );

    // A permission flag other than the run's own is refused; its own is accepted.
    let other = braincode(
        &home,
        project.path(),
        &["run", "--json", "--allow-edits", "--resume", &session],
    )
    .await;
    assert_ne!(other.code, 0, "{}", other.stderr);
    assert!(
        other.stderr.contains("started with --yes"),
        "{}",
        other.stderr
    );
    let out = braincode(
        &home,
        project.path(),
        &["run", "--json", "--yes", "--resume", &session],
    )
    .await;
    assert!(
        matches!(out.code, 0 | 3 | 6),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap(),
        "ran\n",
        "the command ran a second time on resume"
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        report["warnings"]
            .to_string()
            .contains("may have run before the interruption"),
        "{report:#}"
    );
    let told = server
        .chat_requests()
        .iter()
        .any(|r| r.body.to_string().contains("may have run already"));
    assert!(told, "the model was not told the command may have run");
}

/// A run whose journal is cut by a full disk: the file-size limit (`ulimit -f`, with SIGXFSZ
/// ignored, so writes past it fail with EFBIG as on a full disk) stops its journal partway.
/// The next run of the session closes it with a recovery record and says so; after that later
/// run has ended, `run --resume` still takes up the cut run, not the last one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cut_by_a_full_disk_is_closed_on_the_next_open_and_stays_resumable() {
    use run_harness::{configure_one_model, hello_server};
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();
    let first = braincode(
        &home,
        repo.path(),
        &["run", "--json", "--heuristic", "say hello"],
    )
    .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let report: Value = serde_json::from_str(&first.stdout).unwrap();
    let session = report["sessionId"].as_str().unwrap().to_string();
    let path = run_harness::journal_path(&home, &session);
    let size = std::fs::metadata(&path).unwrap().len();

    // The second run may add ~1 KB to the journal before the "disk" is full.
    let script = format!(
        "trap '' XFSZ; ulimit -f {}; exec \"$0\" \"$@\"",
        (size + 1024) / 512 + 1
    );
    let binary = env!("CARGO_BIN_EXE_braincode");
    let mut shell = tokio::process::Command::new("sh");
    shell
        .args([
            "-c",
            &script,
            binary,
            "run",
            "--json",
            "--heuristic",
            "--session",
            &session,
        ])
        .arg("say hello again")
        .current_dir(repo.path())
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY");
    let out = shell.output().await.unwrap();
    let cut_report = String::from_utf8_lossy(&out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("could not be written")
            || cut_report.contains("could not be written"),
        "{cut_report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The journal's last line is torn: read what parses.
    let readable = |home: &TempHome| -> Vec<Value> {
        std::fs::read_to_string(run_harness::journal_path(home, &session))
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let records = readable(&home);
    let last_start = records
        .iter()
        .rposition(|r| r["type"] == "run_start")
        .unwrap();
    let cut_run = records[last_start]["runId"].as_str().unwrap().to_string();
    assert!(
        !records[last_start..]
            .iter()
            .any(|r| r["type"] == "run_end" || !r["status"].is_null()),
        "the cut run kept a closing record: {records:#?}"
    );

    // The next run of the session closes the cut one, before its own start, and says so.
    let third = braincode(
        &home,
        repo.path(),
        &["run", "--heuristic", "--session", &session, "thanks"],
    )
    .await;
    assert_eq!(third.code, 0, "{}\n{}", third.stderr, third.stdout);
    assert!(
        third.stderr.contains("had no closing record"),
        "{}\n{}",
        third.stderr,
        third.stdout
    );
    let records = readable(&home);
    let starts: Vec<usize> = (0..records.len())
        .filter(|&i| records[i]["type"] == "run_start")
        .collect();
    assert_eq!(starts.len(), 3);
    let closing = &records[starts[2] - 1];
    assert_eq!(closing["type"], "run_error", "{closing}");
    assert_eq!(closing["status"], "aborted");
    assert!(closing["error"].as_str().unwrap().contains(&cut_run));
    let listed = braincode(&home, repo.path(), &["sessions", "show", &session]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);

    // The last run answered; `--resume` takes up the cut one.
    let resumed = braincode(&home, repo.path(), &["run", "--json", "--resume", &session]).await;
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stderr, resumed.stdout);
    let records = readable(&home);
    let start = records.iter().rfind(|r| r["type"] == "run_start").unwrap();
    assert_eq!(
        start["resumeOf"].as_str(),
        Some(cut_run.as_str()),
        "{start}"
    );
    assert_eq!(records.last().unwrap()["type"], "run_end");
}
