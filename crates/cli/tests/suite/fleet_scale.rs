//! The fleet at scale and at its limits, on real `nats-server`s: token budgets shared by
//! concurrent workers, a 3-node JetStream cluster that loses a server mid-batch, and results
//! pushed to a branch of a (local, bare) remote.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use super::fleet::{
    Worker, connect, model_server, spawn_worker, task_line, wait_final, worker_home,
};
use crate::run_harness::{self, braincode};
use braincode_fleet::{Fleet, NatsOptions, TaskSpec, TaskState, TaskStatus};
use braincode_test_support::{NatsCluster, NatsServer, TempHome};

fn tasks(repo: &std::path::Path, n: usize, prompt: &str) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| serde_json::from_str(&task_line(repo, &format!("{prompt} ({i})"))).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_workers_share_one_token_budget_and_spent_tasks_say_so() {
    let nats = NatsServer::start();
    let server = model_server(Duration::from_millis(100), Duration::from_millis(200)).await;
    let repo = run_harness::repo();
    let admin = TempHome::new();
    // Room for about two runs: each reserves 2,500 tokens; a read-only run uses ~2,000.
    let set = braincode(
        &admin,
        admin.path(),
        &[
            "fleet",
            "budget",
            "--tokens",
            "5000",
            "--per-task-tokens",
            "2500",
            "--nats",
            &nats.url(),
        ],
    )
    .await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    let homes: Vec<TempHome> = (0..2).map(|_| worker_home(&server)).collect();
    let mut workers: Vec<Worker> = (homes.iter().enumerate())
        .map(|(n, home)| spawn_worker(home, &nats.url(), &format!("b{n}"), 3))
        .collect();
    let fleet = connect(&nats.url()).await;
    let ids = braincode_fleet::submit(&fleet, tasks(repo.path(), 6, "check the tokens"))
        .await
        .unwrap();
    let mut states = Vec::new();
    for id in &ids {
        states.push(wait_final(&fleet, id, Duration::from_secs(120)).await);
    }
    let budgets = braincode_fleet::budget::list(&fleet).await.unwrap();
    let (_, budget) = budgets.iter().find(|(key, _)| key == "fleet").unwrap();
    let tokens = budget.tokens.as_ref().unwrap();
    // Every run's tokens were counted once, and nothing is left reserved.
    let counted: u64 = states.iter().filter_map(|s| s.tokens).sum();
    assert_eq!(tokens.used, counted, "{states:#?}");
    assert!(tokens.reserved.is_empty(), "{tokens:?}");
    // Runs never held more than the budget at once: each run's grant was its --max-tokens,
    // and the grants it was given came out of one shared count.
    let spent: Vec<_> = states
        .iter()
        .filter(|s| s.status == TaskStatus::Failed)
        .collect();
    assert!(
        !spent.is_empty(),
        "6 runs of ~2,000 tokens cannot all fit in 5,000: {states:#?}"
    );
    for state in &spent {
        let error = state.error.as_deref().unwrap();
        assert!(error.contains("fleet token budget is spent"), "{error}");
        assert!(
            state.tokens.is_none(),
            "a task refused for its budget did not run"
        );
    }
    let ran = states.iter().filter(|s| s.tokens.is_some()).count();
    assert!((2..=4).contains(&ran), "{ran} runs: {states:#?}");
    for state in states
        .iter()
        .filter(|s| s.run_status.as_deref() == Some("budget_exceeded"))
    {
        // A run whose grant ran out stopped, and its answer says so.
        let answer = state.answer.as_deref().unwrap_or_default();
        assert!(answer.contains("budget reached"), "{state:?}");
    }
    let shown = braincode(
        &admin,
        admin.path(),
        &["fleet", "budget", "--nats", &nats.url()],
    )
    .await;
    assert!(
        shown.stdout.contains("fleet") && shown.stdout.contains("5000 limit"),
        "{}",
        shown.stdout
    );
    for worker in &mut workers {
        worker.kill().await;
    }
}

/// Connects to the cluster once its JetStream has a leader (it elects one after start).
async fn cluster_fleet(urls: &str) -> Fleet {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let options = NatsOptions {
            url: urls.to_string(),
            replicas: 3,
            ..NatsOptions::default()
        };
        match Fleet::connect(&options).await {
            Ok(fleet) => return fleet,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(why) => panic!("the cluster never became ready: {why}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_node_cluster_that_loses_a_server_mid_batch_completes_every_task_once() {
    let mut cluster = NatsCluster::start();
    let urls = cluster.urls();
    let fleet = cluster_fleet(&urls).await;
    let server = model_server(Duration::from_millis(100), Duration::from_millis(300)).await;
    let repo = run_harness::repo();
    let homes: Vec<TempHome> = (0..2).map(|_| worker_home(&server)).collect();
    // Each worker knows every server, and fails over when its own goes.
    let mut workers: Vec<Worker> = (homes.iter().enumerate())
        .map(|(n, home)| spawn_worker(home, &urls, &format!("c{n}"), 2))
        .collect();
    let ids = braincode_fleet::submit(&fleet, tasks(repo.path(), 8, "is the token check right?"))
        .await
        .unwrap();
    // Once the first task is done, a server dies: the one leading the task bucket, so every
    // worker's reads and writes of task states wait for a new leader.
    let first = wait_final(&fleet, &ids[0], Duration::from_secs(120)).await;
    assert_eq!(first.status, TaskStatus::Done, "{first:?}");
    let mut bucket = fleet.js.get_stream("KV_braincode_tasks").await.unwrap();
    let leader = bucket.info().await.unwrap().cluster.clone().unwrap().leader;
    // The servers are named n0, n1, n2 in order.
    let dead = match leader.as_deref() {
        Some("n0") => 0,
        Some("n2") => 2,
        _ => 1,
    };
    cluster.servers[dead].kill();
    let others: Vec<String> = (0..3)
        .filter(|n| *n != dead)
        .map(|n| cluster.servers[n].url())
        .collect();
    let survivor = cluster_fleet(&others.join(",")).await;
    for id in &ids {
        let state = wait_final(&survivor, id, Duration::from_secs(180)).await;
        assert_eq!(state.status, TaskStatus::Done, "{state:?}");
        let records =
            super::fleet::stream_journal(&survivor, state.session.as_deref().unwrap()).await;
        let ends = records.iter().filter(|r| r["type"] == "run_end").count();
        assert_eq!(ends, 1, "task {id}: one answer");
    }
    for worker in &mut workers {
        worker.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_is_pushed_to_the_branch_the_task_names() {
    let nats = NatsServer::start();
    let server = super::fleet::editing_server(Duration::ZERO).await;
    let repo = run_harness::repo();
    // The task's repository is a bare remote, as on a server.
    let remotes = tempfile::tempdir().unwrap();
    let bare = remotes.path().join("origin.git");
    let status = std::process::Command::new("git")
        .args([
            "clone",
            "-q",
            "--bare",
            repo.path().to_str().unwrap(),
            bare.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(status.success());
    let home = worker_home(&server);
    let mut worker = spawn_worker(&home, &nats.url(), "pusher", 1);
    let fleet = connect(&nats.url()).await;
    let mut task: TaskSpec =
        serde_json::from_str(&task_line(&bare, "require longer tokens")).unwrap();
    task.permission = braincode_fleet::task::Permission::AllowEdits;
    task.push_branch = Some("braincode/longer-tokens".into());
    let id = braincode_fleet::submit(&fleet, vec![task])
        .await
        .unwrap()
        .remove(0);
    let state = wait_final(&fleet, &id, Duration::from_secs(60)).await;
    assert_eq!(state.status, TaskStatus::Done, "{state:?}");
    assert_eq!(
        state.pushed_branch.as_deref(),
        Some("braincode/longer-tokens")
    );
    let shown = std::process::Command::new("git")
        .args([
            "--git-dir",
            bare.to_str().unwrap(),
            "show",
            "braincode/longer-tokens:src/token.rs",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("token.len() > 8"));
    // The branch starts from the commit the task ran on, and main is untouched.
    let parent = std::process::Command::new("git")
        .args([
            "--git-dir",
            bare.to_str().unwrap(),
            "rev-parse",
            "braincode/longer-tokens^",
            "HEAD",
        ])
        .output()
        .unwrap();
    let parent = String::from_utf8_lossy(&parent.stdout).to_string();
    let lines: Vec<&str> = parent.lines().collect();
    assert_eq!(lines[0], lines[1], "{parent}");
    assert_eq!(Some(lines[1]), state.commit.as_deref());
    // Delivered again after its push (its worker died before recording the result): the
    // same commit is pushed, so the branch is where it was and the task is done again.
    let head = |bare: &std::path::Path| {
        let out = std::process::Command::new("git")
            .args([
                "--git-dir",
                bare.to_str().unwrap(),
                "rev-parse",
                "braincode/longer-tokens",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let pushed = head(&bare);
    // A later second than the first push: a commit dated "now" would differ.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let mut running = state.clone();
    running.status = TaskStatus::Running;
    fleet
        .tasks
        .put(&id, serde_json::to_vec(&running).unwrap().into())
        .await
        .unwrap();
    let message = serde_json::json!({"id": id, "task": state.task.clone().unwrap()});
    fleet
        .js
        .publish("braincode.tasks", message.to_string().into())
        .await
        .unwrap()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let again = loop {
        let (now, _) = fleet.state(&id).await.unwrap().unwrap();
        if now.status.is_final() {
            break now;
        }
        assert!(Instant::now() < deadline, "{now:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(again.status, TaskStatus::Done, "{again:?}");
    assert_eq!(head(&bare), pushed);
    worker.kill().await;
}

/// Submits a task whose primary never answers and kills the worker in it at each of its
/// deliveries; after the last kill, waits `quiet`, then starts a worker that should record
/// the task's failure. Returns the failed state.
async fn every_worker_dies(quiet: Duration) -> TaskState {
    let nats = NatsServer::start();
    let server = model_server(Duration::ZERO, Duration::from_secs(600)).await;
    let repo = run_harness::repo();
    let fleet = connect(&nats.url()).await;
    let ids = braincode_fleet::submit(&fleet, tasks(repo.path(), 1, "hang"))
        .await
        .unwrap();
    let id = &ids[0];
    let homes: Vec<TempHome> = (0..5).map(|_| worker_home(&server)).collect();
    for (delivery, home) in (1..=braincode_fleet::nats::MAX_DELIVER as u64).zip(&homes) {
        let mut worker = spawn_worker(home, &nats.url(), &format!("doomed{delivery}"), 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (state, _) = fleet.state(id).await.unwrap().unwrap();
            if state.status == TaskStatus::Running && state.deliveries == delivery {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "delivery {delivery} never started: {state:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        worker.kill().await;
    }
    tokio::time::sleep(quiet).await;
    let mut observer = spawn_worker(&homes[4], &nats.url(), "observer", 1);
    let state = wait_final(&fleet, id, Duration::from_secs(60)).await;
    // It is not delivered again: nobody else runs it, and the queue is empty.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (after, _) = fleet.state(id).await.unwrap().unwrap();
    assert_eq!(after.deliveries, 4);
    let mut stream = fleet.js.get_stream("BRAINCODE_TASKS").await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 0);
    observer.kill().await;
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_every_worker_dies_fails_after_its_last_delivery_instead_of_looping() {
    // A worker serving when the server gives the task up hears it, and records why.
    let state = Box::pin(every_worker_dies(Duration::ZERO)).await;
    assert_eq!(state.status, TaskStatus::Failed, "{state:?}");
    let error = state.error.unwrap();
    assert!(error.contains("given up after 4 deliveries"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_given_up_while_no_worker_listened_is_failed_by_the_next_worker_to_start() {
    // Nobody serves when the server gives up: a worker started later finds the task's
    // heartbeat stopped on its last delivery.
    let state = Box::pin(every_worker_dies(Duration::from_secs(17))).await;
    assert_eq!(state.status, TaskStatus::Failed, "{state:?}");
    assert!(state.error.unwrap().contains("given up after 4 deliveries"));
}

/// A CA and a server certificate for 127.0.0.1, made with openssl in `dir`: (ca, cert, key).
fn tls_files(dir: &std::path::Path) -> (String, String, String) {
    let path = |name: &str| dir.join(name).display().to_string();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-subj",
        "/CN=test ca",
        "-keyout",
        &path("ca.key"),
        "-out",
        &path("ca.pem"),
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        &path("server.key"),
        "-out",
        &path("server.csr"),
    ]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        &path("server.csr"),
        "-CA",
        &path("ca.pem"),
        "-CAkey",
        &path("ca.key"),
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &path("ext.cnf"),
        "-out",
        &path("server.pem"),
    ]);
    (path("ca.pem"), path("server.pem"), path("server.key"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_and_a_tls_server_are_reached_with_the_options_users_expect() {
    let home = TempHome::new();
    let list = |args: Vec<String>| {
        let home = &home;
        async move {
            let mut all = vec!["fleet".to_string(), "list".to_string()];
            all.extend(args);
            let refs: Vec<&str> = all.iter().map(String::as_str).collect();
            braincode(home, home.path(), &refs).await
        }
    };
    let token = NatsServer::start_with(&["--auth", "fleet-token-1"]);
    let wrong = list(vec![
        "--nats".into(),
        token.url(),
        "--nats-token".into(),
        "other".into(),
    ])
    .await;
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stderr.contains("refused the credentials"),
        "{}",
        wrong.stderr
    );
    let right = list(vec![
        "--nats".into(),
        token.url(),
        "--nats-token".into(),
        "fleet-token-1".into(),
    ])
    .await;
    assert_eq!(right.code, 0, "{}", right.stderr);

    let certs = tempfile::tempdir().unwrap();
    let (ca, cert, key) = tls_files(certs.path());
    let tls = NatsServer::start_with(&["--tls", "--tlscert", &cert, "--tlskey", &key]);
    // Without the CA the server's certificate is not trusted, and the error says what to do.
    let untrusted = list(vec!["--nats".into(), tls.url(), "--nats-tls".into()]).await;
    assert_eq!(untrusted.code, 1);
    assert!(
        untrusted.stderr.contains("cannot connect to NATS")
            && untrusted.stderr.contains("--nats-tls-ca"),
        "{}",
        untrusted.stderr
    );
    let trusted = list(vec!["--nats".into(), tls.url(), "--nats-tls-ca".into(), ca]).await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(
        trusted.stdout.contains("no task in the fleet"),
        "{}",
        trusted.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_stops_runs_at_their_grant_and_refuses_tasks_once_spent() {
    let nats = NatsServer::start();
    let server = model_server(Duration::ZERO, Duration::ZERO).await;
    let repo = run_harness::repo();
    let home = worker_home(&server);
    // This worker's models cost $100 per million tokens: even a short run costs cents.
    let path = home.path().join("models.json");
    let mut models: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    for model in models["models"].as_array_mut().unwrap() {
        model["pricing"] = serde_json::json!({"input": 100.0, "output": 100.0});
    }
    std::fs::write(&path, models.to_string()).unwrap();
    let admin = TempHome::new();
    let set = braincode(
        &admin,
        admin.path(),
        &[
            "fleet",
            "budget",
            "--usd",
            "0.03",
            "--per-task-usd",
            "0.012",
            "--nats",
            &nats.url(),
        ],
    )
    .await;
    assert_eq!(set.code, 0, "{}", set.stderr);
    assert!(set.stdout.contains("$0.03 limit"), "{}", set.stdout);
    let mut worker = spawn_worker(&home, &nats.url(), "priced", 1);
    let fleet = connect(&nats.url()).await;
    let ids = braincode_fleet::submit(&fleet, tasks(repo.path(), 5, "check"))
        .await
        .unwrap();
    let mut states = Vec::new();
    for id in &ids {
        states.push(wait_final(&fleet, id, Duration::from_secs(120)).await);
    }
    // Runs ran until the budget was spent; a run stopped by its grant says so.
    let ran: Vec<_> = states.iter().filter(|s| s.tokens.is_some()).collect();
    assert!(!ran.is_empty());
    for state in ran
        .iter()
        .filter(|s| s.run_status.as_deref() == Some("budget_exceeded"))
    {
        assert!(
            state.answer.as_deref().unwrap().contains("budget reached"),
            "{state:?}"
        );
    }
    let refused: Vec<_> = states
        .iter()
        .filter(|s| s.status == TaskStatus::Failed)
        .collect();
    assert!(!refused.is_empty(), "{states:#?}");
    for state in &refused {
        assert!(
            state
                .error
                .as_deref()
                .unwrap()
                .contains("fleet cost budget is spent"),
            "{state:?}"
        );
    }
    let budgets = braincode_fleet::budget::list(&fleet).await.unwrap();
    let cost = budgets[0].1.cost_micro_usd.clone().unwrap();
    let counted: u64 = states.iter().filter_map(|s| s.cost_micro_usd).sum();
    assert_eq!(cost.used, counted);
    assert!(cost.reserved.is_empty(), "{cost:?}");
    worker.kill().await;
}
