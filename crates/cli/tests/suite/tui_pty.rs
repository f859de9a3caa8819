//! `braincode tui` end to end in a real pseudo-terminal, against the scripted model server:
//! the first frame, a request typed into the editor, the approval panel answered with `y` and
//! `n`, the answer on screen, `/quit`, and what is left behind — the exit code, the terminal
//! given back as it was, the files on disk and the journal's approval records.
//!
//! Why `portable-pty` (with a `vt100` screen) rather than `expectrl`: ratatui redraws only the
//! cells that changed, with cursor moves and colour codes between them, so a word a person sees
//! is often not a contiguous run of bytes in the output stream, and an expect-style match on
//! the stream would be fragile. `portable-pty` (maintained with wezterm) gives the pty pair,
//! the child's exit status and the terminal settings (termios) of the pty; our own reader
//! thread feeds every byte to a `vt100` parser, whose screen is what a person would see, and
//! keeps the raw stream for the escape sequences the session must end with.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::run_harness::{configure, review_reply};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use serde_json::{Value, json};

const ROWS: u16 = 30;
const COLS: u16 = 100;
/// The input box's placeholder: on screen from the first frame on.
const PLACEHOLDER: &str = "Ask Braincode";
/// A guard against a hung session, never a timing assertion.
const WAIT: Duration = Duration::from_secs(90);

/// What the reader thread saw.
struct Seen {
    screen: vt100::Parser,
    raw: Vec<u8>,
    eof: bool,
    first_frame: Option<Duration>,
}

/// `braincode` running in a pty of [`ROWS`]×[`COLS`].
struct PtySession {
    child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    /// Kept open until the child is gone: dropping it sends EOT (Ctrl-D), which quits.
    writer: Box<dyn Write + Send>,
    seen: Arc<Mutex<Seen>>,
    reader: Option<JoinHandle<()>>,
    /// The pty's terminal settings before the child started.
    termios_before: String,
}

fn lock(seen: &Mutex<Seen>) -> MutexGuard<'_, Seen> {
    seen.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PtySession {
    /// Starts `braincode args…` in `cwd` for `home` (the harness's environment: no
    /// credentials, an empty model cache) plus `env`.
    fn spawn(home: &TempHome, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> PtySession {
        Self::spawn_sized(home, cwd, args, env, (ROWS, COLS))
    }

    /// [`spawn`](Self::spawn) in a pty of `rows`×`cols`.
    fn spawn_sized(
        home: &TempHome,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        (rows, cols): (u16, u16),
    ) -> PtySession {
        let pair = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut command = CommandBuilder::new(env!("CARGO_BIN_EXE_braincode"));
        command.args(args);
        command.cwd(cwd);
        command.env("BRAINCODE_HOME", home.path());
        command.env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"));
        command.env("TERM", "xterm-256color");
        for key in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "RUST_LOG",
            "NO_COLOR",
        ] {
            command.env_remove(key);
        }
        for (key, value) in env {
            command.env(key, value);
        }
        let termios_before = termios(pair.master.as_ref());
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let seen = Arc::new(Mutex::new(Seen {
            screen: vt100::Parser::new(rows, cols, 0),
            raw: Vec::new(),
            eof: false,
            first_frame: None,
        }));
        let started = Instant::now();
        let child = pair.slave.spawn_command(command).unwrap();
        // The child has its own copy; ours would keep the pty open after the child exits.
        drop(pair.slave);
        let shared = Arc::clone(&seen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                // portable-pty reports the slave's EIO (every slave fd closed) as end of file.
                let n = reader.read(&mut buf).unwrap_or(0);
                let mut seen = lock(&shared);
                if n == 0 {
                    seen.eof = true;
                    return;
                }
                seen.screen.process(&buf[..n]);
                seen.raw.extend_from_slice(&buf[..n]);
                if seen.first_frame.is_none()
                    && screen_text(seen.screen.screen()).contains(PLACEHOLDER)
                {
                    seen.first_frame = Some(started.elapsed());
                }
            }
        });
        PtySession {
            child,
            master: pair.master,
            writer,
            seen,
            reader: Some(reader),
            termios_before,
        }
    }

    /// The screen as text, one line per row (`contents()` would join a full-width row to the
    /// next as if it had wrapped, and ratatui writes full-width rows).
    fn screen(&self) -> String {
        screen_text(lock(&self.seen).screen.screen())
    }

    /// Types `bytes` (keys as a terminal sends them).
    fn send(&mut self, bytes: &str) {
        self.writer.write_all(bytes.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    /// Waits (at most [`WAIT`]) until the screen satisfies `ready`; returns that screen.
    async fn wait_for(&mut self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            let exited = self.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "waiting for {what}: {}\n--- screen ---\n{screen}\n--- last output ---\n{}",
                    match exited {
                        Some(status) => format!("braincode exited ({status:?})"),
                        None => "it never came".to_string(),
                    },
                    self.tail(3000)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until the screen shows `text`.
    async fn wait_for_text(&mut self, text: &str) -> String {
        self.wait_for(&format!("{text:?} on screen"), |s| s.contains(text))
            .await
    }

    /// Waits (at most [`WAIT`]) for the child to exit; its exit code.
    async fn wait_exit(&mut self) -> u32 {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.exit_code();
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "braincode did not exit\n--- screen ---\n{}\n--- last output ---\n{}",
                    self.screen(),
                    self.tail(3000)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Once the child exited: waits for the end of its output; the whole raw stream.
    async fn finish_output(&mut self) -> Vec<u8> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !lock(&self.seen).eof {
            assert!(
                Instant::now() < deadline,
                "the pty stayed open after braincode exited"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        lock(&self.seen).raw.clone()
    }

    /// The end of the raw output, escapes visible.
    fn tail(&self, bytes: usize) -> String {
        let seen = lock(&self.seen);
        let start = seen.raw.len().saturating_sub(bytes);
        String::from_utf8_lossy(&seen.raw[start..])
            .escape_debug()
            .to_string()
    }

    fn first_frame(&self) -> Option<Duration> {
        lock(&self.seen).first_frame
    }
}

impl Drop for PtySession {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

/// Every row of `screen`, trailing blanks trimmed.
fn screen_text(screen: &vt100::Screen) -> String {
    let (_, cols) = screen.size();
    screen
        .rows(0, cols)
        .map(|row| row.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pty's terminal settings (read through the master: Linux answers with the slave's).
fn termios(master: &dyn MasterPty) -> String {
    format!("{:?}", master.get_termios().expect("the pty's termios"))
}

/// The position after the last occurrence of `needle` in `haystack`.
fn last_end(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .rposition(|w| w == needle)
        .map(|i| i + needle.len())
}

/// Asserts the last `leave` comes after the last `enter` (and that there is one).
fn assert_left(raw: &[u8], enter: &str, leave: &str, what: &str) {
    let entered = last_end(raw, enter.as_bytes());
    let left = last_end(raw, leave.as_bytes());
    assert!(entered.is_some(), "the session never turned on {what}");
    assert!(
        left > entered,
        "{what} was not turned off at the end ({leave:?} at {left:?}, {enter:?} at {entered:?})"
    );
}

/// Every `tool_approval_decision` record of every session journal in `home`.
fn approval_records(home: &TempHome) -> Vec<Value> {
    let dir = home.path().join("sessions");
    let mut records = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if record["type"] == "tool_approval_decision" {
                records.push(record);
            }
        }
    }
    records
}

/// The router picks the backend alone.
fn router_plan() -> Reply {
    Reply::json(&json!({
        "role": "backend",
        "workers": [
            {"role": "backend", "goal": "Change the greeting and add the hooks file", "reason": "code change"}
        ],
        "todos": [
            {"id": "build-backend", "title": "Change the greeting", "role": "backend"}
        ],
        "dependencies": [],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.9,
        "reason": "a small change in one file"
    }))
}

const PROMPT: &str = "Change the greeting in src/main.rs and add an empty agent hooks file";
const OLD_MAIN: &str = "fn main() {\n    println!(\"hello\");\n}\n";
const NEW_MAIN: &str = "fn main() {\n    println!(\"hello from the pty\");\n}\n";
const HOOKS: &str = "{\"hooks\": {}}\n";
/// Distinctive words of the final answer.
const ANSWER: &str = "Greeting updated and hooks file written";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_a_pty_asks_a_person_and_gives_the_terminal_back() {
    let repo = TempRepo::new();
    repo.write("src/main.rs", OLD_MAIN);
    repo.commit("main");
    let marker = repo.path().join("denied-command-ran");

    // The backend, offered tools: an ordinary edit (approved by --yes), a protected one (a
    // person: `y`), a command with no OS sandbox (a person: `n`), then its answer.
    let primary = Matcher::model("backend").and(Matcher::tool_offered("edit_file"));
    let script = Script::new()
        .always(Matcher::model("router"), router_plan())
        .when(
            primary,
            [
                Reply::tool_call(
                    "edit_file",
                    json!({"path": "src/main.rs", "oldString": "\"hello\"", "newString": "\"hello from the pty\""}),
                ),
                Reply::tool_call(
                    "edit_file",
                    json!({"path": ".agents/hooks.json", "content": HOOKS}),
                ),
                Reply::tool_call(
                    "shell",
                    json!({"command": format!("touch {}", marker.display())}),
                ),
                Reply::text(format!("{ANSWER}; the command was not run.")),
            ],
        )
        .always(Matcher::model("review"), review_reply("approved"))
        .always(Matcher::Any, Reply::text("ok"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);

    let mut tui = PtySession::spawn(
        &home,
        repo.path(),
        &["tui", "--yes"],
        &[("BRAINCODE_SANDBOX", "off")],
    );
    tui.wait_for_text(PLACEHOLDER).await;
    let first_frame = tui.first_frame().unwrap();
    eprintln!(
        "first frame (spawn → {PLACEHOLDER:?} on screen): {:.1} ms",
        first_frame.as_secs_f64() * 1000.0
    );
    let raw_mode = termios(tui.master.as_ref());
    assert_ne!(
        raw_mode, tui.termios_before,
        "the session runs the terminal in raw mode"
    );

    tui.send(PROMPT);
    tui.wait_for_text("empty agent hooks file").await;
    tui.send("\r");

    let panel = tui.wait_for_text("Allow edit_file to change files?").await;
    assert!(panel.contains(".agents/hooks.json"), "{panel}");
    assert!(panel.contains("allow once"), "{panel}");
    assert!(
        std::fs::read_to_string(repo.path().join("src/main.rs")).unwrap() == NEW_MAIN,
        "the ordinary edit ran before the protected one was asked"
    );
    assert!(!repo.path().join(".agents/hooks.json").exists());
    tui.send("y");

    let panel = tui.wait_for_text("Allow shell to run a command?").await;
    assert!(panel.contains("denied-command-ran"), "{panel}");
    tui.send("n");

    let done = tui
        .wait_for(&format!("the answer {ANSWER:?} and the report card"), |s| {
            s.contains(ANSWER)
                && s.lines()
                    .any(|l| l.trim_start().starts_with("── ") && l.ends_with(" ──"))
        })
        .await;
    assert!(
        done.lines()
            .any(|l| l.contains("shell touch") && l.ends_with("blocked")),
        "the transcript shows the denied command as blocked:\n{done}"
    );
    tui.send("/quit");
    tui.wait_for_text("/quit").await;
    tui.send("\r");

    let code = tui.wait_exit().await;
    let screen_at_exit = tui.screen();
    let raw = tui.finish_output().await;
    assert_eq!(
        code, 0,
        "braincode tui exited with {code}:\n{screen_at_exit}"
    );

    // The terminal is given back: the alternate screen left, bracketed paste off, the cursor
    // not left hidden, and the pty's settings (raw mode) as they were before the session.
    assert_left(&raw, "\x1b[?1049h", "\x1b[?1049l", "the alternate screen");
    assert_left(&raw, "\x1b[?2004h", "\x1b[?2004l", "bracketed paste");
    let hidden = last_end(&raw, b"\x1b[?25l");
    assert!(
        hidden.is_none() || last_end(&raw, b"\x1b[?25h") > hidden,
        "the cursor is left hidden"
    );
    assert_eq!(
        termios(tui.master.as_ref()),
        tui.termios_before,
        "the terminal settings are restored"
    );

    // On disk: both approved edits, not the denied command.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/main.rs")).unwrap(),
        NEW_MAIN
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".agents/hooks.json")).unwrap(),
        HOOKS
    );
    assert!(!marker.exists(), "the denied command ran");

    // The journal: who decided what.
    let decisions: Vec<(String, String, String)> = approval_records(&home)
        .iter()
        .map(|r| {
            (
                r["toolName"].as_str().unwrap_or_default().to_string(),
                r["decision"].as_str().unwrap_or_default().to_string(),
                r["approver"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let has = |tool: &str, decision: &str, approver: &str| {
        decisions
            .iter()
            .any(|(t, d, a)| t == tool && d == decision && a == approver)
    };
    assert!(
        has("edit_file", "auto_approved", "mode_policy"),
        "{decisions:?}"
    );
    assert!(has("edit_file", "approved", "human"), "{decisions:?}");
    // A person's `n` is journaled as `blocked` (`denied` is a permission rule's refusal).
    assert!(has("shell", "blocked", "human"), "{decisions:?}");
    assert!(
        !decisions.iter().any(|(_, d, _)| d == "denied"),
        "{decisions:?}"
    );
    assert_eq!(
        server.unmatched(),
        0,
        "every model request had a scripted reply"
    );
}

/// A wide session shows the BrainPet, and a brain with a remote `pet` model makes it speak:
/// the model is asked about the running request (here every 250 ms instead of 8 s), its
/// words appear in the panel, and its tokens are journaled with role and phase `pet`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pet_model_speaks_in_the_panel_and_its_tokens_are_counted() {
    let repo = TempRepo::new();
    repo.write("README.md", "# demo\n");
    repo.commit("readme");
    let pet_json =
        json!({"status": "pondering README", "lines": ["scripted pet here", "all calm"]});
    let usage = braincode_protocol::Usage {
        input: 300,
        output: 20,
        total: 320,
        ..Default::default()
    };
    let script = Script::new()
        .always(Matcher::model("router"), router_plan())
        .always(
            Matcher::model("pet"),
            Reply::json(&pet_json).with_usage(usage),
        )
        // The answer waits long enough for the pet to be asked a few times.
        .always(
            Matcher::model("backend"),
            Reply::text("The readme is fine.").delayed(Duration::from_secs(3)),
        )
        .always(Matcher::model("review"), review_reply("approved"))
        .always(Matcher::Any, Reply::text("ok"));
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server, &["test/pet"], &[("pet", vec!["test/pet"])]);

    let mut tui = PtySession::spawn_sized(
        &home,
        repo.path(),
        &["tui"],
        &[
            ("BRAINCODE_SANDBOX", "off"),
            ("BRAINCODE_PET_POLL_MS", "250"),
        ],
        (30, 130),
    );
    tui.wait_for_text(PLACEHOLDER).await;
    assert!(tui.screen().contains("brainpet"), "{}", tui.screen());
    tui.send("Look at the readme");
    tui.wait_for_text("Look at the readme").await;
    tui.send("\r");
    let screen = tui.wait_for_text("pondering README").await;
    assert!(screen.contains("scripted pet here"), "{screen}");
    tui.wait_for_text("The readme is fine.").await;
    // Answered: the pet is idle again, whatever its model said.
    tui.wait_for_text("waiting for prompt").await;
    tui.send("/quit");
    tui.wait_for_text("/quit").await;
    tui.send("\r");
    assert_eq!(tui.wait_exit().await, 0);

    let pet_calls = server
        .chat_requests()
        .iter()
        .filter(|r| r.model() == Some("pet"))
        .count();
    assert!(pet_calls >= 1);
    let pet_usage: Vec<Value> = std::fs::read_dir(home.path().join("sessions"))
        .unwrap()
        .flat_map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .filter(|r| r["type"] == "token_usage" && r["role"] == "pet")
        .collect();
    assert_eq!(
        pet_usage.len(),
        pet_calls,
        "one record per pet call: {pet_usage:?}"
    );
    assert!(
        pet_usage
            .iter()
            .all(|r| r["phase"] == "pet" && r["usage"]["input"] == 300)
    );
}
