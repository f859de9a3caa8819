//! Signals and kills during `braincode run`, through the binary: SIGINT, SIGTERM and SIGHUP
//! cancel a run the same way whatever it is doing (one report, a journal that ends with the
//! run's `run_error`, exit 128 + the signal), and nothing the run started — hooks, commands
//! and whatever they started in the background — outlives it, even after `kill -9`.
//!
//! Processes are found in `/proc` by a unique `sleep` duration used as their argument. Timings
//! are never asserted: every wait is a generous upper bound on behaviour.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::run_harness::{
    self, configure, journal, processes_with_arg, repo, send_signal, spawn_braincode, survivors,
    types, unique_sleep_marker, wait_for_processes, worker_reply,
};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Waits for a signalled `braincode` and checks what every cancelled run must show: the exit
/// code, exactly one report on stdout saying `aborted` and which signal, and a journal that
/// starts with the prompt and ends with the one `run_error` (nothing after it).
async fn expect_cancelled(
    child: tokio::process::Child,
    home: &TempHome,
    prompt: &str,
    signal: &str,
    code: i32,
) {
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("braincode exited after the signal")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{signal}: stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(
        stdout.matches("Status:").count(),
        1,
        "{signal}: exactly one report:\n{stdout}"
    );
    assert!(stdout.contains("Status:   aborted"), "{stdout}");
    let name = signal.trim_start_matches('-');
    assert!(
        stdout.contains(&format!("the run was cancelled (SIG{name} received)")),
        "{stdout}"
    );
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Session:  "))
        .unwrap()
        .trim()
        .to_string();
    let records = journal(home, &session);
    let t = types(&records);
    assert_eq!(t[0], "run_start", "{t:?}");
    assert_eq!(records[0]["prompt"], prompt);
    assert_eq!(
        t.last().map(String::as_str),
        Some("run_error"),
        "{signal}: nothing after the terminal record: {t:?}"
    );
    let last = records.last().unwrap();
    assert_eq!(last["kind"], "aborted");
    assert_eq!(t.iter().filter(|x| *x == "final_report").count(), 1);
    let closing = records
        .iter()
        .filter(|r| r["type"] == "run_error" && r.get("attempt").is_none())
        .count();
    assert_eq!(closing, 1, "one closing run_error: {t:?}");
}

/// What a home needs for a hook case: `event` runs `sleep M & sleep M` (M the marker).
fn hook_home(server: &ScriptedServer, event: &str, marker: &str) -> TempHome {
    let home = TempHome::new();
    configure(&home, server, &[], &[]);
    let command = format!("sleep {marker} & sleep {marker}");
    home.write_json(
        "hooks.json",
        &json!({"hooks": {event: [{"hooks": [{"command": command, "trusted": true}]}]}}),
    );
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_signal_during_a_hook_cancels_once_and_kills_the_hooks_children() {
    // (signal, exit code, hook event, sandbox): the SubagentStart hook runs while the worker
    // pool is being torn down; `off` runs the hook unconfined (no namespace to kill it).
    let cases = [
        ("-INT", 130, "SubagentStart", "auto"),
        ("-TERM", 143, "SessionStart", "off"),
        ("-HUP", 129, "UserPromptSubmit", "auto"),
        ("-INT", 130, "SessionStart", "off"),
    ];
    for (signal, code, event, sandbox) in cases {
        let script = Script::new()
            .always(Matcher::model("librarian"), worker_reply("mapped"))
            .always(Matcher::model("backend"), Reply::text("Refactored."));
        let server = ScriptedServer::start(script).await;
        let marker = unique_sleep_marker();
        let home = hook_home(&server, event, &marker);
        let repo = repo();
        let prompt = "Refactor the backend handler layout";
        let mut command = run_harness::command(&home, repo.path(), &["run", "--heuristic", prompt]);
        let child = command
            .env("BRAINCODE_SANDBOX", sandbox)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_processes(&marker, 2).await;
        send_signal(child.id().unwrap(), signal);
        expect_cancelled(child, &home, prompt, signal, code).await;
        let left = survivors(&marker).await;
        assert!(
            left.is_empty(),
            "{signal} during a {event} hook (sandbox {sandbox}) left processes running: {left:?}"
        );
    }
}

/// A home and server whose primary runs `sleep M & sleep M` with the `shell` tool.
async fn shell_case(marker: &str) -> (ScriptedServer, TempHome) {
    let command = format!("sleep {marker} & sleep {marker}");
    let script = Script::new().when(
        Matcher::model("backend"),
        [
            Reply::tool_call("shell", json!({"command": command, "timeoutMs": 600_000})),
            Reply::text("done"),
        ],
    );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    (server, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_signal_during_a_shell_command_cancels_once_and_kills_what_it_started() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let marker = unique_sleep_marker();
        let (_server, home) = shell_case(&marker).await;
        let repo = repo();
        let prompt = "what does the backend api return";
        let child = spawn_braincode(&home, repo.path(), &["run", "--yes", "--heuristic", prompt]);
        wait_for_processes(&marker, 2).await;
        send_signal(child.id().unwrap(), signal);
        expect_cancelled(child, &home, prompt, signal, code).await;
        let left = survivors(&marker).await;
        assert!(
            left.is_empty(),
            "{signal} during a shell command left processes running: {left:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_quits_while_the_first_is_still_stopping_children() {
    // The hook's processes ignore SIGTERM, so after the first signal's report Braincode is
    // still waiting for them to die (SIGKILL comes after a grace period) when the second
    // signal arrives: it quits at once, killing them on its way out.
    let server = ScriptedServer::start(Script::new()).await;
    let marker = unique_sleep_marker();
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let command = format!("trap '' TERM; sleep {marker} & sleep {marker}");
    home.write_json(
        "hooks.json",
        &json!({"hooks": {"SessionStart": [{"hooks": [{"command": command, "trusted": true}]}]}}),
    );
    let repo = repo();
    let mut command = run_harness::command(
        &home,
        repo.path(),
        &["run", "--heuristic", "what does the backend api return"],
    );
    let mut child = command
        .env("BRAINCODE_SANDBOX", "off")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_processes(&marker, 2).await;
    let pid = child.id().unwrap();
    send_signal(pid, "-TERM");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut reports = 0;
    while let Some(line) = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        if line.starts_with("Status:") {
            reports += 1;
            assert_eq!(line, "Status:   aborted");
        }
        if line.starts_with("Session:") {
            // The report is out; the process may be stopping the hook. Signal it again (it
            // may also have finished already: then there is nothing left to signal).
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("braincode exited")
        .unwrap();
    assert_eq!(status.code(), Some(143));
    assert_eq!(reports, 1, "one report, never two");
    let left = survivors(&marker).await;
    assert!(left.is_empty(), "left running: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_command_leaves_nothing_running() {
    if braincode_sandbox::status().kind != braincode_sandbox::SandboxKind::Bubblewrap {
        // Without bubblewrap's pid namespace only the command's own process dies with
        // Braincode (PR_SET_PDEATHSIG); what it started in the background would not.
        eprintln!(
            "skipped: needs the bubblewrap sandbox ({})",
            braincode_sandbox::status().detail
        );
        return;
    }
    let marker = unique_sleep_marker();
    let (_server, home) = shell_case(&marker).await;
    let repo = repo();
    let mut child = spawn_braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--yes",
            "--heuristic",
            "what does the backend api return",
        ],
    );
    wait_for_processes(&marker, 2).await;
    send_signal(child.id().unwrap(), "-KILL");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), None, "killed by the signal");
    let left = survivors(&marker).await;
    assert!(left.is_empty(), "kill -9 left processes running: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_during_workers_is_listed_with_its_prompt() {
    let script = Script::new()
        .always(Matcher::model("librarian"), Reply::stall())
        .always(Matcher::model("backend"), Reply::text("never reached"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let prompt = "Refactor the backend handler layout";
    let mut child = spawn_braincode(
        &home,
        repo.path(),
        &["run", "--events", "--heuristic", prompt],
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut session = None;
    while let Some(line) = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap()
        .unwrap()
    {
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["event"] == "record"
            && event["entry"]["type"] == "worker_start"
            && event["entry"]["phase"] == "support"
        {
            session = event["session_id"].as_str().map(str::to_string);
            break;
        }
    }
    let session = session.expect("a support worker started");
    send_signal(child.id().unwrap(), "-KILL");
    let _ = child.wait().await;

    let listed = run_harness::braincode(&home, repo.path(), &["sessions", "list", "--json"]).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let rows: Vec<Value> = serde_json::from_str(&listed.stdout).unwrap();
    let row = rows
        .iter()
        .find(|r| r["id"] == session.as_str())
        .unwrap_or_else(|| panic!("the killed session is listed: {rows:?}"));
    assert_eq!(row["promptPreview"], prompt);
    assert_eq!(row["status"], "incomplete");
    assert_eq!(row["runs"], 1);
    let human = run_harness::braincode(&home, repo.path(), &["sessions", "list"]).await;
    assert!(
        human
            .stdout
            .lines()
            .any(|l| l.contains(&session) && l.contains(prompt)),
        "{}",
        human.stdout
    );
    assert!(processes_with_arg(&session).is_empty());
}
