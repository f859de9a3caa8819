//! `braincode tui` in tmux, as a person uses it: a request whose model never answers,
//! Ctrl-C, and what the screen says afterwards — the worker stopped (not a spinner that runs
//! forever), the session ended with a resume hint, and the same session reopened with
//! `--continue` showing the worker stopped too; a parallel-writers run whose two writers'
//! rows say `writer`, `merged` and that the checks they ran in their worktrees passed, whose
//! report card names each clean merge, and whose edits
//! are both in the project with no worktree left. Screens are read with `capture-pane`, keys
//! sent with `send-keys`, on a tmux server of the test's own (`-L`), killed at the end.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::run_harness::{configure, configure_writers, review_reply};
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo, router_decision_json,
    worker_result_for,
};
use serde_json::json;

/// A guard against a hung session, never a timing assertion.
const WAIT: Duration = Duration::from_secs(90);
/// The input box's placeholder: on screen from the first frame on.
const PLACEHOLDER: &str = "Ask Braincode";
/// The spinner's frames: a row showing one of them is still "running".
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// One tmux server of this test, with one session running `braincode`.
struct Tmux {
    socket: String,
    _dir: tempfile::TempDir,
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether tmux is here; without it the test says it is skipped (in CI, which installs it
/// through `scripts/setup.sh --tests`, a missing tmux fails the test instead).
fn tmux_or_skip() -> bool {
    if tmux_available() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tmux is not installed: scripts/setup.sh --tests installs it"
    );
    eprintln!("tmux is not installed (scripts/setup.sh --tests installs it): skipped");
    false
}

/// `'…'` for sh.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Tmux {
    /// Starts `braincode args…` in `cwd` for `home` with `BRAINCODE_SANDBOX=sandbox`, in a
    /// 100×30 pane that stays on screen after the program exits (to read what it printed).
    fn start(home: &TempHome, cwd: &Path, args: &[&str], sandbox: &str) -> Tmux {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g remain-on-exit on\nset -g default-terminal xterm-256color\n",
        )
        .unwrap();
        let socket = format!(
            "bc-{}-{}",
            std::process::id(),
            dir.path().file_name().unwrap().to_string_lossy()
        );
        let tmux = Tmux { socket, _dir: dir };
        tmux.new_session("bc", home, cwd, args, sandbox, &conf);
        tmux
    }

    fn tmux(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]);
        command
    }

    fn new_session(
        &self,
        name: &str,
        home: &TempHome,
        cwd: &Path,
        args: &[&str],
        sandbox: &str,
        conf: &Path,
    ) {
        let binary = PathBuf::from(env!("CARGO_BIN_EXE_braincode"));
        let mut line = format!(
            "env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u RUST_LOG -u NO_COLOR BRAINCODE_HOME={} BRAINCODE_MODEL_CACHE={} BRAINCODE_LOCAL_SERVERS=0 BRAINCODE_SANDBOX={} {}",
            quoted(&home.path().display().to_string()),
            quoted(&home.path().join("no-model-cache").display().to_string()),
            quoted(sandbox),
            quoted(&binary.display().to_string()),
        );
        for arg in args {
            line.push(' ');
            line.push_str(&quoted(arg));
        }
        let status = self
            .tmux()
            .arg("-f")
            .arg(conf)
            .args([
                "new-session",
                "-d",
                "-s",
                name,
                "-x",
                "100",
                "-y",
                "30",
                "-c",
            ])
            .arg(cwd)
            .arg(line)
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
    }

    fn capture(&self, name: &str) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-", "-t", name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, name: &str, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", name])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn text(&self, name: &str, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-l", "-t", name, text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn pane_dead(&self, name: &str) -> bool {
        let out = self
            .tmux()
            .args(["display-message", "-p", "-t", name, "#{pane_dead}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    async fn wait_for(&self, name: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.capture(name);
            if done(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < WAIT,
                "waited {WAIT:?} for {what}; the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}

/// The worker rows of a screen (`⠋ backend    primary  test/backend …`).
fn worker_rows(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .filter(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.get(1) == Some(&"backend") && words.get(2) == Some(&"primary")
        })
        .collect()
}

fn spinning(row: &str) -> bool {
    row.chars().any(|c| SPINNER.contains(&c))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_worker_on_screen_and_in_the_reopened_session() {
    if !tmux_or_skip() {
        return;
    }
    let repo = TempRepo::new();
    repo.write("src/main.rs", "fn main() {}\n");
    repo.commit("main");
    // The backend's model never answers: only Ctrl-C ends the request.
    let script = Script::new()
        .always(
            Matcher::model("router"),
            Reply::json(&json!({
                "role": "backend",
                "workers": [{"role": "backend", "goal": "Explain main", "reason": "code"}],
                "todos": [{"id": "explain", "title": "Explain main", "role": "backend"}],
                "dependencies": [],
                "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
                "confidence": 0.9,
                "reason": "one file"
            })),
        )
        .always(Matcher::model("backend"), Reply::stall())
        .always(Matcher::Any, Reply::text("ok"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);

    let tmux = Tmux::start(&home, repo.path(), &["tui", "--read-only"], "off");
    tmux.wait_for("bc", "the first frame", |s| s.contains(PLACEHOLDER))
        .await;
    tmux.text("bc", "Explain what src/main.rs does");
    tmux.keys("bc", &["Enter"]);
    let working = tmux
        .wait_for("bc", "the backend at work", |s| {
            worker_rows(s).iter().any(|row| spinning(row))
        })
        .await;
    eprintln!("working:\n{working}");

    tmux.keys("bc", &["C-c"]);
    let stopped = tmux
        .wait_for("bc", "the backend stopped", |s| {
            let rows = worker_rows(s);
            !rows.is_empty() && rows.iter().all(|row| row.contains("interrupted"))
        })
        .await;
    assert!(stopped.contains("press Ctrl-C again to quit"), "{stopped}");
    // Still stopped a while later: no spinner comes back.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let later = tmux.capture("bc");
    let rows = worker_rows(&later);
    assert!(
        !rows.is_empty() && rows.iter().all(|row| !spinning(row)),
        "a worker still spins after Ctrl-C:\n{later}"
    );

    // Quitting says how to come back.
    tmux.text("bc", "/quit");
    tmux.keys("bc", &["Enter"]);
    tmux.wait_for("bc", "the session to end", |_| tmux.pane_dead("bc"))
        .await;
    // Captured once the pane is dead: the screen the person is left with (the last capture
    // of the wait may predate the exit).
    let left = tmux.capture("bc");
    eprintln!("after quitting:\n{}", left.trim());
    assert!(left.contains("braincode --continue"), "{left}");

    // Reopened: the interrupted run's worker is shown stopped, not running.
    let conf = tmux._dir.path().join("tmux.conf");
    tmux.new_session(
        "again",
        &home,
        repo.path(),
        &["tui", "--continue", "--read-only"],
        "off",
        &conf,
    );
    let reopened = tmux
        .wait_for("again", "the reopened session", |s| {
            s.contains("Explain what src/main.rs does") && !worker_rows(s).is_empty()
        })
        .await;
    eprintln!("reopened:\n{reopened}");
    let rows = worker_rows(&reopened);
    assert!(
        rows.iter()
            .all(|row| !spinning(row) && row.contains("interrupted")),
        "the reopened session shows a running worker:\n{reopened}"
    );
    tmux.keys("again", &["C-c"]);
    tmux.keys("again", &["C-c"]);
}

/// The request of the parallel-writers test, and the primary's answer to it.
const WRITERS_PROMPT: &str = "Add the signup form field and its table";
const WRITERS_ANSWER: &str = "Signup is in: the form field and the table.";

/// Router → backend primary with frontend and dba support writers; each writer edits its
/// file, then reports; the reviewer approves; the primary answers.
fn writers_script() -> Script {
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
            "CREATE TABLE users (email TEXT);",
        ),
    ] {
        script = script.when_fn(Matcher::support(role), move |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, &format!("{role} edited {file}")))
            } else {
                Reply::tool_call(
                    "edit_file",
                    json!({"path": file, "oldString": old, "newString": new}),
                )
            }
        });
    }
    script
        .always(Matcher::review(), review_reply("approved"))
        .always(Matcher::primary(), Reply::text(WRITERS_ANSWER))
}

/// The report card's first line (`  ── approved · 140ms · … ──`): the turn has ended.
fn report_card(line: &str) -> bool {
    line.trim_start().starts_with("── ") && line.trim_end().ends_with(" ──")
}

/// The row of `role`'s worker (`✓ frontend   writer   test/any · merged`): its model after
/// the label, which tells it from the todo of the same role (`✓ frontend task`).
fn role_row<'a>(screen: &'a str, role: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.get(1) == Some(&role) && words.get(3) == Some(&"test/any")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_writers_show_as_writers_merged_and_both_edits_land() {
    if !tmux_or_skip() {
        return;
    }
    let repo = TempRepo::new();
    repo.write("web/form.ts", "export const fields = [];\n");
    repo.write("db/schema.sql", "-- tables\n");
    // The project's check, which each writer runs in its worktree (the project is trusted).
    repo.write("Makefile", "test:\n\t@echo checked in $$(pwd)\n");
    repo.commit("start");
    let server = ScriptedServer::start(writers_script()).await;
    let home = TempHome::new();
    configure_writers(&home, &server);
    braincode_config::trust_project(&braincode_config::Home::at(home.path()), repo.path())
        .expect("trust the project");

    // Writers need the OS sandbox: git runs confined in their worktrees.
    let tmux = Tmux::start(&home, repo.path(), &["tui", "--allow-edits"], "auto");
    tmux.wait_for("bc", "the first frame", |s| s.contains(PLACEHOLDER))
        .await;
    tmux.text("bc", WRITERS_PROMPT);
    tmux.keys("bc", &["Enter"]);
    let screen = tmux
        .wait_for("bc", "the report card", |s| s.lines().any(report_card))
        .await;
    eprintln!("the finished run:\n{screen}");

    for role in ["frontend", "dba"] {
        let row = role_row(&screen, role)
            .unwrap_or_else(|| panic!("no {role} row on the screen:\n{screen}"));
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words.get(2),
            Some(&"writer"),
            "the {role} row does not say writer:\n{screen}"
        );
        assert!(
            row.contains("· merged · checks passed"),
            "the {role} row does not say merged and its checks passed:\n{screen}"
        );
        assert!(
            screen.contains(&format!("{role} writer merged: clean · its checks passed")),
            "the report card does not name {role}'s clean merge and checks:\n{screen}"
        );
    }
    assert!(screen.contains(WRITERS_ANSWER), "{screen}");
    assert!(
        screen.contains("── approved"),
        "the run was not approved:\n{screen}"
    );

    assert_eq!(
        repo.read("web/form.ts"),
        "export const fields = ['email'];\n",
        "the frontend edit is not in the project; the screen:\n{screen}"
    );
    assert_eq!(
        repo.read("db/schema.sql"),
        "CREATE TABLE users (email TEXT);\n",
        "the dba edit is not in the project; the screen:\n{screen}"
    );
    let left: Vec<_> = std::fs::read_dir(repo.path().join(".git/braincode-writers"))
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "worktrees left behind: {left:?}; the screen:\n{screen}"
    );
    let worktrees = repo.git(&["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "git still lists a writer's worktree:\n{worktrees}\nthe screen:\n{screen}"
    );
    tmux.keys("bc", &["C-c"]);
    tmux.keys("bc", &["C-c"]);
}
