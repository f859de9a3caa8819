//! Process tools: sessions, background lifecycle, kills, cancellation and process groups.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use crate::common::{Repo, group_gone};
use braincode_tools::exec::{
    ExecCommand, ExecLimits, ExecSessions, KillBackground, ListBackground, Shell, WriteStdin,
};
use braincode_tools::{Tool, ToolContext};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn tools(
    sessions: &Arc<ExecSessions>,
) -> (ExecCommand, WriteStdin, ListBackground, KillBackground) {
    (
        ExecCommand::new(sessions.clone()),
        WriteStdin::new(sessions.clone()),
        ListBackground::new(sessions.clone()),
        KillBackground::new(sessions.clone()),
    )
}

#[tokio::test]
async fn exec_command_returns_output_and_exit_code() {
    let repo = Repo::new(&[("sub/file.txt", "x")]);
    let sessions = Arc::new(ExecSessions::default());
    let (exec, ..) = tools(&sessions);
    let out = repo
        .call(
            &exec,
            json!({"cmd": "echo out; echo err >&2; exit 3", "yieldTimeMs": 10_000}),
        )
        .await;
    assert!(
        out.content
            .starts_with("$ echo out; echo err >&2; exit 3\nSession "),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("finished: exit code 3"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("out\n") && out.content.contains("[stderr] err\n"),
        "{}",
        out.content
    );
    let details = out.details.unwrap();
    assert_eq!(details["exitCode"], 3);
    assert_eq!(details["running"], false);
    let out = repo
        .call(
            &exec,
            json!({"command": "ls", "workdir": "sub", "yieldTimeMs": 10_000}),
        )
        .await;
    assert!(out.content.contains("file.txt"), "{}", out.content);
    let out = repo.call(&exec, json!({"cmd": "ls", "cwd": "../"})).await;
    assert!(out.is_error && out.content.contains("escapes the project root"));
    let out = repo
        .call(&exec, json!({"cmd": "ls", "shell": "python"}))
        .await;
    assert!(out.is_error && out.content.contains("unsupported shell"));
    assert!(
        sessions.list().is_empty(),
        "finished sessions are forgotten once read"
    );
}

#[tokio::test]
async fn sessions_can_be_polled_and_typed_into() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let (exec, stdin, list, _) = tools(&sessions);
    let out = repo
        .call(
            &exec,
            json!({"cmd": "echo ready; read line; echo got:$line", "yieldTimeMs": 200}),
        )
        .await;
    assert!(
        out.content.contains("is still running (foreground)"),
        "{}",
        out.content
    );
    assert!(out.content.contains("ready"));
    let id = out.details.unwrap()["sessionId"].as_u64().unwrap();
    assert!(
        repo.call(&list, json!({}))
            .await
            .content
            .contains("foreground\trunning")
    );
    let out = repo
        .call(
            &stdin,
            json!({"sessionId": id, "chars": "hello\n", "yieldTimeMs": 10_000}),
        )
        .await;
    assert!(out.content.contains("got:hello"), "{}", out.content);
    assert!(
        !out.content.contains("ready"),
        "only new output is returned"
    );
    assert!(out.content.contains("finished: exit code 0"));
    let out = repo
        .call(&stdin, json!({"session_id": id, "chars": "again\n"}))
        .await;
    assert!(
        out.is_error && out.content.contains("unknown session id"),
        "{}",
        out.content
    );
    let out = repo.call(&stdin, json!({"sessionId": 999})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn output_keeps_the_tail() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let (exec, ..) = tools(&sessions);
    let out = repo
        .call(
            &exec,
            json!({"cmd": "seq 1 50000", "maxOutputBytes": 1000, "yieldTimeMs": 10_000}),
        )
        .await;
    assert!(
        out.content.contains("earlier bytes omitted"),
        "{}",
        &out.content[..200]
    );
    assert!(out.content.trim_end().ends_with("50000"));
    assert!(out.content.len() < 1_400);
    let shell = Shell::default();
    let out = repo
        .call(
            &shell,
            json!({"command": "seq 1 50000; echo fail >&2; exit 1", "maxOutputBytes": 1000}),
        )
        .await;
    assert!(out.content.contains("exit code 1"), "{}", out.content);
    assert!(out.content.contains("earlier bytes omitted"));
    assert!(out.content.contains("stderr:\nfail"));
    assert!(!out.is_error, "a non-zero exit is reported, not an error");
}

#[tokio::test]
async fn foreground_timeout_kills_the_group() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let (exec, ..) = tools(&sessions);
    let out = repo
        .call(
            &exec,
            json!({"cmd": "sleep 100 & sleep 100", "timeoutMs": 1000, "yieldTimeMs": 0}),
        )
        .await;
    let pgid = sessions.process_groups()[0];
    let id = out.details.unwrap()["sessionId"].as_u64().unwrap();
    let out = repo
        .call(
            &WriteStdin::new(sessions.clone()),
            json!({"sessionId": id, "yieldTimeMs": 30_000}),
        )
        .await;
    assert!(
        out.is_error && out.content.contains("timed out"),
        "{}",
        out.content
    );
    assert!(group_gone(pgid).await);
    let out = repo
        .call(
            &Shell::default(),
            json!({"command": "sleep 30", "timeout": 1000}),
        )
        .await;
    assert!(
        out.is_error && out.content.contains("timed out after 1000 ms"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn background_session_lifecycle_and_kill() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let (exec, _, list, kill) = tools(&sessions);
    let out = repo
        .call(&exec, json!({"cmd": "echo started; sleep 100 & sleep 100", "background": true, "yieldTimeMs": 300}))
        .await;
    assert!(
        out.content.contains("is still running (background)"),
        "{}",
        out.content
    );
    let id = out.details.unwrap()["sessionId"].as_u64().unwrap();
    let pgid = sessions.process_groups()[0];
    assert_eq!(
        braincode_tools::exec::process::live_group_members(pgid),
        Some(3)
    );
    let listing = repo.call(&list, json!({})).await.content;
    assert!(
        listing.starts_with(&format!("{id}\tbackground\trunning\t")),
        "{listing}"
    );
    let out = repo.call(&kill, json!({"sessionId": id})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .starts_with(&format!("killed session {id}: echo started")),
        "{}",
        out.content
    );
    assert!(group_gone(pgid).await, "no process of the group survives");
    assert_eq!(repo.call(&list, json!({})).await.content, "(no sessions)");
    let out = repo.call(&kill, json!({"sessionId": id})).await;
    assert!(out.is_error && out.content.contains("unknown session id"));
}

#[tokio::test]
async fn session_limits_are_enforced() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::new(ExecLimits {
        max_background: 1,
        max_foreground: 1,
        ..ExecLimits::default()
    }));
    let (exec, ..) = tools(&sessions);
    let first = repo
        .call(
            &exec,
            json!({"cmd": "sleep 100", "background": true, "yieldTimeMs": 0}),
        )
        .await;
    assert!(!first.is_error);
    let second = repo
        .call(
            &exec,
            json!({"cmd": "sleep 100", "detach": true, "yieldTimeMs": 0}),
        )
        .await;
    assert!(
        second.is_error
            && second
                .content
                .contains("too many running background sessions (1)"),
        "{}",
        second.content
    );
    let foreground = repo
        .call(&exec, json!({"cmd": "sleep 100", "yieldTimeMs": 0}))
        .await;
    assert!(!foreground.is_error);
    let again = repo
        .call(&exec, json!({"cmd": "sleep 100", "yieldTimeMs": 0}))
        .await;
    assert!(again.is_error && again.content.contains("foreground"));
    let groups = sessions.process_groups();
    sessions.kill_all().await;
    for pgid in groups {
        assert!(group_gone(pgid).await);
    }
}

#[tokio::test]
async fn cancellation_kills_every_group() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let cancel = CancellationToken::new();
    let context = ToolContext {
        project_root: repo.root.clone(),
        cancel: cancel.clone(),
        sandbox: None,
        editor: None,
        lazy: None,
    };
    let exec = ExecCommand::new(sessions.clone());
    for background in [true, false] {
        let out = exec
            .call(
                json!({"cmd": "sleep 100 & sleep 100", "background": background, "yieldTimeMs": 0}),
                &context,
            )
            .await;
        assert!(!out.is_error, "{}", out.content);
    }
    let groups = sessions.process_groups();
    assert_eq!(groups.len(), 2);

    // The shell tool in the same run: its group id is the shell's pid.
    let pid_file = repo.root.join("shell.pid");
    let shell = Shell::default();
    let shell_context = context.clone();
    let script = format!("echo $$ > '{}'; sleep 100 & sleep 100", pid_file.display());
    let running =
        tokio::spawn(async move { shell.call(json!({"command": script}), &shell_context).await });
    let mut shell_group = None;
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse::<i32>()
        {
            shell_group = Some(pid);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let shell_group = shell_group.expect("the shell wrote its pid");

    cancel.cancel();
    let out = running.await.unwrap();
    assert!(
        out.is_error && out.content.contains("(cancelled)"),
        "{}",
        out.content
    );
    for pgid in groups.into_iter().chain([shell_group]) {
        assert!(group_gone(pgid).await, "group {pgid} survived cancellation");
    }
}

#[tokio::test]
async fn dropping_the_manager_kills_everything() {
    let repo = Repo::new(&[]);
    let sessions = Arc::new(ExecSessions::default());
    let exec = ExecCommand::new(sessions.clone());
    repo.call(
        &exec,
        json!({"cmd": "trap '' TERM; sleep 100 & sleep 100", "background": true, "yieldTimeMs": 0}),
    )
    .await;
    repo.call(
        &exec,
        json!({"cmd": "sleep 100", "background": true, "yieldTimeMs": 0}),
    )
    .await;
    let groups = sessions.process_groups();
    assert_eq!(groups.len(), 2);
    drop(exec);
    drop(sessions);
    for pgid in groups {
        assert!(group_gone(pgid).await, "group {pgid} survived the manager");
    }
}
