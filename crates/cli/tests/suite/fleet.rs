//! `braincode fleet` against a real `nats-server` (JetStream on, loopback, temporary store):
//! tasks spread over several worker processes, each answered once; a worker killed with
//! SIGKILL mid-task, its task redelivered and resumed from the journal stream; bad input of
//! every kind a clear error or a `failed` result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use crate::run_harness::{self, braincode, command, configure, review_reply};
use braincode_fleet::{Fleet, NatsOptions, TaskState, TaskStatus};
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, NatsServer, Reply, Script, ScriptedServer, TempHome, TempRepo, router_decision_json,
};
use serde_json::{Value, json};
use tokio::process::Child;

/// Every role answers at once, except what `delay` slows: the router plans a security
/// support worker and a backend primary; the review approves.
pub(super) async fn model_server(
    support_delay: Duration,
    primary_delay: Duration,
) -> ScriptedServer {
    ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[Role::Security])),
            )
            .always(
                Matcher::model("security"),
                run_harness::worker_reply("tokens are signed").delayed(support_delay),
            )
            .always(Matcher::model("review"), review_reply("approved"))
            .always(
                Matcher::model("backend"),
                Reply::text("The token check is fine.").delayed(primary_delay),
            ),
    )
    .await
}

/// Like [`model_server`], but the primary edits `src/token.rs` (tokens must be longer),
/// then answers after `answer_delay`.
pub(super) async fn editing_server(answer_delay: Duration) -> ScriptedServer {
    ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[Role::Security])),
            )
            .always(
                Matcher::model("security"),
                run_harness::worker_reply("tokens are signed"),
            )
            .always(Matcher::model("review"), review_reply("approved"))
            .when_fn(Matcher::model("backend"), move |call| {
                if call.is_tool_turn() {
                    Reply::text("Tokens now need 9 characters.").delayed(answer_delay)
                } else {
                    Reply::tool_call(
                        "edit_file",
                        json!({"path": "src/token.rs", "oldString": "!token.is_empty()", "newString": "token.len() > 8"}),
                    )
                }
            }),
    )
    .await
}

/// A worker "machine": its own home (keys, settings), configured for `server`.
pub(super) fn worker_home(server: &ScriptedServer) -> TempHome {
    let home = TempHome::new();
    configure(&home, server, &[], &[]);
    home
}

/// A worker process and the directory its clones go to (beside its home, never in it: runs
/// may not touch the home).
pub(super) struct Worker {
    child: Child,
    _work: tempfile::TempDir,
}

impl Worker {
    /// Where its task clones are made (`<dir>/<task id>`).
    pub(super) fn work_dir(&self) -> &Path {
        self._work.path()
    }

    /// Kills it outright (SIGKILL), as a crash would, and waits for it.
    pub(super) async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

pub(super) fn spawn_worker(home: &TempHome, nats: &str, name: &str, concurrency: u32) -> Worker {
    spawn_worker_with(home, nats, name, concurrency, &[])
}

/// A worker started with `extra` arguments (credentials).
pub(super) fn spawn_worker_with(
    home: &TempHome,
    nats: &str,
    name: &str,
    concurrency: u32,
    extra: &[&str],
) -> Worker {
    let work = tempfile::tempdir().unwrap();
    let concurrency = concurrency.to_string();
    let mut args = vec![
        "fleet",
        "worker",
        "--nats",
        nats,
        "--name",
        name,
        "--concurrency",
        &concurrency,
        "--work-dir",
        work.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let mut command = command(home, home.path(), &args);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit());
    Worker {
        child: command.spawn().unwrap(),
        _work: work,
    }
}

pub(super) async fn connect(url: &str) -> Fleet {
    Fleet::connect(&NatsOptions {
        url: url.to_string(),
        replicas: 1,
        ..NatsOptions::default()
    })
    .await
    .unwrap()
}

/// Waits until task `id` is over. A read that fails is tried again (a cluster that lost a
/// server answers no reads while it elects the task bucket's leader); the last state or
/// error is shown if the task does not end `within`.
pub(super) async fn wait_final(fleet: &Fleet, id: &str, within: Duration) -> TaskState {
    let deadline = Instant::now() + within;
    loop {
        let read = fleet.state(id).await;
        if let Ok(Some((state, _))) = &read
            && state.status.is_final()
        {
            return state.clone();
        }
        if Instant::now() > deadline {
            panic!("task {id} did not end within {within:?}: {read:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The journal records of `session` on the stream.
pub(super) async fn stream_journal(fleet: &Fleet, session: &str) -> Vec<Value> {
    braincode_fleet::journal::read(fleet, session)
        .await
        .unwrap()
        .iter()
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect()
}

pub(super) fn task_line(repo: &Path, prompt: &str) -> String {
    json!({"prompt": prompt, "repo": repo.display().to_string(), "brain": "test", "permission": "read-only"})
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tasks_over_three_workers_are_each_answered_once() {
    let nats = NatsServer::start();
    let server = model_server(Duration::ZERO, Duration::ZERO).await;
    let repo = run_harness::repo();
    let homes: Vec<TempHome> = (0..3).map(|_| worker_home(&server)).collect();
    let mut workers: Vec<Worker> = (homes.iter().enumerate())
        .map(|(n, home)| spawn_worker(home, &nats.url(), &format!("w{n}"), 2))
        .collect();
    // A fourth machine mirrors the fleet's journals as they are written.
    let mirror = TempHome::new();
    let mut follower = command(
        &mirror,
        mirror.path(),
        &["fleet", "sync", "--follow", "--nats", &nats.url()],
    )
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let submitter = TempHome::new();
    let tasks: Vec<String> = (0..20)
        .map(|n| task_line(repo.path(), &format!("task {n}: is the token check right?")))
        .collect();
    let file = submitter.path().join("tasks.jsonl");
    std::fs::write(&file, tasks.join("\n")).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(240),
        braincode(
            &submitter,
            submitter.path(),
            &[
                "fleet",
                "submit",
                "--nats",
                &nats.url(),
                "--file",
                file.to_str().unwrap(),
                "--wait",
                "--json",
            ],
        ),
    )
    .await
    .expect("20 tasks within 4 minutes");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let states: Vec<TaskState> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(states.len(), 20);
    let fleet = connect(&nats.url()).await;
    let mut by_worker = std::collections::BTreeMap::<String, usize>::new();
    for state in &states {
        assert_eq!(state.status, TaskStatus::Done, "{state:?}");
        // Read-only runs are not reviewed: the primary's answer is the run's.
        assert_eq!(state.run_status.as_deref(), Some("answered"), "{state:?}");
        assert!(
            state
                .answer
                .as_deref()
                .unwrap()
                .contains("token check is fine")
        );
        *by_worker.entry(state.worker.clone().unwrap()).or_default() += 1;
        // One answer: the session's journal on the stream has one run and one run_end.
        let records = stream_journal(&fleet, state.session.as_deref().unwrap()).await;
        let count = |kind: &str| records.iter().filter(|r| r["type"] == kind).count();
        assert_eq!(
            (count("run_start"), count("run_end")),
            (1, 1),
            "{}",
            state.id
        );
    }
    assert!(by_worker.len() >= 2, "the work was shared: {by_worker:?}");
    // Each prompt was answered by exactly one run (20 distinct prompts, 20 routers asked).
    let routed = server
        .chat_requests()
        .iter()
        .filter(|r| r.model() == Some("router"))
        .count();
    assert_eq!(routed, 20);

    // A fourth process, with a home of its own, reads a fleet run's journal.
    let reader = TempHome::new();
    let id = &states[7].id;
    let fetched = braincode(
        &reader,
        reader.path(),
        &["fleet", "fetch", id, "--journal", "--nats", &nats.url()],
    )
    .await;
    assert_eq!(fetched.code, 0, "{}", fetched.stderr);
    let session = states[7].session.clone().unwrap();
    let show = braincode(&reader, reader.path(), &["sessions", "show", &session]).await;
    assert_eq!(show.code, 0, "{}\n{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("task 7"), "{}", show.stdout);
    // Another machine sees every fleet session with `sessions list --nats`.
    let viewer = TempHome::new();
    let sessions = braincode(
        &viewer,
        viewer.path(),
        &[
            "sessions",
            "list",
            "--all",
            "--json",
            "--limit",
            "100",
            "--nats",
            &nats.url(),
        ],
    )
    .await;
    assert_eq!(sessions.code, 0, "{}", sessions.stderr);
    for state in &states {
        assert!(
            sessions.stdout.contains(state.session.as_deref().unwrap()),
            "{} is listed: {}",
            state.id,
            sessions.stdout
        );
    }
    let listed = braincode(
        &reader,
        reader.path(),
        &["fleet", "list", "--nats", &nats.url()],
    )
    .await;
    assert_eq!(
        listed
            .stdout
            .lines()
            .filter(|l| l.contains(" done "))
            .count(),
        20,
        "{}",
        listed.stdout
    );
    // The live mirror has every run, each ended, and `sessions list` shows them there.
    let deadline = Instant::now() + Duration::from_secs(30);
    for state in &states {
        let path = mirror
            .path()
            .join("sessions")
            .join(format!("{}.jsonl", state.session.as_deref().unwrap()));
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.contains("\"type\":\"run_end\"") {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} was not mirrored",
                path.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let _ = follower.start_kill();
    let listed = braincode(
        &mirror,
        mirror.path(),
        &["sessions", "list", "--all", "--json"],
    )
    .await;
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(20), "{listed}");
    for worker in &mut workers {
        worker.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_task_has_its_task_resumed_elsewhere_without_rerunning_finished_work() {
    let nats = NatsServer::start();
    // The support worker answers quickly; the primary takes long enough to be killed in.
    let server = model_server(Duration::from_millis(50), Duration::from_secs(3)).await;
    let repo = run_harness::repo();
    let (home_a, home_b) = (worker_home(&server), worker_home(&server));
    let fleet = connect(&nats.url()).await;
    let mut first = spawn_worker(&home_a, &nats.url(), "first", 1);
    let task: braincode_fleet::TaskSpec =
        serde_json::from_str(&task_line(repo.path(), "is the token check right?")).unwrap();
    let id = braincode_fleet::submit(&fleet, vec![task])
        .await
        .unwrap()
        .remove(0);

    // Wait until the stream holds the support worker's end, then kill the worker outright.
    let deadline = Instant::now() + Duration::from_secs(60);
    let session = loop {
        assert!(
            Instant::now() < deadline,
            "the support worker never finished"
        );
        if let Some((state, _)) = fleet.state(&id).await.unwrap()
            && let Some(session) = state.session
        {
            let records = stream_journal(&fleet, &session).await;
            if records
                .iter()
                .any(|r| r["type"] == "worker_end" && r["phase"] == "support")
            {
                break session;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    first.kill().await;
    let security_before = server
        .chat_requests()
        .iter()
        .filter(|r| r.model() == Some("security"))
        .count();
    assert_eq!(security_before, 1);

    let mut second = spawn_worker(&home_b, &nats.url(), "second", 1);
    let state = wait_final(&fleet, &id, Duration::from_secs(60)).await;
    assert_eq!(state.status, TaskStatus::Done, "{state:?}");
    assert_eq!(state.worker.as_deref(), Some("second"));
    assert_eq!(state.deliveries, 2);
    assert_eq!(
        state.session.as_deref(),
        Some(session.as_str()),
        "the same session went on"
    );
    // The finished support worker was not asked again; the journal has one answer.
    let security_after = server
        .chat_requests()
        .iter()
        .filter(|r| r.model() == Some("security"))
        .count();
    assert_eq!(security_after, 1, "the finished security worker ran again");
    let records = stream_journal(&fleet, &session).await;
    assert_eq!(records.iter().filter(|r| r["type"] == "run_end").count(), 1);
    let resumed = records
        .iter()
        .filter(|r| r["type"] == "run_start")
        .nth(1)
        .unwrap();
    assert!(resumed["resumeOf"].is_string(), "{resumed}");
    second.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error_or_a_failed_result_and_the_worker_keeps_serving() {
    let nats = NatsServer::start();
    let server = model_server(Duration::ZERO, Duration::ZERO).await;
    let repo = run_harness::repo();
    let home = worker_home(&server);
    let fleet = connect(&nats.url()).await;
    let mut worker = spawn_worker(&home, &nats.url(), "only", 1);

    // Not a task at all, published by hand.
    fleet
        .js
        .publish("braincode.tasks", "{\"prompt\": oops".into())
        .await
        .unwrap()
        .await
        .unwrap();
    // A repository that does not exist, then a ref it does not have.
    let missing = TempRepo::new().path().join("no-such-repo");
    let mut bad_repo: braincode_fleet::TaskSpec =
        serde_json::from_str(&task_line(&missing, "look")).unwrap();
    bad_repo.prompt = "look at it".into();
    let mut bad_ref: braincode_fleet::TaskSpec =
        serde_json::from_str(&task_line(repo.path(), "look")).unwrap();
    bad_ref.git_ref = Some("no-such-branch".into());
    let good: braincode_fleet::TaskSpec =
        serde_json::from_str(&task_line(repo.path(), "is the token check right?")).unwrap();
    let ids = braincode_fleet::submit(&fleet, vec![bad_repo, bad_ref, good])
        .await
        .unwrap();

    let failed = wait_final(&fleet, &ids[0], Duration::from_secs(60)).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    assert!(
        failed.error.as_deref().unwrap().contains("cannot clone"),
        "{failed:?}"
    );
    let failed = wait_final(&fleet, &ids[1], Duration::from_secs(60)).await;
    assert_eq!(failed.status, TaskStatus::Failed);
    assert!(
        failed.error.as_deref().unwrap().contains("no-such-branch"),
        "{failed:?}"
    );
    let done = wait_final(&fleet, &ids[2], Duration::from_secs(60)).await;
    assert_eq!(done.status, TaskStatus::Done, "{done:?}");
    let invalid = fleet.list().await.unwrap();
    let invalid = invalid
        .iter()
        .find(|s| s.id.starts_with("invalid-"))
        .expect("a result for the bad message");
    assert_eq!(invalid.status, TaskStatus::Failed);
    assert!(
        invalid.error.as_deref().unwrap().contains("is not a task"),
        "{invalid:?}"
    );

    // A submission that is not valid is refused before anything is queued.
    let submitter = TempHome::new();
    let file = submitter.path().join("tasks.jsonl");
    std::fs::write(
        &file,
        format!(
            "{}\n{{\"prompt\":\"x\",\"repo\":\"ext::sh -c id\"}}\n",
            task_line(repo.path(), "a")
        ),
    )
    .unwrap();
    let out = braincode(
        &submitter,
        submitter.path(),
        &[
            "fleet",
            "submit",
            "--nats",
            &nats.url(),
            "--file",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("tasks.jsonl:2:") && out.stderr.contains("runs a program"),
        "{}",
        out.stderr
    );
    assert_eq!(
        fleet.list().await.unwrap().len(),
        4,
        "nothing of the refused file was queued"
    );
    worker.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_and_wrong_credentials_say_what_to_fix() {
    let home = TempHome::new();
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("nats://127.0.0.1:{closed}");
    let started = Instant::now();
    let out = braincode(&home, home.path(), &["fleet", "list", "--nats", &url]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains(&format!("cannot connect to NATS at {url}")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("nats-server -js"), "{}", out.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "it did not hang"
    );

    let out = braincode(&home, home.path(), &["fleet", "list"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("pass --nats"), "{}", out.stderr);

    let nats = NatsServer::start_with(&["--user", "alice", "--pass", "s3cret"]);
    let url = nats.url();
    let wrong = braincode(
        &home,
        home.path(),
        &[
            "fleet",
            "list",
            "--nats",
            &url,
            "--nats-user",
            "alice",
            "--nats-password",
            "nope",
        ],
    )
    .await;
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stderr.contains("refused the credentials"),
        "{}",
        wrong.stderr
    );
    assert!(
        !wrong.stderr.contains("nope"),
        "the password is not echoed: {}",
        wrong.stderr
    );
    let right = braincode(
        &home,
        home.path(),
        &[
            "fleet",
            "list",
            "--nats",
            &url,
            "--nats-user",
            "alice",
            "--nats-password",
            "s3cret",
        ],
    )
    .await;
    assert_eq!(right.code, 0, "{}", right.stderr);
    assert!(
        right.stdout.contains("no task in the fleet"),
        "{}",
        right.stdout
    );
}
