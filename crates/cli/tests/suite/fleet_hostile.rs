//! A fleet worker runs its own git (clone, checkout, diff, commit, push) on a task's clone,
//! outside the sandbox. A hostile repository plants everything that makes a naive git run
//! repository code, its run tries to write the clone's `.git`, and whatever a run that got
//! past its sandbox could leave there is planted too: no planted command runs on the worker,
//! and the task still has its one answer and its pushed result.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use super::fleet::{connect, spawn_worker, stream_journal, task_line, wait_final, worker_home};
use crate::run_harness::{self, review_reply};
use braincode_fleet::TaskStatus;
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, NatsServer, Reply, Script, ScriptedServer, router_decision_json,
};
use serde_json::json;

/// A git configuration in which every program git may run leaves a marker in `markers`.
fn evil_config(markers: &Path) -> String {
    let touch = |name: &str| format!("touch {}/{name}", markers.display());
    format!(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = {fsmonitor}\n\thooksPath = .githooks\n\tsshCommand = {ssh}\n\tpager = {pager}\n\
         [filter \"evil\"]\n\tclean = {clean}\n\tsmudge = {smudge}\n\tprocess = {process}\n\trequired = true\n\
         [diff \"evil\"]\n\tcommand = {diff}\n\ttextconv = {textconv}\n\
         [diff]\n\texternal = {external}\n\
         [merge \"evil\"]\n\tdriver = {merge}\n\
         [remote \"origin\"]\n\treceivepack = {receivepack}\n\tuploadpack = {uploadpack}\n\
         [credential]\n\thelper = !{credential}\n\
         [gpg]\n\tprogram = {gpg}\n[commit]\n\tgpgSign = true\n",
        fsmonitor = touch("fsmonitor"),
        ssh = touch("ssh-command"),
        pager = touch("pager"),
        clean = touch("filter-clean"),
        smudge = touch("filter-smudge"),
        process = touch("filter-process"),
        diff = touch("diff-command"),
        textconv = touch("textconv"),
        external = touch("diff-external"),
        merge = touch("merge-driver"),
        receivepack = touch("receive-pack"),
        uploadpack = touch("upload-pack"),
        credential = touch("credential-helper"),
        gpg = touch("gpg"),
    )
}

/// A hook script that leaves a marker named after itself.
fn hook(markers: &Path, name: &str) -> String {
    format!("#!/bin/sh\ntouch {}/{name}\n", markers.display())
}

const HOOKS: &[&str] = &[
    "pre-commit",
    "post-commit",
    "post-checkout",
    "pre-push",
    "reference-transaction",
    "post-index-change",
];

/// The primary tries to write the clone's `.git` with its tools and its commands (refused),
/// makes the task's real change, then answers after `answer_delay`.
async fn attacking_server(markers: &Path, answer_delay: Duration) -> ScriptedServer {
    let config = evil_config(markers);
    let hook = hook(markers, "run-hook");
    let shell = |command: String| ("shell", json!({ "command": command }));
    let attempts = Reply::tool_calls(vec![
        (
            "edit_file",
            json!({"path": ".git/config", "content": config}),
        ),
        (
            "edit_file",
            json!({"path": ".git/hooks/pre-push", "content": hook}),
        ),
        (
            "edit_file",
            json!({"path": ".git/info/attributes", "content": "* filter=evil diff=evil\n"}),
        ),
        shell(format!(
            "printf '[core]\\n\\tfsmonitor = touch {}/shell-fsmonitor\\n' >> .git/config",
            markers.display()
        )),
        shell("cp .githooks/pre-push .git/hooks/pre-push; chmod +x .git/hooks/pre-push".into()),
        (
            "edit_file",
            json!({"path": "src/token.rs", "oldString": "!token.is_empty()", "newString": "token.len() > 8"}),
        ),
    ]);
    ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[Role::Security])),
            )
            .always(
                Matcher::model("security"),
                run_harness::worker_reply("tokens are signed"),
            )
            .always(Matcher::model("review"), review_reply("approved"))
            .when_fn(Matcher::model("backend"), move |call| {
                if call.is_tool_turn() {
                    Reply::text("Tokens now need 9 characters.").delayed(answer_delay)
                } else {
                    attempts.clone()
                }
            }),
    )
    .await
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "core.hooksPath=/dev/null"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `text` at `path`, executable.
fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_repository_and_its_run_cannot_make_the_workers_git_run_their_code() {
    let nats = NatsServer::start();
    let markers = tempfile::tempdir().unwrap();
    let m = markers.path();
    // The repository plants drivers and hooks in what it commits: attributes naming filter,
    // diff and merge drivers, a submodule whose update is a command, hooks in a directory a
    // `core.hooksPath` would name.
    let repo = run_harness::repo();
    repo.write(".gitattributes", "* filter=evil diff=evil merge=evil\n");
    repo.write(
        ".gitmodules",
        &format!(
            "[submodule \"sub\"]\n\tpath = sub\n\turl = ./sub\n\tupdate = !touch {}/submodule-update\n",
            m.display()
        ),
    );
    for name in HOOKS {
        write_executable(&repo.path().join(".githooks").join(name), &hook(m, name));
    }
    repo.commit("drivers and hooks");
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    git(
        repo.path(),
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{head},sub"),
        ],
    );
    git(repo.path(), &["commit", "-q", "-m", "a submodule"]);
    // The task's repository is a bare remote the result is pushed to.
    let remotes = tempfile::tempdir().unwrap();
    let bare = remotes.path().join("origin.git");
    git(
        remotes.path(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.path().to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let server = attacking_server(m, Duration::from_secs(3)).await;
    let home = worker_home(&server);
    let mut worker = spawn_worker(&home, &nats.url(), "target", 1);
    let fleet = connect(&nats.url()).await;
    let mut task: braincode_fleet::TaskSpec =
        serde_json::from_str(&task_line(&bare, "require longer tokens")).unwrap();
    task.permission = braincode_fleet::task::Permission::Yes;
    task.push_branch = Some("braincode/hostile".into());
    let id = braincode_fleet::submit(&fleet, vec![task])
        .await
        .unwrap()
        .remove(0);

    // While the primary takes its time over the answer, plant in the clone's `.git` what a
    // run that got past its sandbox could leave there: the worker's own git runs next.
    // The delivery's clone: `<task id>.<attempt>` in the worker's directory.
    let delivery_clone = || {
        std::fs::read_dir(worker.work_dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .find(|path| {
                path.file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| name.starts_with(&format!("{id}.")))
            })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    let clone = loop {
        if let Some(clone) = delivery_clone()
            && std::fs::read_to_string(clone.join("src/token.rs"))
                .unwrap_or_default()
                .contains("token.len() > 8")
        {
            break clone;
        }
        assert!(
            Instant::now() < deadline,
            "the run never made its edit in {:?}",
            delivery_clone()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // The run's own attempts on `.git` were refused (its tools and its sandbox).
    let git_dir = clone.join(".git");
    let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
    assert!(
        !config.contains("touch"),
        "the run wrote .git/config: {config}"
    );
    assert!(!git_dir.join("hooks/pre-push").exists());
    std::fs::write(git_dir.join("config"), evil_config(m)).unwrap();
    std::fs::create_dir_all(git_dir.join("info")).unwrap();
    std::fs::write(git_dir.join("info/attributes"), "* filter=evil diff=evil\n").unwrap();
    for name in HOOKS {
        write_executable(&git_dir.join("hooks").join(name), &hook(m, name));
    }

    let state = wait_final(&fleet, &id, Duration::from_secs(90)).await;
    let ran: Vec<String> = std::fs::read_dir(m)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.is_empty(),
        "planted commands ran on the worker: {ran:?}"
    );
    assert_eq!(state.status, TaskStatus::Done, "{state:?}");
    let records = stream_journal(&fleet, state.session.as_deref().unwrap()).await;
    assert_eq!(
        records.iter().filter(|r| r["type"] == "run_end").count(),
        1,
        "one answer"
    );
    // The result is the run's change only: none of the planted files, pushed as asked.
    let patch = fleet
        .get_object(&format!("{id}/patch.diff"))
        .await
        .unwrap()
        .unwrap();
    let patch = String::from_utf8_lossy(&patch);
    assert!(patch.contains("token.len() > 8"), "{patch}");
    assert!(!patch.contains(".git/"), "{patch}");
    assert_eq!(state.pushed_branch.as_deref(), Some("braincode/hostile"));
    let shown = std::process::Command::new("git")
        .args([
            "--git-dir",
            bare.to_str().unwrap(),
            "show",
            "braincode/hostile:src/token.rs",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("token.len() > 8"));
    worker.kill().await;
}
