//! The git worktrees parallel writers work in.
//!
//! The project as the run found it — the user's uncommitted and untracked changes included —
//! becomes one snapshot commit (a temporary index: `read-tree HEAD`, `add -A`, `write-tree`,
//! `commit-tree`), never put on a branch. Each writer gets a detached worktree of it under
//! `<project>/.git/braincode-writers/<run>/`, inside git's own directory: never in the
//! project tree, and hidden from nothing the writer needs.
//!
//! Every git call runs confined like the rest of Braincode's own git (`git_safe`: the
//! repository's programs switched off, no network, the user's secrets and the Braincode home
//! hidden), in a sandbox where only git's object store, its `worktrees` directory and the run's
//! writers directory can be written: the project's files and `.git/config` or hooks cannot.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_sandbox::{Sandbox, SandboxPolicy};

/// How long one git call of the writers' setup may take.
const GIT_TIMEOUT: Duration = Duration::from_secs(60);
/// The directory under `.git` that holds every run's writer worktrees.
pub(crate) const WRITERS_DIR: &str = "braincode-writers";

/// The worktrees of one run's writers, and the snapshot they start from.
pub struct Worktrees {
    /// The project (canonical).
    root: PathBuf,
    /// `<project>/.git/braincode-writers/<run>`.
    base: PathBuf,
    /// Git that may write objects and worktree metadata.
    sandbox: Arc<Sandbox>,
    /// The snapshot commit: the project as the run found it.
    snapshot: String,
    /// Worktrees made so far (removed at the end, whatever happens).
    made: Mutex<Vec<PathBuf>>,
    /// Whether the snapshot is the one an interrupted run of the same id took (its
    /// worktrees can be taken up again).
    reopened: bool,
    /// Held (locked) while the run lives: the next run removes a writers directory whose
    /// lock it can take (its run was killed before its cleanup).
    _alive: std::fs::File,
}

impl Worktrees {
    /// Takes the snapshot of `root` for run `run_id`. `Err` says why writers cannot have
    /// worktrees here (not a git repository, `.git` not a directory, no OS sandbox).
    pub async fn start(root: &Path, braincode_home: &Path, run_id: &str) -> Result<Self, String> {
        Self::open(root, braincode_home, run_id, false).await
    }

    /// For a resumed run: takes up the snapshot and worktrees that the interrupted run of the
    /// same id left ([`Worktrees::reuse`]), or starts afresh when they are gone.
    pub async fn reopen(root: &Path, braincode_home: &Path, run_id: &str) -> Result<Self, String> {
        Self::open(root, braincode_home, run_id, true).await
    }

    async fn open(
        root: &Path,
        braincode_home: &Path,
        run_id: &str,
        reopen: bool,
    ) -> Result<Self, String> {
        let root = std::fs::canonicalize(root).map_err(|err| format!("the project: {err}"))?;
        let git_dir = root.join(".git");
        if !is_real_dir(&git_dir) {
            return Err(
                "the project is not a git repository with its own .git directory".to_string(),
            );
        }
        let worktrees = git_dir.join("worktrees");
        let writers = git_dir.join(WRITERS_DIR);
        let base = writers.join(safe_name(run_id));
        make_real_dir(&worktrees)?;
        make_real_dir(&writers)?;
        // What an interrupted run of this id left: its snapshot, or (none readable) nothing
        // worth keeping.
        let previous = if reopen && is_real_dir(&base) {
            braincode_sandbox::beneath::read_file(&base, Path::new(SNAPSHOT_FILE), 128)
                .ok()
                .and_then(|id| String::from_utf8(id).ok())
                .filter(|id| is_object_id(id))
        } else {
            None
        };
        let wiped = previous.is_none() && is_real_dir(&base);
        if wiped {
            std::fs::remove_dir_all(&base).map_err(|err| format!("{}: {err}", base.display()))?;
        }
        make_real_dir(&base)?;
        // Written beneath the run's directory (a link at its name is replaced, never followed),
        // then opened to be held.
        let lock = Path::new(LOCK_FILE);
        let alive = braincode_sandbox::beneath::write_file(&base, lock, b"", 0o600)
            .and_then(|()| braincode_sandbox::beneath::open_file(&base, lock))
            .map_err(|err| format!("the writers' lock: {err}"))?;
        alive
            .try_lock()
            .map_err(|err| format!("the writers' lock: {err}"))?;
        let stale = stale_runs(&writers, &base);
        let user_home = std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        let mut policy =
            SandboxPolicy::read_only_helper(&root, user_home.as_deref(), braincode_home);
        policy.writable = vec![git_dir.join("objects"), worktrees, base.clone()];
        let sandbox =
            Arc::new(Sandbox::new(policy).map_err(|err| format!("no OS sandbox for git: {err}"))?);
        let mut made = Self {
            root,
            base,
            sandbox,
            snapshot: String::new(),
            made: Mutex::new(Vec::new()),
            reopened: previous.is_some(),
            _alive: alive,
        };
        if !stale.is_empty() || wiped {
            // Killed runs' directories go; `prune` forgets their worktrees.
            for dir in &stale {
                let _ = std::fs::remove_dir_all(dir);
            }
            let _ = made.git(&["worktree", "prune"], &[]).await;
        }
        made.snapshot = match previous {
            Some(snapshot) => snapshot,
            None => {
                let snapshot = made.take_snapshot().await?;
                // Kept beside the worktrees, so that a resume of this run merges against the
                // same base.
                braincode_sandbox::beneath::write_file(
                    &made.base,
                    Path::new(SNAPSHOT_FILE),
                    snapshot.as_bytes(),
                    0o600,
                )
                .map_err(|err| format!("the snapshot's id: {err}"))?;
                snapshot
            }
        };
        Ok(made)
    }

    /// The snapshot commit's id.
    pub fn snapshot(&self) -> &str {
        &self.snapshot
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    async fn take_snapshot(&self) -> Result<String, String> {
        let index = self.base.join("snapshot.index");
        let index = index.to_string_lossy().into_owned();
        let head = self
            .git(&["rev-parse", "--verify", "-q", "HEAD"], &[])
            .await;
        let head = head
            .ok()
            .map(|out| out.trim().to_string())
            .filter(|h| !h.is_empty());
        let with_index = [("GIT_INDEX_FILE", index.as_str())];
        if head.is_some() {
            self.git(&["read-tree", "HEAD"], &with_index).await?;
        }
        self.git(&["add", "-A", "--", "."], &with_index).await?;
        let tree = self.git(&["write-tree"], &with_index).await?;
        let tree = tree.trim().to_string();
        let mut args = vec![
            "commit-tree",
            tree.as_str(),
            "-m",
            "braincode: the project as the run found it",
        ];
        if let Some(head) = &head {
            args.extend(["-p", head.as_str()]);
        }
        let commit = self.git(&args, &IDENTITY).await?;
        let _ = std::fs::remove_file(&index);
        Ok(commit.trim().to_string())
    }

    /// The worktree `name` an interrupted run of this id made, as it left it, when the run
    /// was [reopened](Worktrees::reopen) on its snapshot and the worktree is still there.
    pub fn reuse(&self, name: &str) -> Option<PathBuf> {
        let path = self.base.join(safe_name(name));
        let is_worktree = std::fs::symlink_metadata(path.join(".git")).is_ok_and(|m| m.is_file());
        if !self.reopened || !is_real_dir(&path) || !is_worktree {
            return None;
        }
        let path = std::fs::canonicalize(&path).ok()?;
        if let Ok(mut made) = self.made.lock() {
            made.push(path.clone());
        }
        Some(path)
    }

    /// A detached worktree of the snapshot named `name` (what an interrupted run left at its
    /// place is removed first).
    pub async fn add(&self, name: &str) -> Result<PathBuf, String> {
        let path = self.base.join(safe_name(name));
        let leftover = std::fs::symlink_metadata(&path).is_ok();
        if leftover {
            std::fs::remove_dir_all(&path).map_err(|err| format!("{}: {err}", path.display()))?;
        }
        let text = path.to_string_lossy().into_owned();
        let mut args = vec!["worktree", "add", "--detach", "--quiet"];
        if leftover {
            // Still registered by git, and locked when a `worktree add` was cut: made again
            // at its place.
            args.extend(["--force", "--force"]);
        }
        args.extend([text.as_str(), self.snapshot.as_str()]);
        self.git(&args, &[]).await?;
        if let Ok(mut made) = self.made.lock() {
            made.push(path.clone());
        }
        std::fs::canonicalize(&path).map_err(|err| format!("the new worktree: {err}"))
    }

    /// Removes every worktree made and the run's writers directory.
    pub async fn remove_all(&self) {
        let made: Vec<PathBuf> = match self.made.lock() {
            Ok(mut made) => std::mem::take(&mut *made),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for path in made {
            let text = path.to_string_lossy().into_owned();
            if self
                .git(&["worktree", "remove", "--force", &text], &[])
                .await
                .is_err()
            {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
        let _ = self.git(&["worktree", "prune"], &[]).await;
        let _ = std::fs::remove_dir_all(&self.base);
    }

    /// The paths a writer changed in `worktree` (against the snapshot), sorted; `.git` left
    /// out.
    pub async fn changed_files(&self, worktree: &Path) -> Result<Vec<String>, String> {
        let status = self
            .git_at(
                worktree,
                &[
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--untracked-files=all",
                    "--no-renames",
                ],
                &[],
            )
            .await?;
        let mut paths: Vec<String> = (status.split(|b| *b == 0))
            .filter(|entry| entry.len() > 3)
            .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
            .filter(|path| !path.split('/').any(|part| part == ".git"))
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// `path`'s content in the snapshot (`None`: it was not there).
    pub async fn snapshot_content(&self, path: &str) -> Option<Vec<u8>> {
        let spec = format!("{}:{path}", self.snapshot);
        self.git_at(&self.root, &["cat-file", "blob", &spec], &[])
            .await
            .ok()
    }

    /// Runs confined git in the project; its standard output, or why it failed.
    async fn git(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
        let out = self.git_at(&self.root, args, env).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs confined git in `cwd` (the project or one of the worktrees).
    async fn git_at(
        &self,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<Vec<u8>, String> {
        let mut command = braincode_tools::git_safe::git_command_in(&self.sandbox, cwd, args);
        for (name, value) in env {
            command.env(name, value);
        }
        command
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        let output = tokio::time::timeout(GIT_TIMEOUT, command.output())
            .await
            .map_err(|_| format!("git {} took longer than {GIT_TIMEOUT:?}", args[0]))?
            .map_err(|err| format!("git {}: {err}", args[0]))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(format!(
                "git {} failed: {}",
                args[0],
                String::from_utf8_lossy(&output.stderr).trim()
            ))
        }
    }
}

impl Drop for Worktrees {
    /// A run that stops before its cleanup (an error, a panic unwinding) still leaves no
    /// directory behind; git's own metadata is pruned by the next run that makes worktrees.
    fn drop(&mut self) {
        let made = match self.made.lock() {
            Ok(made) => !made.is_empty(),
            Err(_) => true,
        };
        if made || self.base.exists() {
            let _ = std::fs::remove_dir_all(&self.base);
        }
    }
}

/// The lock file of a run's writers directory.
const LOCK_FILE: &str = ".alive";
/// The file of a run's writers directory that names its snapshot commit.
const SNAPSHOT_FILE: &str = "snapshot";

/// Whether `id` is a full hexadecimal git object id (SHA-1 or SHA-256).
fn is_object_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What a run killed before its cleanup left of its writers in a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftoverWriters {
    /// `<project>/.git/braincode-writers/<run>`.
    pub dir: PathBuf,
    /// Its writers' worktrees (directories in it).
    pub worktrees: usize,
    /// The bytes of the files in it.
    pub bytes: u64,
}

/// The writers directories of `project` whose run is gone (`braincode doctor` lists them; the
/// next run with writers removes them). Reads only; no git process.
pub fn leftover_writers(project: &Path) -> Vec<LeftoverWriters> {
    let writers = project.join(".git").join(WRITERS_DIR);
    stale_runs(&writers, &writers)
        .into_iter()
        .map(|dir| {
            let worktrees = std::fs::read_dir(&dir)
                .map(|entries| entries.flatten().filter(|e| is_real_dir(&e.path())).count())
                .unwrap_or(0);
            let bytes = ignore::WalkBuilder::new(&dir)
                .standard_filters(false)
                .build()
                .flatten()
                .filter_map(|entry| entry.metadata().ok())
                .filter(std::fs::Metadata::is_file)
                .map(|meta| meta.len())
                .sum();
            LeftoverWriters {
                dir,
                worktrees,
                bytes,
            }
        })
        .collect()
}

/// The writers directories under `writers` (other than `ours`) whose run is gone: nobody
/// holds their lock.
fn stale_runs(writers: &Path, ours: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(writers) else {
        return Vec::new();
    };
    (entries.flatten())
        .map(|entry| entry.path())
        .filter(|dir| dir != ours && is_real_dir(dir))
        .filter(|dir| {
            // A link or a FIFO planted as the lock is not opened (nor waited on): not ours.
            braincode_sandbox::beneath::open_file(dir, Path::new(LOCK_FILE))
                .map(|file| file.try_lock().is_ok())
                // No lock file: a directory from before its lock was made, or not ours.
                .unwrap_or(true)
        })
        .collect()
}

/// A fixed identity for the snapshot commit (no user configuration is read).
const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Braincode"),
    ("GIT_AUTHOR_EMAIL", "braincode@localhost"),
    ("GIT_COMMITTER_NAME", "Braincode"),
    ("GIT_COMMITTER_EMAIL", "braincode@localhost"),
];

/// Whether `path` is a directory and not a link to one.
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
}

/// Makes `dir` unless it is already a real directory; a link planted in its place is refused.
fn make_real_dir(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "{} is not a directory (a link?); writers do not use it",
            dir.display()
        )),
        Err(_) => std::fs::create_dir(dir).map_err(|err| format!("{}: {err}", dir.display())),
    }
}

/// A file name made of `name`'s safe characters.
fn safe_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
