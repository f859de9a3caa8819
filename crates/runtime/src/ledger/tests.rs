//! Ledger tests on real files in real git repositories: the real write tools, the blob
//! store, reconciliation, replay, and undo back to the committed bytes.

use std::os::unix::fs::PermissionsExt;
use std::process::Command as StdCommand;

use braincode_protocol::{
    FileChange, JournalEntry, PatchSummaryRecord, ProjectSupportSummary, Record, RunStart,
};
use braincode_tools::fs::apply_patch::ApplyPatch;
use braincode_tools::fs::edit_file::EditFile;
use braincode_tools::{Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::sink::MemoryJournal;
use crate::tape::TapeMode;

struct Scene {
    repo: tempfile::TempDir,
    home: tempfile::TempDir,
    journal: MemoryJournal,
    ledger: PatchLedger,
}

fn git(root: &Path, args: &[&str]) {
    let out = StdCommand::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository with `a.txt` and an executable `run.sh` committed, and a ledger on it.
fn scene(tape: Option<Arc<Tape>>) -> Scene {
    let repo = tempfile::tempdir().unwrap();
    let root = repo.path();
    git(root, &["init", "-q"]);
    git(root, &["config", "user.email", "t@example.com"]);
    git(root, &["config", "user.name", "t"]);
    std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    git(root, &["add", "."]);
    git(root, &["commit", "-qm", "init"]);
    let home = tempfile::tempdir().unwrap();
    let journal = MemoryJournal::default();
    let sink = RunSink::new("s1", Some(Box::new(journal.clone())), vec![]);
    let root = root.canonicalize().unwrap();
    let ledger = PatchLedger::new(root, home.path(), "s1", sink, tape);
    Scene {
        repo,
        home,
        journal,
        ledger,
    }
}

impl Scene {
    fn root(&self) -> PathBuf {
        self.repo.path().canonicalize().unwrap()
    }

    fn store(&self) -> BlobStore {
        BlobStore::new(self.home.path(), "s1")
    }

    /// Runs `tool` through the ledger as the agent loop does.
    async fn call(&self, tool: &dyn Tool, id: &str, arguments: Value) -> Vec<FileChange> {
        let name = tool.definition().name.clone();
        let snapshot = self.ledger.before(&name, &arguments).unwrap();
        // `git apply` runs only in the OS sandbox.
        let policy = braincode_sandbox::SandboxPolicy::for_project(
            &self.root(),
            None,
            &self.home.path().join("braincode-home"),
        );
        let context = ToolContext {
            project_root: self.root(),
            cancel: CancellationToken::new(),
            sandbox: Some(std::sync::Arc::new(
                braincode_sandbox::Sandbox::new(policy).unwrap(),
            )),
            editor: None,
            lazy: None,
        };
        let output = tool.call(arguments, &context).await;
        assert!(!output.is_error, "{}", output.content);
        self.ledger.after(
            snapshot,
            CallOrigin {
                tool_call_id: id,
                tool_name: &name,
                agent_session_id: Some("r1-01-1"),
            },
        )
    }

    /// The session's records as a journal would hold them: a run start, then the ledger's.
    fn entries(&self) -> Vec<JournalEntry> {
        let start = Record::RunStart(RunStart {
            prompt: "p".into(),
            run_id: Some("r1".into()),
            project_support: Some(ProjectSupportSummary {
                root: self.root().display().to_string(),
                ..ProjectSupportSummary::default()
            }),
            ..RunStart::default()
        });
        let mut entries = vec![JournalEntry::new(1, start)];
        entries.extend(self.journal.entries());
        entries
    }

    fn undo(&self) -> Vec<braincode_protocol::UndoneFile> {
        let plan = undo::plan(&self.entries(), None).unwrap();
        assert_eq!(undo::check(&plan), undo::Blockers::default());
        undo::apply(&plan, &self.store()).unwrap()
    }
}

fn status(root: &Path) -> String {
    let out = StdCommand::new("git")
        .args(["status", "--porcelain"])
        .current_dir(root)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn edits_are_journaled_with_diffs_and_undo_restores_the_first_content() {
    let scene = scene(None);
    let root = scene.root();
    let first = scene
        .call(
            &EditFile::default(),
            "c1",
            json!({"path": "a.txt", "oldString": "two", "newString": "TWO"}),
        )
        .await;
    assert_eq!(first.len(), 1);
    let change = &first[0];
    assert_eq!(change.path, "a.txt");
    assert_eq!(change.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(change.tool_name.as_deref(), Some("edit_file"));
    let original = sha256_hex(b"one\ntwo\nthree\n");
    assert_eq!(change.before_hash.as_deref(), Some(original.as_str()));
    assert_eq!(change.mode, Some(0o644 & change.mode.unwrap_or(0)));
    assert!(change.diff.as_deref().unwrap().contains("-two\n+TWO\n"));
    assert_eq!((change.added, change.removed), (1, 1));
    assert!(change.undoable);
    assert_eq!(scene.store().load(&original).unwrap(), b"one\ntwo\nthree\n");

    let second = scene
        .call(
            &EditFile::default(),
            "c2",
            json!({"path": root.join("a.txt").display().to_string(), "content": "new\n"}),
        )
        .await;
    assert_eq!(second[0].before_hash, change.after_hash);
    // Only the content before the run's first change is kept.
    let kept = std::fs::read_dir(scene.home.path().join("undo/s1"))
        .unwrap()
        .count();
    assert_eq!(kept, 1);
    let journaled = (scene.journal.entries().iter())
        .filter(|e| matches!(e.record, Record::FileChange(_)))
        .count();
    assert_eq!(journaled, 2);

    let undone = scene.undo();
    assert_eq!(undone.len(), 1);
    assert_eq!(undone[0].action, "restored");
    assert_eq!(
        std::fs::read(root.join("a.txt")).unwrap(),
        b"one\ntwo\nthree\n"
    );
    assert_eq!(status(&root), "");
}

#[tokio::test]
async fn a_patch_that_creates_and_deletes_is_undone_with_modes() {
    let scene = scene(None);
    let root = scene.root();
    let patch = "diff --git a/run.sh b/run.sh\ndeleted file mode 100755\n--- a/run.sh\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-#!/bin/sh\n-echo hi\ndiff --git a/src/new.rs b/src/new.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+fn main() {}\n";
    let changes = scene
        .call(&ApplyPatch::default(), "p1", json!({"patch": patch}))
        .await;
    let by_path = |path: &str| changes.iter().find(|c| c.path == path).unwrap();
    let deleted = by_path("run.sh");
    assert_eq!(deleted.after_hash, None);
    assert_eq!(deleted.mode, Some(0o755));
    let created = by_path("src/new.rs");
    assert_eq!(created.before_hash, None);
    assert_eq!(created.added, 1);
    assert_eq!(changes.len(), 2, "{changes:#?}");

    let mut undone = scene.undo();
    undone.sort_by(|a, b| a.path.cmp(&b.path));
    let actions: Vec<(&str, &str)> = (undone.iter())
        .map(|f| (f.path.as_str(), f.action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [("run.sh", "recreated"), ("src/new.rs", "deleted")]
    );
    let mode = std::fs::metadata(root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(!root.join("src/new.rs").exists());
    assert_eq!(status(&root), "");
}

#[tokio::test]
async fn other_write_tools_binary_files_and_big_files() {
    let scene = scene(None);
    let root = scene.root();
    std::fs::write(root.join("logo.bin"), [0u8, 1, 2, 3]).unwrap();
    let big = vec![b'x'; (MAX_SNAPSHOT_BYTES + 1) as usize];
    std::fs::write(root.join("big.txt"), &big).unwrap();
    // An MCP write tool, read by the generic (name-based) target extraction.
    let tool = "mcp__fs__write_file";
    let snapshot = scene
        .ledger
        .before(tool, &json!({"path": "logo.bin"}))
        .unwrap();
    std::fs::write(root.join("logo.bin"), [0u8, 9, 9]).unwrap();
    let origin = CallOrigin {
        tool_call_id: "m1",
        tool_name: tool,
        agent_session_id: None,
    };
    let binary = scene.ledger.after(snapshot, origin);
    assert!(binary[0].binary && binary[0].diff.is_none() && binary[0].undoable);

    let snapshot = scene
        .ledger
        .before(tool, &json!({"path": "big.txt"}))
        .unwrap();
    std::fs::write(root.join("big.txt"), b"small now\n").unwrap();
    let changed = scene.ledger.after(snapshot, origin);
    assert!(!changed[0].undoable);
    assert!(changed[0].reason.as_deref().unwrap().contains("too big"));
    assert!(changed[0].before_hash.is_some() && changed[0].diff.is_none());

    let plan = undo::plan(&scene.entries(), None).unwrap();
    let blockers = undo::check(&plan);
    assert_eq!(blockers.not_undoable.len(), 1, "{blockers:?}");
    assert!(blockers.changed_since.is_empty());
    // Paths outside the project, and git's own files, are never snapshotted.
    assert!(
        scene
            .ledger
            .before(tool, &json!({"path": "../x"}))
            .is_none()
    );
    assert!(
        scene
            .ledger
            .before(tool, &json!({"path": ".git/config"}))
            .is_none()
    );
}

#[tokio::test]
async fn undo_refuses_files_changed_since_the_run_and_changes_nothing() {
    let scene = scene(None);
    let root = scene.root();
    scene
        .call(
            &EditFile::default(),
            "c1",
            json!({"path": "a.txt", "content": "run\n"}),
        )
        .await;
    std::fs::write(root.join("a.txt"), "mine\n").unwrap();
    let plan = undo::plan(&scene.entries(), None).unwrap();
    assert_eq!(undo::check(&plan).changed_since, ["a.txt"]);
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"mine\n");
    // A missing saved content is an error naming the file, and nothing is written.
    std::fs::write(root.join("a.txt"), "run\n").unwrap();
    std::fs::remove_dir_all(scene.home.path().join("undo")).unwrap();
    let err = undo::apply(&plan, &scene.store()).unwrap_err();
    assert!(err.to_string().starts_with("a.txt: "), "{err}");
    assert_eq!(std::fs::read(root.join("a.txt")).unwrap(), b"run\n");
}

#[tokio::test]
async fn reconcile_records_what_commands_changed() {
    let scene = scene(None);
    let root = scene.root();
    std::fs::write(root.join("run.sh"), "dirty before\n").unwrap();
    let baseline = PatchBaseline::capture(&root).await.unwrap();
    scene
        .call(
            &EditFile::default(),
            "c1",
            json!({"path": "a.txt", "content": "tool\n"}),
        )
        .await;
    // A command changes a clean file, a dirty one, the tool's file, and creates one.
    std::fs::write(root.join("a.txt"), "tool, then shell\n").unwrap();
    std::fs::write(root.join("run.sh"), "changed again\n").unwrap();
    std::fs::write(root.join("made.txt"), "made\n").unwrap();
    git(&root, &["mv", "-k", "made.txt", "made2.txt"]);
    std::fs::write(root.join("made2.txt"), "made\n").unwrap();
    let summary = baseline.summarize(&root).await.unwrap();
    let changes = scene
        .ledger
        .reconcile(&summary, &root, TreeAtStart::Baseline(&baseline))
        .await;
    let by_path = |path: &str| changes.iter().find(|c| c.path == path);
    let again = by_path("a.txt").unwrap();
    assert!(again.tool_call_id.is_none() && again.undoable);
    let dirty = by_path("run.sh").unwrap();
    assert!(!dirty.undoable, "{dirty:?}");
    let made = by_path("made2.txt").unwrap();
    assert_eq!(made.before_hash, None);
    assert!(made.undoable);
    assert!(
        scene
            .ledger
            .reconcile(&summary, &root, TreeAtStart::Baseline(&baseline))
            .await
            .is_empty()
    );

    let plan = undo::plan(&scene.entries(), None).unwrap();
    assert_eq!(undo::check(&plan).not_undoable.len(), 1);
    let a = plan.files.iter().find(|f| f.path == "a.txt").unwrap();
    assert_eq!(
        a.before_hash.as_deref(),
        Some(sha256_hex(b"one\ntwo\nthree\n").as_str())
    );
}

#[tokio::test]
async fn a_committed_file_a_command_changed_is_restored_from_git() {
    let scene = scene(None);
    let root = scene.root();
    let baseline = PatchBaseline::capture(&root).await.unwrap();
    std::fs::write(root.join("a.txt"), "shell\n").unwrap();
    git(&root, &["add", "a.txt"]);
    let summary = baseline.summarize(&root).await.unwrap();
    let changes = scene
        .ledger
        .reconcile(&summary, &root, TreeAtStart::Baseline(&baseline))
        .await;
    assert_eq!(changes.len(), 1);
    assert!(changes[0].diff.as_deref().unwrap().contains("+shell"));
    scene.undo();
    assert_eq!(
        std::fs::read(root.join("a.txt")).unwrap(),
        b"one\ntwo\nthree\n"
    );
}

#[tokio::test]
async fn a_replay_writes_no_blobs_and_serves_reconciled_records() {
    let reconciled = FileChange {
        path: "a.txt".into(),
        before_hash: Some("1".into()),
        after_hash: Some("2".into()),
        undoable: true,
        ..FileChange::default()
    };
    let entries = vec![
        JournalEntry::new(
            1,
            Record::RunStart(RunStart {
                prompt: "p".into(),
                run_id: Some("r1".into()),
                ..RunStart::default()
            }),
        ),
        JournalEntry::new(
            2,
            Record::PatchSummary(PatchSummaryRecord {
                patch: PatchSummary::default(),
                attempt: None,
            }),
        ),
        JournalEntry::new(3, Record::FileChange(reconciled.clone())),
    ];
    let tape = Tape::from_entries(TapeMode::Replay, "r1", &entries, Some(0));
    let scene = scene(Some(Arc::new(tape)));
    let arguments = json!({"path": "a.txt", "content": "x"});
    assert!(scene.ledger.before("edit_file", &arguments).is_none());
    let served = (scene.ledger)
        .reconcile(
            &PatchSummary::default(),
            &scene.root(),
            TreeAtStart::Unknown,
        )
        .await;
    assert_eq!(served, [reconciled]);
    assert!(
        scene
            .ledger
            .reconcile(
                &PatchSummary::default(),
                &scene.root(),
                TreeAtStart::Unknown
            )
            .await
            .is_empty()
    );
    assert!(!scene.home.path().join("undo").exists());
}
