//! What the end-to-end tests of `braincode run` (`run_e2e`, `run_signals`, `run_reports`)
//! and the hostile-repository and model-glitch tests share: a home whose `test` brain sends
//! each role to its own scripted model (or every role to one), canned worker
//! and review replies, running the binary (to completion, or spawned to be signalled),
//! reading journals, and finding processes by a unique marker argument in `/proc`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use braincode_test_support::{Reply, ScriptedServer, TempHome, TempRepo, scripted_model_entry};
use serde_json::{Value, json};

pub mod npm_registry;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// Every role a brain maps.
pub const BRAIN_ROLES: [&str; 15] = [
    "frontend",
    "backend",
    "designer",
    "dba",
    "devops",
    "security",
    "qa",
    "summarize",
    "oracle",
    "librarian",
    "rush",
    "review",
    "routeBrain",
    "pet",
    "imageMaker",
];

/// A home whose `test` brain sends every role, and the planner, to one scripted model
/// `test/any` (requests name the model `any`).
pub fn configure_one_model(home: &TempHome, server: &ScriptedServer) {
    home.write_models(&[scripted_model_entry("test/any", &server.base_url())]);
    let roles: serde_json::Map<String, Value> = BRAIN_ROLES
        .iter()
        .map(|role| {
            (
                (*role).to_string(),
                json!({"modelId": "test/any", "fallbackModelIds": []}),
            )
        })
        .collect();
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/any", "fallbackModelIds": []},
        "roles": roles,
    }]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test"}));
}

/// The one-model home ([`configure_one_model`]) with parallel writers on in its brain.
pub fn configure_writers(home: &TempHome, server: &ScriptedServer) {
    configure_one_model(home, server);
    let path = home.path().join("brains.json");
    let mut brains: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    brains["brains"][0]["routing"] = json!({"parallelWriters": true, "maxParallelAgents": 4});
    home.write_brains(&brains);
}

/// A one-model server that answers everything with "hello!".
pub async fn hello_server() -> ScriptedServer {
    ScriptedServer::start(braincode_test_support::Script::new().always(
        braincode_test_support::Matcher::model("any"),
        Reply::text("hello!"),
    ))
    .await
}

/// `braincode run --json --heuristic [flags…] <prompt>`, which must answer (exit 0): its report.
pub async fn run_json(
    home: &TempHome,
    cwd: &Path,
    flags: &[&str],
    prompt: &str,
    env: &[(&str, &str)],
) -> Value {
    let mut args = vec!["run", "--json", "--heuristic"];
    args.extend_from_slice(flags);
    args.push(prompt);
    let out = braincode_env(home, cwd, &args, env).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    serde_json::from_str(&out.stdout).unwrap()
}

/// Everything every request to `server` carried, joined.
pub fn all_requests_text(server: &ScriptedServer) -> String {
    server
        .chat_requests()
        .iter()
        .map(braincode_test_support::RecordedRequest::all_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Roles with their own scripted model `test/<role>`.
pub const ROLES: [&str; 6] = ["router", "librarian", "security", "qa", "backend", "review"];

/// A home whose `test` brain sends each role to its own scripted model `test/<role>` (other
/// roles to `test/backend`), with `chains` overriding some roles' model chains.
pub fn configure(
    home: &TempHome,
    server: &ScriptedServer,
    extra_models: &[&str],
    chains: &[(&str, Vec<&str>)],
) {
    let mut models: Vec<_> = ROLES
        .iter()
        .map(|r| scripted_model_entry(&format!("test/{r}"), &server.base_url()))
        .collect();
    for id in extra_models {
        models.push(scripted_model_entry(id, &server.base_url()));
    }
    home.write_models(&models);
    let mut roles = serde_json::Map::new();
    for role in BRAIN_ROLES {
        let own = if ROLES.contains(&role) {
            format!("test/{role}")
        } else {
            "test/backend".into()
        };
        roles.insert(role.into(), json!({"modelId": own, "fallbackModelIds": []}));
    }
    for (role, chain) in chains {
        roles.insert(
            (*role).into(),
            json!({"modelId": chain[0], "fallbackModelIds": chain[1..]}),
        );
    }
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/router", "fallbackModelIds": []},
        "roles": roles,
        "routing": {"maxParallelAgents": 4}
    }]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test"}));
}

/// A completed worker result whose summary is `summary`.
pub fn worker_reply(summary: &str) -> Reply {
    Reply::json(&json!({
        "taskId": "made-up-task", "parentId": "made-up-parent",
        "progress": {"status": "completed", "summary": "done"},
        "summary": summary,
        "artifacts": [{"kind": "file", "uri": "src/token.rs", "label": "token checks"}],
        "risks": [], "nextQuestions": [],
        "scratchpad": "RAW_TRANSCRIPT_MARKER this field is not part of a result"
    }))
}

/// A review result with `decision`.
pub fn review_reply(decision: &str) -> Reply {
    Reply::json(&json!({
        "taskId": "x", "parentId": "y",
        "progress": {"status": "completed", "summary": "reviewed"},
        "summary": "Checked the change.", "artifacts": [], "risks": [], "nextQuestions": [],
        "decision": decision, "confidence": 0.9, "rationale": "the fix is minimal and correct",
        "findings": [], "requiredChanges": [], "blockingIssues": [], "residualRisks": []
    }))
}

/// A git repository with one committed file.
pub fn repo() -> TempRepo {
    let repo = TempRepo::new();
    repo.write(
        "src/token.rs",
        "pub fn valid(token: &str) -> bool { !token.is_empty() }\n",
    );
    repo.commit("token check");
    repo
}

/// What a finished `braincode` printed.
pub struct Output {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Output {
    /// The `Session:` line of a human report.
    pub fn session(&self) -> String {
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix("Session:  "))
            .unwrap_or_else(|| panic!("no Session line in:\n{}", self.stdout))
            .trim()
            .to_string()
    }

    /// The value of the human report's `label:` line, if there is one.
    pub fn field(&self, label: &str) -> Option<String> {
        let lead = format!("{label}:");
        self.stdout
            .lines()
            .find_map(|l| l.strip_prefix(&lead))
            .map(|v| v.trim().to_string())
    }
}

/// A `braincode` command for `home`, run in `cwd`, with no credentials in its environment.
pub fn command(home: &TempHome, cwd: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    command
        .args(args)
        .current_dir(cwd)
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"))
        // A model server on this machine (a developer's Ollama) must not stand in for the
        // test's scripted models.
        .env("BRAINCODE_LOCAL_SERVERS", "0")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .kill_on_drop(true);
    command
}

/// Runs `braincode args…` to completion (stdin: `input`, or nothing).
pub async fn braincode_with_input(
    home: &TempHome,
    cwd: &Path,
    args: &[&str],
    input: Option<&[u8]>,
) -> Output {
    let output = finish(command(home, cwd, args), input).await;
    check_replays(home, cwd, args, &[], &output).await;
    output
}

/// Runs `braincode args…` to completion with extra environment variables.
pub async fn braincode_env(
    home: &TempHome,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut command = command(home, cwd, args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = finish(command, None).await;
    check_replays(home, cwd, args, env, &output).await;
    output
}

async fn finish(mut command: Command, input: Option<&[u8]>) -> Output {
    command
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_vec();
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let output = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("braincode finished")
        .unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `braincode replay <session> --check` with extra environment variables, which must find
/// the replay identical: its output.
pub async fn replay_check(
    home: &TempHome,
    cwd: &Path,
    session: &str,
    env: &[(&str, &str)],
) -> String {
    let mut command = command(home, cwd, &["replay", session, "--check"]);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().await.unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("identical"), "{stdout}");
    stdout
}

/// Runs `braincode args…` to completion with stdin closed.
pub async fn braincode(home: &TempHome, cwd: &Path, args: &[&str]) -> Output {
    braincode_with_input(home, cwd, args, None).await
}

/// Starts `braincode args…` with stdout and stderr piped, to be signalled.
pub fn spawn_braincode(home: &TempHome, cwd: &Path, args: &[&str]) -> Child {
    command(home, cwd, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The journal file of `session`.
pub fn journal_path(home: &TempHome, session: &str) -> PathBuf {
    home.path()
        .join("sessions")
        .join(format!("{session}.jsonl"))
}

/// Every record of a session's journal (each line must parse).
pub fn journal(home: &TempHome, session: &str) -> Vec<Value> {
    let path = journal_path(home, session);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The record types of a journal, in order.
pub fn types(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect()
}

/// The index of the first record of type `name`.
pub fn first(types: &[String], name: &str) -> usize {
    types
        .iter()
        .position(|t| t == name)
        .unwrap_or_else(|| panic!("no {name} record in {types:?}"))
}

/// The prompt texts the scripted server received for `model`.
pub fn model_requests(server: &ScriptedServer, model: &str) -> Vec<String> {
    server
        .chat_requests()
        .into_iter()
        .filter(|r| r.model() == Some(model))
        .map(|r| r.all_text())
        .collect()
}

/// A `sleep` duration no other process on the machine uses as an argument: processes started
/// with it can be found in `/proc` by that exact argument (the `sh -c` text that contains it
/// is a different, longer argument, so it does not match).
pub fn unique_sleep_marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{}{:03}.{:09}",
        10_000 + std::process::id() % 80_000,
        NEXT.fetch_add(1, Ordering::SeqCst) % 1000,
        nanos
    )
}

/// Live (non-zombie) processes with an argument equal to `marker`, as `pid: cmdline`.
pub fn processes_with_arg(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if !cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == marker.as_bytes())
        {
            continue;
        }
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let after = stat.rfind(')').map(|i| stat[i + 1..].to_string())?;
                after.split_whitespace().next().map(str::to_string)
            })
            .unwrap_or_default();
        if state == "Z" || state == "X" || state.is_empty() {
            continue;
        }
        found.push(format!(
            "{pid} ({state}): {}",
            String::from_utf8_lossy(&cmdline).replace('\0', " ")
        ));
    }
    found
}

/// Waits (generously) until at least `count` live processes carry `marker`.
pub async fn wait_for_processes(marker: &str, count: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    while processes_with_arg(marker).len() < count {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the marked processes never started: {:?}",
            processes_with_arg(marker)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Live processes that still carry `marker` once the kernel had a generous while to finish
/// killing them (killing a process and tearing a namespace down are asynchronous).
pub async fn survivors(marker: &str) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let alive = processes_with_arg(marker);
        if alive.is_empty() || tokio::time::Instant::now() >= deadline {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `signal` (e.g. `-TERM`) to `pid` with `kill`.
pub fn send_signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// `braincode doctor --json` for `home`, run in `cwd`: its exit code and the check `id` of
/// its report.
pub async fn doctor_check(home: &TempHome, cwd: &Path, id: &str) -> (i32, Value) {
    let out = braincode(home, cwd, &["doctor", "--json"]).await;
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor printed no report ({e}):\n{}", out.stderr));
    let check = report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("no {id} check in {report:#}"));
    (out.code, check)
}

/// Everything the requests to `server` after the first `skip` carried, joined (what one later
/// run sent, when `skip` is the request count before it).
pub fn requests_text_after(server: &ScriptedServer, skip: usize) -> String {
    server
        .chat_requests()
        .iter()
        .skip(skip)
        .map(braincode_test_support::RecordedRequest::all_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs already replayed, so a test with several runs checks each once.
static REPLAYED: std::sync::Mutex<Vec<(PathBuf, String, usize)>> =
    std::sync::Mutex::new(Vec::new());

/// After every `braincode run` of the suite: each run it journaled that answered or failed
/// (not one cut off by a signal, whose timing no replay repeats) replays identically —
/// `braincode replay <session> --run N --check`, with no credentials and no network.
/// The replay gets the run's environment (`env`): what it says about the sandbox, say,
/// depends on it.
async fn check_replays(
    home: &TempHome,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    output: &Output,
) {
    if args.first() != Some(&"run")
        || args.contains(&"--dry-run")
        || matches!(output.code, 129 | 130 | 143)
    {
        return;
    }
    let Ok(dir) = std::fs::read_dir(home.path().join("sessions")) else {
        return;
    };
    for file in dir.flatten() {
        let path = file.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let session = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let records: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let starts: Vec<usize> = records
            .iter()
            .enumerate()
            .filter(|(_, r)| r["type"] == "run_start")
            .map(|(i, _)| i)
            .collect();
        for (n, &start) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(records.len());
            let run = &records[start..end];
            let terminal = run.iter().rev().find(|r| {
                (r["type"] == "run_end" || r["type"] == "run_error") && !r["status"].is_null()
            });
            let replayable = records[start]["runId"].is_string()
                && terminal.is_some_and(|t| t["status"] != "aborted");
            let key = (home.path().to_path_buf(), session.clone(), n + 1);
            if !replayable || REPLAYED.lock().unwrap().contains(&key) {
                continue;
            }
            REPLAYED.lock().unwrap().push(key);
            let number = (n + 1).to_string();
            let mut replay = command(
                home,
                cwd,
                &["replay", &session, "--run", &number, "--check"],
            );
            for (key, value) in env {
                replay.env(key, value);
            }
            let replay = finish(replay, None).await;
            if replay.code == 0 && replay.stdout.contains("cannot check exactly") {
                continue;
            }
            assert!(
                replay.code == 0 && replay.stdout.contains("identical"),
                "run {number} of session {session} (`braincode {}`) does not replay identically:\n{}\n{}",
                args.join(" "),
                replay.stdout,
                replay.stderr
            );
        }
    }
}
