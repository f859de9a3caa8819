//! The permission + approval gate: a policy `deny` is final whatever the mode; everything else
//! is decided by the mode, the runtime policy, or a person — and journaled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use braincode_llm::ToolCall;
use braincode_protocol::{ApprovalDecision, Approver, Mode, Record, ToolCallOrigin};
use braincode_runtime::PolicyGate;
use braincode_runtime::{
    ApprovalAnswer, ApprovalHandler, ApprovalRequest, MemoryJournal, PermissionMode, RunSink,
};
use braincode_runtime::{GateOutcome, GateRequest, ToolGate};
use braincode_tools::{
    PermissionPolicy, PermissionsConfig, Tool, ToolContext, ToolDefinition, ToolPermission,
    ToolRisk,
};
use serde_json::{Value, json};

fn tool(name: &str, permission: ToolPermission) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        permission,
        risk: ToolRisk::Medium,
    }
}

struct Scripted {
    answers: Mutex<Vec<ApprovalAnswer>>,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl ApprovalHandler for Scripted {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request.tool_name.clone());
        self.answers.lock().unwrap().remove(0)
    }
}

struct Gate {
    gate: PolicyGate,
    journal: MemoryJournal,
    _root: tempfile::TempDir,
}

fn gate(mode: Mode, permission: PermissionMode, handler: Option<Arc<dyn ApprovalHandler>>) -> Gate {
    gate_with(mode, permission, handler, true)
}

fn gate_with(
    mode: Mode,
    permission: PermissionMode,
    handler: Option<Arc<dyn ApprovalHandler>>,
    sandboxed: bool,
) -> Gate {
    let root = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::default();
    let sink = RunSink::new("s", Some(Box::new(journal.clone())), Vec::new());
    let gate = PolicyGate::new(
        PermissionPolicy::default(),
        root.path().to_path_buf(),
        mode,
        permission,
        handler,
        sink,
        sandboxed,
    );
    Gate {
        gate,
        journal,
        _root: root,
    }
}

async fn check(gate: &PolicyGate, definition: &ToolDefinition, arguments: Value) -> GateOutcome {
    let call = ToolCall::from_raw("call-1", definition.name.clone(), arguments.to_string());
    let origin = ToolCallOrigin::default();
    gate.check(GateRequest {
        call: &call,
        tool: definition,
        origin: &origin,
    })
    .await
}

fn decisions(journal: &MemoryJournal) -> Vec<(ApprovalDecision, Approver)> {
    journal
        .entries()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::ToolApprovalDecision(d) => Some((d.decision, d.approver)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_policy_deny_wins_over_yes_radical_and_a_person() {
    let shell = tool("shell", ToolPermission::Execute);
    let handler: Arc<dyn ApprovalHandler> = Arc::new(Scripted {
        answers: Mutex::new(vec![ApprovalAnswer::Approve]),
        asked: Mutex::new(Vec::new()),
    });
    for (mode, permission, handler) in [
        (Mode::Auto, PermissionMode::Yes, None),
        (Mode::Radical, PermissionMode::Yes, None),
        (Mode::Auto, PermissionMode::ReadOnly, Some(handler.clone())),
    ] {
        let g = gate(mode, permission, handler);
        for command in [
            "git push origin main",
            "sh -c 'git push'",
            "ls && rm -rf build",
        ] {
            let outcome = check(&g.gate, &shell, json!({"command": command})).await;
            match outcome {
                GateOutcome::Refuse(message) => {
                    assert!(message.contains("Permission policy denied"), "{message}");
                }
                GateOutcome::Allow => panic!("{command} was allowed under {mode:?}/{permission:?}"),
            }
        }
        assert!(
            decisions(&g.journal)
                .iter()
                .all(|d| *d == (ApprovalDecision::Denied, Approver::PermissionPolicy))
        );
    }
}

#[tokio::test]
async fn without_an_approver_risky_calls_are_blocked_and_reads_pass() {
    let g = gate(Mode::Auto, PermissionMode::ReadOnly, None);
    let read = tool("read_file", ToolPermission::Read);
    assert_eq!(
        check(&g.gate, &read, json!({"path": "a.txt"})).await,
        GateOutcome::Allow
    );
    let shell = tool("shell", ToolPermission::Execute);
    let GateOutcome::Refuse(message) = check(&g.gate, &shell, json!({"command": "ls"})).await
    else {
        panic!("a command ran without approval");
    };
    assert!(
        message.contains("--yes"),
        "the refusal says how to allow it: {message}"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![(ApprovalDecision::Blocked, Approver::RuntimePolicy)]
    );
}

#[tokio::test]
async fn edits_mode_approves_edits_and_sandboxed_commands_only() {
    let g = gate(Mode::Auto, PermissionMode::AllowEdits, None);
    let edit = tool("edit_file", ToolPermission::Write);
    assert_eq!(
        check(
            &g.gate,
            &edit,
            json!({"path": "src/lib.rs", "content": "x"})
        )
        .await,
        GateOutcome::Allow
    );
    let shell = tool("shell", ToolPermission::Execute);
    // Inside the OS sandbox an ordinary command runs without asking...
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "cargo build"})).await,
        GateOutcome::Allow
    );
    // ...one the policy cannot follow does not: nobody is here to ask, so it is refused.
    let GateOutcome::Refuse(message) =
        check(&g.gate, &shell, json!({"command": "c=true; $c"})).await
    else {
        panic!("an unanalysable command ran in edits mode");
    };
    assert!(message.contains("nobody can approve it"), "{message}");
    assert_eq!(
        decisions(&g.journal),
        vec![
            (ApprovalDecision::Approved, Approver::RuntimePolicy),
            (ApprovalDecision::Approved, Approver::RuntimePolicy),
            (ApprovalDecision::Blocked, Approver::RuntimePolicy)
        ]
    );
    // Without the sandbox every command needs a person, edits mode or not.
    let unconfined = gate_with(Mode::Auto, PermissionMode::AllowEdits, None, false);
    let GateOutcome::Refuse(message) =
        check(&unconfined.gate, &shell, json!({"command": "cargo build"})).await
    else {
        panic!("an unconfined command ran in edits mode");
    };
    assert!(
        message.contains("the OS sandbox is not available"),
        "{message}"
    );
}

/// Records every request a person is shown, answering from a script.
struct Captured {
    answers: Mutex<Vec<ApprovalAnswer>>,
    shown: Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl ApprovalHandler for Captured {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.shown.lock().unwrap().push(request.clone());
        self.answers.lock().unwrap().remove(0)
    }
}

#[tokio::test]
async fn ask_mode_asks_for_every_edit_and_command_and_a_remembers_per_tool() {
    let person = Arc::new(Captured {
        answers: Mutex::new(vec![
            ApprovalAnswer::ApproveForSession,
            ApprovalAnswer::Block("not that".into()),
            ApprovalAnswer::Approve,
        ]),
        shown: Mutex::new(Vec::new()),
    });
    let g = gate(Mode::Auto, PermissionMode::Ask, Some(person.clone()));
    let edit = tool("edit_file", ToolPermission::Write);
    let shell = tool("shell", ToolPermission::Execute);
    let read = tool("read_file", ToolPermission::Read);
    let lib = json!({"path": "src/lib.rs", "content": "x"});
    // Reading never asks.
    assert_eq!(
        check(&g.gate, &read, json!({"path": "src/lib.rs"})).await,
        GateOutcome::Allow
    );
    // The first edit asks; `a` approves later edits for the session.
    assert_eq!(check(&g.gate, &edit, lib.clone()).await, GateOutcome::Allow);
    assert_eq!(check(&g.gate, &edit, lib.clone()).await, GateOutcome::Allow);
    // A command asks even inside the sandbox, and edits' `a` does not cover it.
    assert!(matches!(
        check(&g.gate, &shell, json!({"command": "cargo build"})).await,
        GateOutcome::Refuse(reason) if reason.contains("not that")
    ));
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "make all"})).await,
        GateOutcome::Allow
    );
    {
        // Scoped, not dropped: clippy's await_holding_lock does not follow `drop`.
        let shown = person.shown.lock().unwrap();
        let tools: Vec<&str> = shown.iter().map(|r| r.tool_name.as_str()).collect();
        assert_eq!(tools, ["edit_file", "shell", "shell"]);
        assert!(shown.iter().all(|r| r.once_only.is_none()));
    }

    // Nobody to ask: ask mode changes nothing, and says how to allow it.
    let alone = gate(Mode::Auto, PermissionMode::Ask, None);
    let GateOutcome::Refuse(message) = check(&alone.gate, &edit, lib).await else {
        panic!("an edit ran in ask mode with nobody to ask");
    };
    assert!(message.contains("approve it in the TUI"), "{message}");
}

#[tokio::test]
async fn radical_mode_auto_approves_and_review_rules_raise_the_flag() {
    let g = gate(Mode::Radical, PermissionMode::AllowEdits, None);
    let edit = tool("edit_file", ToolPermission::Write);
    assert!(!g.gate.review_required());
    // `src/x/../auth/a.ts` resolves into src/auth/**, a review-required default rule.
    assert_eq!(
        check(
            &g.gate,
            &edit,
            json!({"path": "src/x/../auth/a.ts", "content": "x"})
        )
        .await,
        GateOutcome::Allow
    );
    assert!(
        g.gate.review_required(),
        "a review-required rule forces a review worker"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![(ApprovalDecision::AutoApproved, Approver::ModePolicy)]
    );
}

#[tokio::test]
async fn a_person_approves_once_for_the_session_or_blocks() {
    let handler = Arc::new(Scripted {
        answers: Mutex::new(vec![
            ApprovalAnswer::Block("not now".into()),
            ApprovalAnswer::ApproveForSession,
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let g = gate(Mode::Auto, PermissionMode::ReadOnly, Some(handler.clone()));
    let shell = tool("shell", ToolPermission::Execute);
    let GateOutcome::Refuse(message) =
        check(&g.gate, &shell, json!({"command": "cargo build"})).await
    else {
        panic!("blocked call ran");
    };
    assert!(message.contains("not now"));
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "cargo build"})).await,
        GateOutcome::Allow
    );
    assert_eq!(
        check(&g.gate, &shell, json!({"command": "cargo check"})).await,
        GateOutcome::Allow
    );
    assert_eq!(
        handler.asked.lock().unwrap().len(),
        2,
        "the session approval is not asked again"
    );
    assert_eq!(
        decisions(&g.journal),
        vec![
            (ApprovalDecision::Blocked, Approver::Human),
            (ApprovalDecision::Approved, Approver::Human),
            (ApprovalDecision::Approved, Approver::Human),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Attacks that really run: the gate under `--yes` in front of the real tools, in a temporary
// clone with a local bare remote and a 127.0.0.1 hit counter. Each asserts the side effect did
// not happen.
// ---------------------------------------------------------------------------------------------

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use braincode_tools::exec::{ExecCommand, Shell, WriteStdin};
use braincode_tools::fs::apply_patch::ApplyPatch;
use braincode_tools::fs::edit_file::EditFile;
use braincode_tools::script::RunScript;
use braincode_tools::{ExecLimits, ExecSessions};
use tokio_util::sync::CancellationToken;

/// Counts TCP connections to 127.0.0.1:port; stops by itself after two minutes or on drop.
struct HitServer {
    port: u16,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl HitServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (counter, stopped) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stopped.load(Ordering::SeqCst) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((mut stream, _)) => {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut buffer = [0u8; 1024];
                        let _ = stream.read(&mut buffer);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Self { port, hits, stop }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hit", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for HitServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn run_git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A clone of a local bare remote, with a committed `.env`.
struct Lab {
    _dir: tempfile::TempDir,
    remote: PathBuf,
    project: PathBuf,
}

impl Lab {
    fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let remote = base.join("remote.git");
        run_git(&base, &["init", "-q", "--bare", "remote.git"]);
        run_git(&base, &["clone", "-q", "remote.git", "project"]);
        let project = base.join("project");
        let lab = Self {
            _dir: dir,
            remote,
            project,
        };
        lab.write(".env", "SECRET=1\n");
        for (name, body) in files {
            lab.write(name, body);
        }
        run_git(&lab.project, &["add", "-A"]);
        run_git(&lab.project, &["commit", "-q", "-m", "initial"]);
        run_git(
            &lab.project,
            &["push", "-q", "origin", "HEAD:refs/heads/main"],
        );
        lab
    }

    fn write(&self, name: &str, body: &str) {
        let path = self.project.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.project.join(name)).ok()
    }

    /// Branches on the remote other than main.
    fn pushed_branches(&self) -> Vec<String> {
        run_git(&self.remote, &["branch", "--list"])
            .lines()
            .map(|line| line.trim_start_matches(['*', ' ']).to_string())
            .filter(|name| name != "main")
            .collect()
    }

    fn context(&self) -> ToolContext {
        ToolContext {
            project_root: self.project.clone(),
            cancel: CancellationToken::new(),
            sandbox: None,
            editor: None,
            lazy: None,
        }
    }

    /// A context with the OS sandbox (`git apply` runs only in one).
    fn sandboxed_context(&self) -> ToolContext {
        let home = self.project.with_file_name("no-braincode-home");
        let policy = braincode_sandbox::SandboxPolicy::for_project(&self.project, None, &home);
        ToolContext {
            sandbox: Some(Arc::new(braincode_sandbox::Sandbox::new(policy).unwrap())),
            ..self.context()
        }
    }
}

/// The policy the attacks targeted: the defaults plus `curl` and `.env` denied.
fn attack_policy() -> PermissionPolicy {
    let config: PermissionsConfig = serde_json::from_value(json!({
        "paths": [{"pattern": ".env", "edit": "deny"}],
        "commands": [{"pattern": "curl", "policy": "deny"}]
    }))
    .unwrap();
    PermissionPolicy::new(&config).unwrap()
}

struct Armed {
    gate: PolicyGate,
    journal: MemoryJournal,
}

fn armed(
    lab: &Lab,
    mode: Mode,
    permission: PermissionMode,
    handler: Option<Arc<dyn ApprovalHandler>>,
    sandboxed: bool,
) -> Armed {
    let journal = MemoryJournal::default();
    let sink = RunSink::new("s", Some(Box::new(journal.clone())), Vec::new());
    Armed {
        gate: PolicyGate::new(
            attack_policy(),
            lab.project.clone(),
            mode,
            permission,
            handler,
            sink,
            sandboxed,
        ),
        journal,
    }
}

/// Asks the gate, and runs the real tool when it allows; returns the refusal, if any.
async fn attempt(
    gate: &PolicyGate,
    lab: &Lab,
    tool: &dyn Tool,
    arguments: Value,
) -> Result<String, String> {
    match check(gate, tool.definition(), arguments.clone()).await {
        GateOutcome::Refuse(message) => Err(message),
        GateOutcome::Allow => {
            let context = if tool.definition().name == "apply_patch" {
                lab.sandboxed_context()
            } else {
                lab.context()
            };
            Ok(tool.call(arguments, &context).await.content)
        }
    }
}

fn yes(
    handler: Option<Arc<dyn ApprovalHandler>>,
) -> (Mode, PermissionMode, Option<Arc<dyn ApprovalHandler>>) {
    (Mode::Auto, PermissionMode::Yes, handler)
}

#[tokio::test]
async fn shell_attacks_under_yes_do_not_run() {
    let server = HitServer::start();
    let url = server.url();
    let lab = Lab::new(&[
        ("notes.txt", "hello\n"),
        (
            "Makefile",
            &format!(".RECIPEPREFIX = >\nall:\n> curl -s {url} ; touch made.marker\n"),
        ),
    ]);
    let shell = Shell::default();
    let push = |branch: &str| format!("git push -q origin HEAD:refs/heads/{branch}");
    let attacks: Vec<Value> = vec![
        json!({"command": push("confused"), "cmd": "true"}),
        json!({"cmd": "true", "command": push("confused2")}),
        json!({"command": format!("c='{}'; $c", push("var"))}),
        json!({"command": format!("IFS=,; c=git,push,-q,origin,HEAD:refs/heads/ifs; $c")}),
        json!({"command": format!("env -S'{}'", push("envs"))}),
        json!({"command": format!("trap -- 'curl -s {url}' EXIT")}),
        json!({"command": format!("python3 <<EOF\nimport os\nos.system('curl -s {url}')\nEOF")}),
        json!({"command": format!("sed '1e curl -s {url}' notes.txt")}),
        json!({"command": format!("chrt -o 0 curl -s {url}")}),
        json!({"command": "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p -q origin HEAD:refs/heads/alias"}),
        json!({"command": "git config alias.p push && git p -q origin HEAD:refs/heads/alias2"}),
        json!({"command": format!("x='a[$(curl -s {url})]'; [[ $x -eq 0 ]]")}),
        json!({"command": "make all"}),
        json!({"command": "sed -i s/SECRET/LEAKED/ .env"}),
        json!({"command": "cp notes.txt .env"}),
        json!({"command": format!("{}true{}", "{ ".repeat(20_000), "; }".repeat(20_000))}),
    ];
    for sandboxed in [false, true] {
        let (mode, permission, handler) = yes(None);
        let armed = armed(&lab, mode, permission, handler, sandboxed);
        for arguments in &attacks {
            let outcome = attempt(&armed.gate, &lab, &shell, arguments.clone()).await;
            let Err(message) = outcome else {
                panic!("ran (sandboxed: {sandboxed}): {arguments}");
            };
            // Every one of these names a denied command or path somewhere: denied outright,
            // whatever the mode, and also inside the sandbox.
            assert!(
                message.contains("Permission policy denied"),
                "{arguments}: {message}"
            );
        }
        assert!(
            decisions(&armed.journal)
                .iter()
                .all(|(decision, _)| *decision != ApprovalDecision::AutoApproved || sandboxed),
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.hits(), 0, "a denied command reached the network");
    assert!(
        lab.pushed_branches().is_empty(),
        "pushed: {:?}",
        lab.pushed_branches()
    );
    assert_eq!(lab.read(".env").as_deref(), Some("SECRET=1\n"));
    assert!(lab.read("made.marker").is_none());
    assert!(
        !run_git(&lab.project, &["config", "--list", "--local"]).contains("alias.p"),
        "git config ran"
    );
}

#[tokio::test]
async fn without_the_sandbox_yes_does_not_approve_commands() {
    let lab = Lab::new(&[]);
    let (mode, permission, handler) = yes(None);
    let armed = armed(&lab, mode, permission, handler, false);
    let shell = Shell::default();
    let Err(message) = attempt(&armed.gate, &lab, &shell, json!({"command": "git status"})).await
    else {
        panic!("a command ran unconfined under --yes");
    };
    assert!(
        message.contains("the OS sandbox is not available"),
        "{message}"
    );
    let reasons: Vec<String> = armed
        .journal
        .entries()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::ToolApprovalDecision(d) => d.reason,
            _ => None,
        })
        .collect();
    assert!(
        reasons[0].contains("the OS sandbox is not available"),
        "{reasons:?}"
    );
    // With the sandbox, the same call is approved by --yes, and an unanalysable one says why.
    let armed = armed_sandboxed(&lab);
    assert!(
        attempt(&armed.gate, &lab, &shell, json!({"command": "git status"}))
            .await
            .is_ok()
    );
    assert!(
        attempt(&armed.gate, &lab, &shell, json!({"command": "c=true; $c"}))
            .await
            .is_ok()
    );
    let reasons: Vec<String> = armed
        .journal
        .entries()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::ToolApprovalDecision(d) => d.reason,
            _ => None,
        })
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r == "auto-approved: unanalysable, runs only inside the OS sandbox"),
        "{reasons:?}"
    );
}

fn armed_sandboxed(lab: &Lab) -> Armed {
    let (mode, permission, handler) = yes(None);
    armed(lab, mode, permission, handler, true)
}

#[tokio::test]
async fn typing_a_command_in_two_pieces_does_not_push() {
    let lab = Lab::new(&[]);
    let sessions = Arc::new(ExecSessions::new(ExecLimits::default()));
    let exec = ExecCommand::new(sessions.clone());
    let stdin = WriteStdin::new(sessions.clone());
    for sandboxed in [false, true] {
        let (mode, permission, handler) = yes(None);
        let armed = armed(&lab, mode, permission, handler, sandboxed);
        // The session itself: refused without the sandbox; with it, a bash reading stdin is
        // unanalysable and auto-approved (it runs confined).
        let started = attempt(
            &armed.gate,
            &lab,
            &exec,
            json!({"cmd": "bash", "background": true, "yieldTimeMs": 200}),
        )
        .await;
        let session = match started {
            Ok(_) => sessions.list().last().map_or(1, |s| s.id),
            Err(_) => {
                assert!(!sandboxed);
                // Start one outside the gate so the typing itself is what is tested.
                exec.call(
                    json!({"cmd": "bash", "background": true, "yieldTimeMs": 200}),
                    &lab.context(),
                )
                .await;
                sessions.list().last().unwrap().id
            }
        };
        let first = attempt(
            &armed.gate,
            &lab,
            &stdin,
            json!({"sessionId": session, "chars": "git pu", "yieldTimeMs": 100}),
        )
        .await;
        assert_eq!(first.is_ok(), sandboxed, "{first:?}");
        let second = attempt(
            &armed.gate,
            &lab,
            &stdin,
            json!({"sessionId": session, "chars": "sh -q origin HEAD:refs/heads/typed\n", "yieldTimeMs": 500}),
        )
        .await;
        let Err(message) = second else {
            panic!("the second piece was typed");
        };
        if sandboxed {
            assert!(message.contains("Permission policy denied"), "{message}");
        }
    }
    for session in sessions.list() {
        let _ = sessions.kill(session.id, 1000).await;
    }
    assert!(
        lab.pushed_branches().is_empty(),
        "pushed: {:?}",
        lab.pushed_branches()
    );
}

#[tokio::test]
async fn run_script_attacks_do_not_run() {
    let server = HitServer::start();
    let url = server.url();
    let lab = Lab::new(&[
        ("package.json", r#"{"scripts": {"test": "echo tests"}}"#),
        (".npmrc", "script-shell=./evil.sh\n"),
        (
            "evil.sh",
            &format!("#!/bin/sh\ncurl -s {url}\ntouch npm.marker\n"),
        ),
        (
            "Makefile",
            &format!(".RECIPEPREFIX = >\nall:\n> curl -s {url}; touch make.marker\n"),
        ),
    ]);
    let run_script = RunScript::default();
    for sandboxed in [false, true] {
        let (mode, permission, handler) = yes(None);
        let armed = armed(&lab, mode, permission, handler, sandboxed);
        for script in ["test", "make:all"] {
            let outcome = attempt(&armed.gate, &lab, &run_script, json!({"script": script})).await;
            if !sandboxed {
                assert!(outcome.is_err(), "{script} ran without the sandbox");
            }
            // Inside the sandbox these may run (the sandbox is what confines them); this test
            // only runs them unsandboxed for real.
            if sandboxed {
                break;
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.hits(), 0);
    assert!(lab.read("npm.marker").is_none() && lab.read("make.marker").is_none());
}

#[tokio::test]
async fn protected_edits_need_a_person_for_each_call() {
    let lab = Lab::new(&[]);
    std::fs::hard_link(lab.project.join(".env"), lab.project.join("notes.txt")).unwrap();
    let config_before = lab.read(".git/config").unwrap();
    let edit = EditFile::default();
    let patch = ApplyPatch::default();
    let symlink_patch = "diff --git a/link b/link\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
    let cases: Vec<(&dyn Tool, Value)> = vec![
        (
            &edit,
            json!({"path": ".git/config", "content": "[alias]\n\tp = push\n"}),
        ),
        (
            &edit,
            json!({"path": ".agents/hooks.json", "content": "{}"}),
        ),
        (
            &edit,
            json!({"path": "notes.txt", "content": "SECRET=stolen\n"}),
        ),
        (&patch, json!({"patch": symlink_patch})),
    ];
    for (mode, permission) in [
        (Mode::Auto, PermissionMode::Yes),
        (Mode::Auto, PermissionMode::AllowEdits),
        (Mode::Radical, PermissionMode::Yes),
    ] {
        for sandboxed in [false, true] {
            let armed = armed(&lab, mode, permission, None, sandboxed);
            for (tool, arguments) in &cases {
                let Err(message) = attempt(&armed.gate, &lab, *tool, arguments.clone()).await
                else {
                    panic!("{arguments} ran under {mode:?}/{permission:?}");
                };
                assert!(
                    message.contains("only a person can approve this"),
                    "{message}"
                );
            }
        }
    }
    assert_eq!(lab.read(".git/config").unwrap(), config_before);
    assert!(lab.read(".agents/hooks.json").is_none());
    assert_eq!(lab.read(".env").as_deref(), Some("SECRET=1\n"));
    assert!(std::fs::symlink_metadata(lab.project.join("link")).is_err());

    // A person approves one call; "for the session" counts once and is not remembered.
    let handler = Arc::new(Scripted {
        answers: Mutex::new(vec![
            ApprovalAnswer::ApproveForSession,
            ApprovalAnswer::Block("no".into()),
            ApprovalAnswer::Approve,
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let armed = armed(
        &lab,
        Mode::Auto,
        PermissionMode::Yes,
        Some(handler.clone()),
        true,
    );
    let hooks = json!({"path": ".agents/hooks.json", "content": "{\"x\": 1}"});
    assert!(!armed.gate.person_approved_protected("call-1"));
    assert!(
        attempt(&armed.gate, &lab, &edit, hooks.clone())
            .await
            .is_ok()
    );
    // What the person approved is not a change for the protected-path check to undo.
    assert!(armed.gate.person_approved_protected("call-1"));
    assert_eq!(
        lab.read(".agents/hooks.json").as_deref(),
        Some("{\"x\": 1}")
    );
    let again = attempt(&armed.gate, &lab, &edit, hooks.clone()).await;
    assert!(again.unwrap_err().contains("blocked by the user"));
    assert!(
        attempt(&armed.gate, &lab, &patch, json!({"patch": symlink_patch}))
            .await
            .is_ok()
    );
    assert!(
        std::fs::symlink_metadata(lab.project.join("link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        handler.asked.lock().unwrap().len(),
        3,
        "each protected call was asked"
    );
    assert!(
        decisions(&armed.journal)
            .iter()
            .all(|(_, approver)| *approver == Approver::Human)
    );
}

#[tokio::test]
async fn a_protected_call_tells_the_person_that_a_approves_it_once() {
    let lab = Lab::new(&[]);
    let person = Arc::new(Captured {
        answers: Mutex::new(vec![
            ApprovalAnswer::ApproveForSession,
            ApprovalAnswer::Block("no".into()),
        ]),
        shown: Mutex::new(Vec::new()),
    });
    let armed = armed(
        &lab,
        Mode::Auto,
        PermissionMode::Ask,
        Some(person.clone()),
        true,
    );
    let edit = EditFile::default();
    let hooks = json!({"path": ".agents/hooks.json", "content": "{}"});
    assert!(
        attempt(&armed.gate, &lab, &edit, hooks.clone())
            .await
            .is_ok()
    );
    // `a` was not remembered: the next protected call asks again.
    assert!(attempt(&armed.gate, &lab, &edit, hooks).await.is_err());
    let shown = person.shown.lock().unwrap();
    assert_eq!(shown.len(), 2);
    let request = &shown[0];
    let once = request.once_only.as_deref().unwrap_or_default();
    assert!(once.contains("never for the session"), "{once:?}");
    // One reason per line, none glued to the next ("the TUI will askask (review required)").
    for line in request.policy_summary.lines() {
        assert!(!line.contains("TUI will ask"), "{line}");
    }
    assert!(
        request.policy_summary.lines().count() >= 2,
        "{}",
        request.policy_summary
    );
}

/// Records what a person was shown.
struct Shown(Mutex<Vec<String>>);

#[async_trait]
impl ApprovalHandler for Shown {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalAnswer {
        self.0.lock().unwrap().push(request.policy_summary.clone());
        ApprovalAnswer::Block("no".into())
    }
}

#[tokio::test]
async fn a_person_is_told_why_they_are_asked_and_what_the_command_runs() {
    let shell = tool("shell", ToolPermission::Execute);
    let shown = Arc::new(Shown(Mutex::new(Vec::new())));
    // No sandbox: every command needs a person, and the panel says so.
    let g = gate_with(Mode::Auto, PermissionMode::Yes, Some(shown.clone()), false);
    let outcome = check(
        &g.gate,
        &shell,
        json!({"command": "cd src && ls -la | wc -l"}),
    )
    .await;
    assert!(matches!(outcome, GateOutcome::Refuse(_)));
    let summaries = shown.0.lock().unwrap().clone();
    assert_eq!(summaries.len(), 1);
    let summary = &summaries[0];
    assert!(summary.contains("sandbox"), "{summary}");
    for part in ["cd src", "ls -la", "wc -l"] {
        assert!(summary.contains(part), "{part} missing from: {summary}");
    }
}

/// An untrusted project's checks are its own code: neither `--yes` nor `--allow-edits`
/// approves them; a person is asked (and told why); once the project is trusted,
/// `--allow-edits` runs them with nobody asked.
#[tokio::test]
async fn an_untrusted_projects_checks_need_a_person_whatever_the_mode() {
    let checks = tool(braincode_runtime::CHECK_TOOL, ToolPermission::Execute);
    let args = json!({"command": "npm run test", "scripts": ["npm run test"]});
    for permission in [PermissionMode::Yes, PermissionMode::AllowEdits] {
        let untrusted = gate(Mode::Auto, permission, None);
        match check(&untrusted.gate, &checks, args.clone()).await {
            GateOutcome::Refuse(message) => {
                assert!(message.contains("project not trusted"), "{message}");
                assert!(message.contains("braincode trust"), "{message}");
            }
            GateOutcome::Allow => panic!("{permission:?} approved an untrusted project's checks"),
        }
    }
    let handler = Arc::new(Scripted {
        answers: Mutex::new(vec![ApprovalAnswer::Approve]),
        asked: Mutex::new(Vec::new()),
    });
    let asked = gate(Mode::Auto, PermissionMode::Yes, Some(handler.clone()));
    assert_eq!(
        check(&asked.gate, &checks, args.clone()).await,
        GateOutcome::Allow
    );
    assert_eq!(*handler.asked.lock().unwrap(), ["run_check"]);
    assert_eq!(
        decisions(&asked.journal),
        [(ApprovalDecision::Approved, Approver::Human)]
    );

    let Gate {
        gate: trusted,
        journal,
        _root,
    } = gate(Mode::Auto, PermissionMode::AllowEdits, None);
    let trusted = trusted.with_project_trust(true);
    assert_eq!(check(&trusted, &checks, args).await, GateOutcome::Allow);
    // A CI change's checks (what it changes decides what runs) need more than edits mode,
    // even though edits mode runs other sandboxed commands.
    let ci = json!({"command": "make ci", "scripts": ["make ci"], "approvalRequired": true});
    for permission in [PermissionMode::AllowEdits, PermissionMode::Ask] {
        let g = gate(Mode::Auto, permission, None);
        let g = Gate {
            gate: g.gate.with_project_trust(true),
            ..g
        };
        let outcome = check(&g.gate, &checks, ci.clone()).await;
        assert!(
            matches!(outcome, GateOutcome::Refuse(_)),
            "{permission:?} ran a CI change's checks: {:?}",
            decisions(&g.journal)
        );
    }
    assert!(
        decisions(&journal)
            .iter()
            .all(|(_, approver)| *approver != Approver::Human),
        "{:?}",
        decisions(&journal)
    );
}

/// A question that is not a tool call (`checks.fetchDependencies: ask`) goes to the person
/// as an approval: yes for either approval, no for a block, and nothing without a person.
#[tokio::test]
async fn a_question_goes_to_the_person_and_only_to_them() {
    let handler = Arc::new(Scripted {
        answers: Mutex::new(vec![
            ApprovalAnswer::Approve,
            ApprovalAnswer::Block("not now".into()),
            ApprovalAnswer::ApproveForSession,
        ]),
        asked: Mutex::new(Vec::new()),
    });
    let with_person = gate(Mode::Auto, PermissionMode::Yes, Some(handler.clone()));
    let request = ApprovalRequest {
        call_id: "deps-setup:s:0".into(),
        tool_name: "dependency_setup".into(),
        arguments: json!({"command": "npm ci"}),
        policy_summary: "set the dependencies up?".into(),
        origin: Default::default(),
        once_only: None,
    };
    assert_eq!(with_person.gate.ask_person(&request).await, Some(true));
    assert_eq!(with_person.gate.ask_person(&request).await, Some(false));
    assert_eq!(with_person.gate.ask_person(&request).await, Some(true));
    assert_eq!(handler.asked.lock().unwrap().len(), 3);
    // `--yes` answers for the person on tool calls, never on a question to them.
    let nobody = gate(Mode::Auto, PermissionMode::Yes, None);
    assert_eq!(nobody.gate.ask_person(&request).await, None);
}
