//! File, git and script tools against real temporary git repositories.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{Repo, git};
use braincode_tools::fs::apply_patch::ApplyPatch;
use braincode_tools::fs::edit_file::EditFile;
use braincode_tools::fs::list_files::ListFiles;
use braincode_tools::fs::read_file::ReadFile;
use braincode_tools::fs::search_files::SearchFiles;
use braincode_tools::git::{GetChangedFiles, GitDiff};
use braincode_tools::script::RunScript;
use serde_json::json;

#[tokio::test]
async fn list_files_honours_gitignore_hidden_and_globs() {
    let repo = Repo::new(&[
        (".gitignore", "target/\n*.log\n"),
        ("src/main.rs", "fn main() {}"),
        ("src/lib.rs", ""),
        ("README.md", "# x"),
        ("target/out.bin", "x"),
        ("debug.log", "x"),
        (".hidden/secret.txt", "x"),
        ("node_modules/pkg/index.js", "x"),
    ]);
    let tool = ListFiles::default();
    let out = repo.call(&tool, json!({})).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(out.content, "README.md\nsrc/lib.rs\nsrc/main.rs");
    let out = repo
        .call(&tool, json!({"glob": "*.rs", "dir": "src"}))
        .await;
    assert_eq!(out.content, "src/lib.rs\nsrc/main.rs");
    let out = repo.call(&tool, json!({"maxFiles": 1})).await;
    assert!(
        out.content
            .starts_with("README.md\n(showing the first 1 files"),
        "{}",
        out.content
    );
    assert_eq!(out.details.unwrap()["truncated"], true);
    let out = repo.call(&tool, json!({"directory": "../"})).await;
    assert!(
        out.is_error && out.content.contains("escapes the project root"),
        "{}",
        out.content
    );
    let out = repo.call(&tool, json!({"path": "missing"})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn read_file_windows_headers_and_failures() {
    let repo = Repo::new(&[("small.txt", "héllo\nwörld\n")]);
    let tool = ReadFile::default();
    let out = repo.call(&tool, json!({"path": "small.txt"})).await;
    assert_eq!(out.content, "# small.txt (chars 0-14/14)\nhéllo\nwörld\n");

    // A large file: a small limit expands, windows stay on UTF-8 boundaries and chain.
    let big: String = "é".repeat(20_000); // 40 000 bytes
    repo.write("big.txt", &big);
    let out = repo
        .call(&tool, json!({"file": "big.txt", "limit": 10}))
        .await;
    let details = out.details.clone().unwrap();
    assert_eq!(details["limitExpanded"], true);
    assert_eq!(details["truncated"], true);
    assert!(out.content.starts_with("# big.txt (chars 0-32000/40000; truncated; next offset 32000; limit expanded to 32000)\n"), "{}", &out.content[..120]);
    let out = repo
        .call(&tool, json!({"filePath": "big.txt", "offset": 32_001}))
        .await;
    let details = out.details.clone().unwrap();
    assert_eq!(
        details["offset"], 32_002,
        "a window never starts inside a character"
    );
    assert_eq!(details["end"], 40_000);
    assert!(
        out.content
            .lines()
            .nth(1)
            .unwrap()
            .chars()
            .all(|c| c == 'é')
    );

    let mut binary = b"abc".to_vec();
    binary.push(0);
    std::fs::write(repo.root.join("x.bin"), binary).unwrap();
    let out = repo.call(&tool, json!({"path": "x.bin"})).await;
    assert!(
        out.is_error && out.content.contains("appears to be binary"),
        "{}",
        out.content
    );
    let out = repo.call(&tool, json!({"path": "nope.txt"})).await;
    assert!(out.is_error && out.content.contains("nope.txt not found"));
    let out = repo.call(&tool, json!({"path": "../../etc/passwd"})).await;
    assert!(out.is_error && out.content.contains("escapes the project root"));
    let out = repo
        .call(&tool, json!({"path": "small.txt", "offset": 999}))
        .await;
    assert!(out.is_error && out.content.contains("past the end"));
    let out = repo.call(&tool, json!({"path": "."})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn search_files_regex_literal_fallback_and_paths() {
    let repo = Repo::new(&[
        (".gitignore", "ignored/\n"),
        ("src/a.rs", "fn alpha() {}\nlet x = foo(1);\n"),
        ("src/b.ts", "const beta = foo(2);\n"),
        ("ignored/c.rs", "fn alpha() {}\n"),
        ("docs/guide.md", "alpha and omega\n"),
    ]);
    let tool = SearchFiles::default();
    let out = repo.call(&tool, json!({"query": "fn \\w+\\(\\)"})).await;
    assert_eq!(out.content, "src/a.rs:1:fn alpha() {}");
    let out = repo
        .call(&tool, json!({"pattern": "foo(", "glob": "*.ts"}))
        .await;
    assert!(
        out.content.starts_with("(query is not a valid regex"),
        "{}",
        out.content
    );
    assert!(
        out.content.ends_with("src/b.ts:1:const beta = foo(2);"),
        "{}",
        out.content
    );
    assert_eq!(out.details.unwrap()["literalFallback"], true);
    let out = repo
        .call(&tool, json!({"query": "alpha", "maxResults": 1}))
        .await;
    assert!(
        out.content.contains("(showing the first 1 results"),
        "{}",
        out.content
    );
    let out = repo
        .call(&tool, json!({"query": "GUIDE", "mode": "path"}))
        .await;
    assert_eq!(out.content, "docs/guide.md");
    let out = repo.call(&tool, json!({"text": "zzz-nothing"})).await;
    assert_eq!(out.content, "(no matches)");
}

#[tokio::test]
async fn edit_file_writes_replaces_and_stays_inside() {
    let repo = Repo::new(&[("src/a.txt", "one two one")]);
    let tool = EditFile::default();
    let out = repo
        .call(&tool, json!({"path": "new/dir/b.txt", "content": "hé"}))
        .await;
    assert_eq!(out.content, "create new/dir/b.txt (2 chars)");
    assert_eq!(repo.read("new/dir/b.txt"), "hé");
    let out = repo
        .call(&tool, json!({"path": "new/dir/b.txt", "content": "hé\nho"}))
        .await;
    assert_eq!(out.content, "write new/dir/b.txt (5 chars)");
    let out = repo
        .call(
            &tool,
            json!({"path": "src/a.txt", "oldString": "one", "newString": "1"}),
        )
        .await;
    assert_eq!(out.content, "replace src/a.txt at line 1 (9 chars)");
    assert_eq!(repo.read("src/a.txt"), "1 two one");
    // Where the replacement starts, for the transcript's line numbers.
    let lines = Repo::new(&[("m.rs", "a\nb\nc\nneedle\n")]);
    let out = lines
        .call(
            &tool,
            json!({"path": "m.rs", "oldString": "needle", "newString": "pin"}),
        )
        .await;
    assert_eq!(out.content, "replace m.rs at line 4 (10 chars)");
    let out = repo.call(&tool, json!({"file_path": "src/a.txt", "old_string": "o", "new_string": "0", "replace_all": true})).await;
    assert!(!out.is_error);
    assert_eq!(repo.read("src/a.txt"), "1 tw0 0ne");
    let out = repo
        .call(
            &tool,
            json!({"path": "src/a.txt", "old": "absent", "new": "x"}),
        )
        .await;
    assert_eq!(out.content, "edit_file: oldString not found in src/a.txt");
    let out = repo
        .call(
            &tool,
            json!({"path": "src/missing.txt", "oldString": "a", "newString": "b"}),
        )
        .await;
    assert!(out.is_error && out.content.contains("not found"));
    std::os::unix::fs::symlink(std::env::temp_dir(), repo.root.join("tmp-link")).unwrap();
    for path in [
        "../outside.txt",
        "/etc/braincode-test",
        "tmp-link/escape.txt",
        "src/../../x",
    ] {
        let out = repo
            .call(&tool, json!({"path": path, "content": "x"}))
            .await;
        assert!(
            out.is_error && out.content.contains("escapes the project root"),
            "{path}: {}",
            out.content
        );
    }
    assert!(!repo.root.parent().unwrap().join("outside.txt").exists());
    let out = repo.call(&tool, json!({"path": "src/a.txt"})).await;
    assert!(out.is_error);
}

#[tokio::test]
async fn apply_patch_applies_and_refuses() {
    let repo = Repo::new(&[("src/a.txt", "one\ntwo\n")]);
    let tool = ApplyPatch::default();
    // `git apply` writes the project, so it runs only in the OS sandbox.
    let out = repo
        .call(
            &tool,
            json!({"patch": "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-one\n+x\n"}),
        )
        .await;
    assert!(
        out.is_error && out.content.contains("OS sandbox"),
        "{}",
        out.content
    );
    assert_eq!(repo.read("src/a.txt"), "one\ntwo\n");
    let context = repo.sandboxed_context();
    let repo = SandboxedRepo {
        repo: &repo,
        context,
    };
    let patch = "diff --git a/src/a.txt b/src/a.txt\n--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+deux\ndiff --git \"a/d\\303\\251j\\303\\240 vu.txt\" \"b/d\\303\\251j\\303\\240 vu.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/d\\303\\251j\\303\\240 vu.txt\"\n@@ -0,0 +1 @@\n+new\n";
    let out = repo.call(&tool, json!({"patch": patch})).await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        out.content,
        "applied patch to 2 file(s): src/a.txt, déjà vu.txt"
    );
    assert_eq!(repo.read("src/a.txt"), "one\ndeux\n");
    assert_eq!(repo.read("déjà vu.txt"), "new\n");

    let out = repo
        .call(
            &tool,
            json!({"diff": "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-nope\n+x\n"}),
        )
        .await;
    assert!(
        out.is_error && out.content.starts_with("git apply failed: "),
        "{}",
        out.content
    );
    assert_eq!(repo.read("src/a.txt"), "one\ndeux\n");
    for bad in [
        "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n",
        "--- /dev/null\n+++ /tmp/abs.txt\n@@ -0,0 +1 @@\n+x\n",
        "diff --git a/x b/y\nrename from x\nrename to ../y\n",
    ] {
        let out = repo.call(&tool, json!({"patch": bad})).await;
        assert!(
            out.is_error && out.content.contains("escapes project root"),
            "{}",
            out.content
        );
    }
    let out = repo.call(&tool, json!({"patch": "just text"})).await;
    assert!(out.is_error);
}

/// A repository whose tool calls carry a sandboxed context.
struct SandboxedRepo<'a> {
    repo: &'a Repo,
    context: braincode_tools::ToolContext,
}

impl SandboxedRepo<'_> {
    async fn call(
        &self,
        tool: &dyn braincode_tools::Tool,
        args: serde_json::Value,
    ) -> braincode_tools::ToolOutput {
        tool.call(args, &self.context).await
    }

    fn read(&self, name: &str) -> String {
        self.repo.read(name)
    }
}

/// `edit_file` checks a path, then writes it: a command swapping a directory of that path for
/// a link to somewhere else between the two must never win (the write goes beneath the root
/// with no link followed, or is refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edit_file_never_writes_through_a_link_swapped_in_after_the_check() {
    let repo = Repo::new(&[("d/victim.txt", "inside\n")]);
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "ORIGINAL\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = std::sync::Arc::clone(&stop);
        let dir = repo.root.join("d");
        let real = repo.root.join("d-real");
        let target = outside.path().to_path_buf();
        std::fs::rename(&dir, &real).unwrap();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // `d` is a real directory, then a link out of the project, again and again.
                let _ = std::fs::rename(&real, &dir);
                let _ = std::fs::rename(&dir, &real);
                let _ = std::os::unix::fs::symlink(&target, &dir);
                let _ = std::fs::remove_file(&dir);
                swaps += 1;
            }
            swaps
        })
    };
    let tool = EditFile::default();
    let mut written = 0;
    for round in 0..400 {
        let out = repo
            .call(
                &tool,
                json!({"path": "d/victim.txt", "content": format!("agent {round}\n")}),
            )
            .await;
        if !out.is_error {
            written += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0);
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "ORIGINAL\n",
        "edit_file wrote through the link ({written} writes went through)"
    );
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        1,
        "a file was created outside"
    );
}

/// A link already in place when the call comes is refused with a clear message, and a write
/// through a symlinked file name replaces the link instead of following it.
#[tokio::test]
async fn edit_file_refuses_links_out_and_replaces_a_link_in_place() {
    let repo = Repo::new(&[("a.txt", "a\n")]);
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::write(outside.path().join("t.txt"), "ORIGINAL\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.root.join("out")).unwrap();
    let tool = EditFile::default();
    let out = repo
        .call(&tool, json!({"path": "out/t.txt", "content": "x"}))
        .await;
    assert!(
        out.is_error && out.content.contains("escapes the project root"),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("t.txt")).unwrap(),
        "ORIGINAL\n"
    );
    // A link inside the project is resolved first (to a.txt): the real file is edited.
    std::os::unix::fs::symlink("a.txt", repo.root.join("alias.txt")).unwrap();
    let out = repo
        .call(
            &tool,
            json!({"path": "alias.txt", "oldString": "a", "newString": "b"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(repo.read("a.txt"), "b\n");
}

#[tokio::test]
async fn git_diff_and_changed_files() {
    let repo = Repo::new(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("old name.txt", "o\n")]);
    let diff = GitDiff::default();
    assert_eq!(repo.call(&diff, json!({})).await.content, "(no diff)");
    repo.write("a.txt", "A\n");
    repo.write("new.txt", "n\n");
    std::fs::remove_file(repo.root.join("b.txt")).unwrap();
    git(&repo.root, &["mv", "old name.txt", "new name.txt"]);
    let out = repo.call(&diff, json!({})).await;
    assert!(out.content.contains("-a\n+A"), "{}", out.content);
    let out = repo
        .call(&diff, json!({"path": "a.txt", "stat": true}))
        .await;
    assert!(out.content.contains("a.txt | 2"), "{}", out.content);
    let out = repo.call(&diff, json!({"cached": true})).await;
    assert!(
        out.content.contains("rename to new name.txt"),
        "{}",
        out.content
    );
    let out = repo.call(&diff, json!({"path": "../x"})).await;
    assert!(out.is_error);

    let out = repo.call(&GetChangedFiles::default(), json!({})).await;
    let files: serde_json::Value = serde_json::from_str(&out.content).unwrap();
    assert_eq!(
        files,
        json!([
            {"path": "a.txt", "status": "M"},
            {"path": "b.txt", "status": "D"},
            {"path": "new name.txt", "status": "R", "from": "old name.txt"},
            {"path": "new.txt", "status": "??"}
        ])
    );
    let not_repo = tempfile::tempdir().unwrap();
    let context = braincode_tools::ToolContext {
        project_root: not_repo.path().to_path_buf(),
        cancel: Default::default(),
        sandbox: None,
        editor: None,
        lazy: None,
    };
    let out = braincode_tools::Tool::call(&GetChangedFiles::default(), json!({}), &context).await;
    assert!(out.is_error && out.content.contains("git status failed"));
}

#[tokio::test]
async fn run_script_runs_make_targets_and_lists_unknown() {
    let repo = Repo::new(&[(
        "Makefile",
        "hello:\n\t@echo hello from make $(WHO)\nslow:\n\t@sleep 30\nfail:\n\t@echo broken >&2; exit 3\n",
    )]);
    let tool = RunScript::default();
    let out = repo
        .call(&tool, json!({"script": "hello", "args": ["WHO=tests"]}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content
            .starts_with("$ make hello WHO=tests\nexit code 0\nstdout:\nhello from make tests"),
        "{}",
        out.content
    );
    let out = repo.call(&tool, json!({"name": "fail"})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("exit code 2") && out.content.contains("broken"),
        "{}",
        out.content
    );
    let out = repo
        .call(&tool, json!({"script": "slow", "timeoutMs": 1000}))
        .await;
    assert!(
        out.is_error && out.content.contains("timed out after 1000 ms"),
        "{}",
        out.content
    );
    let out = repo.call(&tool, json!({"script": "deploy"})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("unknown script \"deploy\". Available: make: fail, hello, slow"),
        "{}",
        out.content
    );
}
