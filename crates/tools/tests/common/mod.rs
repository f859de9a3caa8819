//! Shared helpers for the tools integration tests: temp git repositories and contexts.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use braincode_tools::{Tool, ToolContext, ToolOutput};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A temporary git repository with one commit of `files`.
pub struct Repo {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

pub fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl Repo {
    pub fn new(files: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "commit.gpgsign", "false"]);
        let repo = Self { dir, root };
        for (name, body) in files {
            repo.write(name, body);
        }
        git(&repo.root, &["add", "-A"]);
        git(
            &repo.root,
            &["commit", "-q", "--allow-empty", "-m", "initial"],
        );
        repo
    }

    pub fn write(&self, name: &str, body: &str) {
        let path = self.root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(name)).unwrap()
    }

    pub fn context(&self) -> ToolContext {
        ToolContext {
            project_root: self.root.clone(),
            cancel: CancellationToken::new(),
            sandbox: None,
            editor: None,
            lazy: None,
        }
    }

    pub async fn call(&self, tool: &dyn Tool, args: Value) -> ToolOutput {
        tool.call(args, &self.context()).await
    }

    /// A context whose commands run in the OS sandbox (the project's default policy).
    pub fn sandboxed_context(&self) -> ToolContext {
        let home = self.dir.path().join(".no-braincode-home");
        let policy = braincode_sandbox::SandboxPolicy::for_project(&self.root, None, &home);
        ToolContext {
            sandbox: Some(std::sync::Arc::new(
                braincode_sandbox::Sandbox::new(policy).expect("an OS sandbox on this machine"),
            )),
            ..self.context()
        }
    }
}

/// Waits (bounded) until no live process is left in `pgid`; returns whether it emptied.
pub async fn group_gone(pgid: i32) -> bool {
    for _ in 0..200 {
        if braincode_tools::exec::process::live_group_members(pgid) == Some(0) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}
