//! End-to-end tests of `braincode sessions` and `braincode auth`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use braincode_config::{Home, JournalWriter};
use braincode_protocol::{Record, SessionId};
use serde_json::{Value, json};

fn braincode(home: &Path, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    command
        .args(args)
        .current_dir(cwd)
        .env("BRAINCODE_HOME", home)
        .env("HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn record(value: Value) -> Record {
    serde_json::from_value(value).unwrap()
}

fn write_session(home: &Path, id: &str, root: &Path, prompt: &str, done: bool) {
    let mut writer = JournalWriter::open(&Home::at(home), &SessionId::new(id).unwrap()).unwrap();
    writer
        .append(&record(
            json!({"type": "run_start", "prompt": prompt, "attempt": 1,
            "projectSupport": {"root": root.to_str().unwrap()}}),
        ))
        .unwrap();
    if done {
        writer
            .append(&record(
                json!({"type": "run_end", "summary": format!("answer to {prompt}")}),
            ))
            .unwrap();
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    project_a: std::path::PathBuf,
    project_b: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project_a = dir.path().join("a").canonicalize().unwrap_or_else(|_| {
        std::fs::create_dir_all(dir.path().join("a")).unwrap();
        dir.path().join("a").canonicalize().unwrap()
    });
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let project_b = dir.path().join("b").canonicalize().unwrap();
    write_session(
        &home,
        "20261130-aaa111",
        &project_a,
        "first task in a",
        true,
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_session(&home, "20261130-bbb222", &project_b, "task in b", false);
    std::thread::sleep(std::time::Duration::from_millis(20));
    write_session(
        &home,
        "20261130-aab333",
        &project_a,
        "second task in a",
        true,
    );
    Fixture {
        _dir: dir,
        home,
        project_a,
        project_b,
    }
}

#[test]
fn list_defaults_to_the_current_project_and_all_lists_everything() {
    let fx = fixture();
    let out = braincode(&fx.home, &fx.project_a, &["sessions", "list"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // The short id (here, ids of no date-time form: their first 12 characters) comes first.
    assert!(text.starts_with("SHORT"), "{text}");
    assert!(
        text.lines().nth(1).unwrap().starts_with("20261130-aab"),
        "{text}"
    );
    assert!(
        text.contains("20261130-aab333") && text.contains("20261130-aaa111"),
        "{text}"
    );
    assert!(!text.contains("bbb222"), "{text}");
    assert!(
        text.find("aab333").unwrap() < text.find("aaa111").unwrap(),
        "newest first"
    );
    assert!(text.contains("completed"));

    let out = braincode(
        &fx.home,
        &fx.project_b,
        &["sessions", "list", "--all", "--json", "--limit", "2"],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["20261130-aab333", "20261130-bbb222"]);
    assert_eq!(rows[1]["status"], "incomplete");
    assert_eq!(rows[1]["promptPreview"], "task in b");
    assert!(rows[0]["updatedAtIso"].as_str().unwrap().ends_with('Z'));

    let out = braincode(
        &fx.home,
        &fx.project_a,
        &[
            "sessions",
            "list",
            "--project",
            fx.project_b.to_str().unwrap(),
            "--json",
        ],
        None,
    );
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(rows.len(), 1);
}

#[test]
fn show_resolves_prefixes_and_reports_problems() {
    let fx = fixture();
    let out = braincode(
        &fx.home,
        &fx.project_a,
        &["sessions", "show", "20261130-aab", "--snapshot"],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("Session 20261130-aab333 · status completed"),
        "{text}"
    );
    assert!(text.contains("Initial prompt:\nsecond task in a"), "{text}");

    let out = braincode(
        &fx.home,
        &fx.project_a,
        &["sessions", "show", "20261130-aa"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("matches 2 sessions") && err.contains("aaa111") && err.contains("aab333"),
        "{err}"
    );

    let out = braincode(&fx.home, &fx.project_a, &["sessions", "show", "zzz"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("braincode sessions list"),
        "{}",
        stderr(&out)
    );

    // A garbage line and a torn tail.
    let path = fx.home.join("sessions/20261130-bbb222.jsonl");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"not a record\n{\"timestamp\":1,\"type\":\"run_e")
        .unwrap();
    drop(file);
    let out = braincode(
        &fx.home,
        &fx.project_a,
        &[
            "sessions",
            "show",
            "20261130-b",
            "--snapshot",
            "--json",
            "--verify",
        ],
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["id"], "20261130-bbb222");
    assert_eq!(value["status"], "incomplete");
    assert_eq!(value["tornTail"], true);
    assert_eq!(value["records"][0]["type"], "run_start");
    assert_eq!(value["verify"]["skipped"][0]["line"], 2);
    assert_eq!(value["verify"]["tornTail"], true);

    let out = braincode(
        &fx.home,
        &fx.project_a,
        &["sessions", "show", "20261130-b", "--snapshot", "--verify"],
        None,
    );
    assert!(
        stdout(&out).contains("line 2: not a journal record"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("cut off"), "{}", stderr(&out));
}

#[test]
fn auth_set_status_remove_never_show_secrets() {
    let fx = fixture();
    let cwd = &fx.project_a;
    let out = braincode(
        &fx.home,
        cwd,
        &["auth", "set", "openrouter"],
        Some("  sk-or-VERYSECRET \n"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("VERYSECRET"));
    let auth = fx.home.join("auth.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let out = braincode(&fx.home, cwd, &["auth", "status", "--json"], None);
    let text = stdout(&out);
    assert!(!text.contains("VERYSECRET"), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["providers"][0]["provider"], "openrouter");
    assert_eq!(value["providers"][0]["kind"], "api-key");

    let out = braincode(&fx.home, cwd, &["auth", "status"], None);
    assert!(
        stdout(&out).contains("openrouter  api-key"),
        "{}",
        stdout(&out)
    );

    let out = braincode(&fx.home, cwd, &["auth", "set", "openai"], Some("\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("empty"), "{}", stderr(&out));

    let out = braincode(&fx.home, cwd, &["auth", "remove", "openrouter"], None);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Removed"));
    let out = braincode(&fx.home, cwd, &["auth", "status", "--json"], None);
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(value["providers"].as_array().unwrap().len(), 0);

    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = braincode(&fx.home, cwd, &["auth", "status"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("chmod 600"), "{}", stderr(&out));
}
