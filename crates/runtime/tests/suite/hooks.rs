//! Command hooks: payload on stdin, block and context semantics, crashes, timeouts that kill
//! the whole process group, and handlers that must not run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use braincode_protocol::HookOutcome;
use braincode_runtime::{
    HookCommand, HookEnvironment, HookEvent, HookResult, matcher_matches, run_hooks,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn handler(command: &str, event: HookEvent) -> HookCommand {
    HookCommand {
        source: PathBuf::from("/test/hooks.json"),
        event,
        matcher: None,
        kind: "command".into(),
        command: Some(command.into()),
        timeout: Duration::from_secs(10),
        enabled: true,
        trusted: true,
        asynchronous: false,
    }
}

fn env(dir: &Path) -> HookEnvironment {
    HookEnvironment {
        session_id: "s1".into(),
        cwd: dir.to_path_buf(),
        model: "braincode".into(),
        permission_mode: "default".into(),
        sandbox: None,
        protected: None,
    }
}

async fn fire(handlers: &[HookCommand], event: HookEvent, value: &str) -> HookResult {
    let dir = tempfile::tempdir().unwrap();
    run_hooks(
        handlers,
        event,
        value,
        &env(dir.path()),
        json!({"prompt": "hello"}),
        &CancellationToken::new(),
    )
    .await
}

#[test]
fn matchers_follow_regex_with_exact_fallback() {
    assert!(matcher_matches(None, "backend"));
    assert!(matcher_matches(Some(""), "backend"));
    assert!(matcher_matches(Some("*"), "backend"));
    assert!(matcher_matches(Some("back.*|front.*"), "frontend"));
    assert!(!matcher_matches(Some("back"), "backend"));
    assert!(matcher_matches(Some("a(b"), "a(b"));
    assert!(!matcher_matches(Some("a(b"), "ab"));
}

#[tokio::test]
async fn payload_reaches_stdin_and_json_context_is_used() {
    let cmd = r#"payload=$(cat); case "$payload" in *'"prompt":"hello"'*'"hook_event_name":"UserPromptSubmit"'*|*'"hook_event_name":"UserPromptSubmit"'*'"prompt":"hello"'*) printf '{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"saw hello"}}';; *) exit 1;; esac"#;
    let result = fire(
        &[handler(cmd, HookEvent::UserPromptSubmit)],
        HookEvent::UserPromptSubmit,
        "",
    )
    .await;
    assert_eq!(
        result.runs[0].outcome,
        HookOutcome::Completed,
        "{:?}",
        result.runs
    );
    assert_eq!(result.additional_context, vec!["saw hello".to_string()]);
    assert!(result.blocked_reason.is_none());
}

#[tokio::test]
async fn exit_two_and_json_decisions_block() {
    let handlers = vec![
        handler(
            "echo 'not on my watch' >&2; exit 2",
            HookEvent::UserPromptSubmit,
        ),
        handler(
            r#"echo '{"decision":"block","reason":"second"}'"#,
            HookEvent::UserPromptSubmit,
        ),
    ];
    let result = fire(&handlers, HookEvent::UserPromptSubmit, "").await;
    assert_eq!(result.blocked_reason.as_deref(), Some("not on my watch"));
    assert!(
        result
            .runs
            .iter()
            .all(|r| r.outcome == HookOutcome::Blocked)
    );
    let stop = fire(
        &[handler(
            r#"echo '{"continue":false,"stopReason":"halt"}'"#,
            HookEvent::Stop,
        )],
        HookEvent::Stop,
        "",
    )
    .await;
    assert_eq!(stop.blocked_reason.as_deref(), Some("halt"));
}

#[tokio::test]
async fn crash_and_failure_are_not_a_no() {
    let result = fire(
        &[
            handler("kill -9 $$", HookEvent::UserPromptSubmit),
            handler("echo oops >&2; exit 7", HookEvent::UserPromptSubmit),
        ],
        HookEvent::UserPromptSubmit,
        "",
    )
    .await;
    assert_eq!(result.runs[0].outcome, HookOutcome::Crashed);
    assert_eq!(result.runs[1].outcome, HookOutcome::Failed);
    assert_eq!(result.runs[1].reason.as_deref(), Some("oops"));
    assert!(result.blocked_reason.is_none());
    assert_eq!(result.problems().len(), 2);
}

#[tokio::test]
async fn timeout_kills_the_whole_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("survivor");
    let cmd = format!("(sleep 3; touch {}) & sleep 30", marker.display());
    let mut h = handler(&cmd, HookEvent::SessionStart);
    h.timeout = Duration::from_millis(300);
    let result = run_hooks(
        &[h],
        HookEvent::SessionStart,
        "startup",
        &env(dir.path()),
        json!({}),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(result.runs[0].outcome, HookOutcome::TimedOut);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        !marker.exists(),
        "a process of the hook's group survived the timeout"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_running_hook_kills_its_whole_process_group() {
    // What a cancelled run does to a hook: the future running it is dropped mid-way (no
    // timeout, no cancellation token ever fires).
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let survivor = dir.path().join("survivor");
    let cmd = format!(
        "touch {}; (sleep 2; touch {}) & sleep 30",
        started.display(),
        survivor.display()
    );
    let env = env(dir.path());
    let running = tokio::spawn(async move {
        run_hooks(
            &[handler(&cmd, HookEvent::SessionStart)],
            HookEvent::SessionStart,
            "startup",
            &env,
            json!({}),
            &CancellationToken::new(),
        )
        .await
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the hook never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        !survivor.exists(),
        "a process of the dropped hook's group survived"
    );
}

#[tokio::test]
async fn what_a_hook_leaves_running_is_stopped_when_it_exits() {
    let dir = tempfile::tempdir().unwrap();
    let survivor = dir.path().join("survivor");
    // The background job closes its output, so the hook is done as soon as `sh` exits.
    let cmd = format!(
        "(sleep 2; touch {}) >/dev/null 2>&1 </dev/null &",
        survivor.display()
    );
    let result = fire(
        &[handler(&cmd, HookEvent::SessionStart)],
        HookEvent::SessionStart,
        "startup",
    )
    .await;
    assert_eq!(result.runs[0].outcome, HookOutcome::Completed);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!survivor.exists(), "the hook's background job outlived it");
}

#[tokio::test]
async fn untrusted_disabled_async_and_unmatched_handlers_do_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    let mut untrusted = handler(&cmd, HookEvent::SubagentStart);
    untrusted.trusted = false;
    let mut disabled = handler(&cmd, HookEvent::SubagentStart);
    disabled.enabled = false;
    let mut asynchronous = handler(&cmd, HookEvent::SubagentStart);
    asynchronous.asynchronous = true;
    let mut other_role = handler(&cmd, HookEvent::SubagentStart);
    other_role.matcher = Some("frontend".into());
    let handlers = [untrusted, disabled, asynchronous, other_role];
    let result = run_hooks(
        &handlers,
        HookEvent::SubagentStart,
        "backend",
        &env(dir.path()),
        json!({}),
        &CancellationToken::new(),
    )
    .await;
    assert_eq!(
        result.runs.len(),
        3,
        "the unmatched handler is not even listed"
    );
    assert!(
        result
            .runs
            .iter()
            .all(|r| r.outcome == HookOutcome::Skipped)
    );
    assert!(!marker.exists());
}

#[tokio::test]
async fn plain_stdout_is_context_only_for_some_events() {
    let start = fire(
        &[handler("echo remember the tests", HookEvent::SessionStart)],
        HookEvent::SessionStart,
        "startup",
    )
    .await;
    assert_eq!(
        start.additional_context,
        vec!["remember the tests".to_string()]
    );
    let stop = fire(
        &[handler("echo ignored", HookEvent::Stop)],
        HookEvent::Stop,
        "",
    )
    .await;
    assert!(stop.additional_context.is_empty());
}

/// A handler switched off in hooks.json (`"enabled": false`, what the panel's switch writes)
/// is loaded as off and does not run; its neighbour in the same file does.
#[tokio::test]
async fn a_hook_switched_off_in_hooks_json_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let home = braincode_config::Home::at(dir.path().join("home"));
    let project = dir.path().join("project");
    std::fs::create_dir_all(home.root()).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let off = dir.path().join("off-ran");
    let on = dir.path().join("on-ran");
    let file = json!({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": format!("touch {}", off.display()), "trusted": true, "enabled": false},
        {"type": "command", "command": format!("touch {}", on.display()), "trusted": true}
    ]}]}});
    std::fs::write(
        home.hooks_path(),
        serde_json::to_string_pretty(&file).unwrap(),
    )
    .unwrap();
    // What a run loads (settings, trust, hooks.json through the hook loader).
    let config =
        braincode_runtime::RunConfig::load(&home, &braincode_runtime::LoadOptions::new(&project))
            .unwrap();
    let handlers = config.hooks;
    assert_eq!(handlers.len(), 2);
    assert!(!handlers[0].enabled && handlers[1].enabled);
    let result = fire(&handlers, HookEvent::Stop, "").await;
    assert!(on.exists(), "the enabled hook ran: {:?}", result.runs);
    assert!(!off.exists(), "the disabled hook did not run");
    assert_eq!(result.runs[0].outcome, HookOutcome::Skipped);
    assert_eq!(result.runs[0].reason.as_deref(), Some("disabled"));
}
