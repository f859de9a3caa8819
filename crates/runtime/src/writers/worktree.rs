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

use super::leftovers::stale_runs;
use super::sparse::{self, SparseWorktree};

/// The largest index of the user's a snapshot starts from (a larger one: `HEAD`'s tree).
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;
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
    /// Held while git makes a worktree.
    adding: tokio::sync::Mutex<()>,
    /// Whether the snapshot is the one an interrupted run of the same id took (its
    /// worktrees can be taken up again).
    reopened: bool,
    /// The snapshot's symbolic links (checked out in every worktree at once).
    links: Vec<String>,
    /// The snapshot's files: what a new worktree has pending (none on disk).
    files: sparse::Pending,
    /// Held (locked) while the run lives: the next run removes a writers directory whose
    /// lock it can take (its run was killed before its cleanup).
    _alive: std::fs::File,
}

impl Worktrees {
    /// Takes the snapshot of `root` for run `run_id`. `Err` says why writers cannot have
    /// worktrees here (not a git repository, `.git` not a directory, submodules, no OS
    /// sandbox).
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
            adding: tokio::sync::Mutex::new(()),
            reopened: previous.is_some(),
            links: Vec::new(),
            files: sparse::Pending::default(),
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
            Some(snapshot) => {
                let listed = made
                    .git(
                        &["ls-tree", "-r", "-z", "--full-tree", snapshot.as_str()],
                        &[],
                    )
                    .await?;
                made.links = links_in(&listed);
                made.files = sparse::Pending::of_listing(&listed);
                snapshot
            }
            None => {
                let (snapshot, listed) = made.take_snapshot().await?;
                made.links = links_in(&listed);
                made.files = sparse::Pending::of_listing(&listed);
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

    /// The snapshot commit, and its index (`git ls-files --stage -z`).
    async fn take_snapshot(&self) -> Result<(String, String), String> {
        let index = self.base.join(SNAPSHOT_INDEX);
        // The temporary index starts as a copy of the user's own: its stat data spare git
        // re-reading every unchanged file, and it holds the tracked files `.gitignore`
        // matches. Read beneath the project with no link followed; without one, `HEAD`'s tree.
        let copied = braincode_sandbox::beneath::read_file(
            &self.root,
            Path::new(".git/index"),
            MAX_INDEX_BYTES,
        )
        .and_then(|bytes| {
            braincode_sandbox::beneath::write_file(
                &self.base,
                Path::new(SNAPSHOT_INDEX),
                &bytes,
                0o600,
            )
        })
        .is_ok();
        let index = index.to_string_lossy().into_owned();
        let with_index = [("GIT_INDEX_FILE", index.as_str())];
        let head = async {
            let head = self.git(&["rev-parse", "--verify", "-q", "HEAD"], &[]);
            (head.await.ok())
                .map(|out| out.trim().to_string())
                .filter(|h| !h.is_empty())
        };
        let add = || self.git(&["add", "-A", "--", "."], &with_index);
        let head = if copied {
            let (head, added) = futures::future::join(head, add()).await;
            added?;
            head
        } else {
            let head = head.await;
            if head.is_some() {
                self.git(&["read-tree", "HEAD"], &with_index).await?;
            }
            add().await?;
            head
        };
        // A worktree has a submodule's directory empty (git does not check submodules out in
        // it): a writer would not see its files, and what it wrote there git would not list,
        // so the change would be lost. Such a project keeps writers out of worktrees.
        let staged = self
            .git(&["ls-files", "--stage", "-z"], &with_index)
            .await?;
        let submodules: Vec<&str> = (staged.split('\0'))
            .filter_map(|entry| entry.strip_prefix("160000 "))
            .filter_map(|entry| entry.split_once('\t').map(|(_, path)| path))
            .collect();
        if !submodules.is_empty() {
            let _ = std::fs::remove_file(&index);
            let more = match submodules.len() {
                1..=3 => String::new(),
                n => format!(" and {} more", n - 3),
            };
            return Err(format!(
                "the project has submodules ({}{more}), which a writer's worktree would have empty",
                submodules[..submodules.len().min(3)].join(", ")
            ));
        }
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
        Ok((commit.trim().to_string(), staged))
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
    /// place is removed first), checked out sparsely: no project file is written until the
    /// writer's tools use it ([`SparseWorktree`]), so making one costs the same on a project of
    /// any size. Symbolic links, which the tools never write, are checked out at once.
    pub async fn add(&self, name: &str) -> Result<SparseWorktree, String> {
        let name = safe_name(name);
        let path = self.base.join(&name);
        // What an interrupted run left of it: its directory, and git's record of it (named
        // after it, as the run's names are unique), possibly cut halfway by the kill and
        // locked, which no `prune` removes. Neither follows a link.
        let record = self.root.join(".git").join("worktrees").join(&name);
        for leftover in [&path, &record] {
            if std::fs::symlink_metadata(leftover).is_ok() {
                std::fs::remove_dir_all(leftover)
                    .map_err(|err| format!("{}: {err}", leftover.display()))?;
            }
        }
        let text = path.to_string_lossy().into_owned();
        let args = [
            "worktree",
            "add",
            "--detach",
            "--no-checkout",
            "--quiet",
            text.as_str(),
            self.snapshot.as_str(),
        ];
        {
            // One at a time: a `worktree add` reads every worktree git has, and fails on one
            // half registered beside it.
            let _one = self.adding.lock().await;
            self.git(&args, &[]).await?;
        }
        if let Ok(mut made) = self.made.lock() {
            made.push(path.clone());
        }
        let path =
            std::fs::canonicalize(&path).map_err(|err| format!("the new worktree: {err}"))?;
        // git names the worktree's directory after ours (nothing is left at that name).
        let git_dir = self.git_dir_of(&path)?;
        braincode_sandbox::beneath::write_file(
            &git_dir,
            Path::new("info/sparse-checkout"),
            sparse::NOTHING,
            0o644,
        )
        .map_err(|err| format!("the worktree's sparse-checkout file: {err}"))?;
        self.git_at(
            &path,
            &["read-tree", "-m", "-u", "HEAD"],
            &[sparse::SPARSE],
            None,
        )
        .await?;
        if !self.links.is_empty() {
            let input: Vec<u8> = (self.links.iter())
                .flat_map(|link| link.bytes().chain([0]))
                .collect();
            for args in [
                &["update-index", "--no-skip-worktree", "-z", "--stdin"][..],
                &["checkout-index", "-z", "--stdin"][..],
            ] {
                self.git_at(&path, args, &[sparse::SPARSE], Some(&input))
                    .await?;
            }
        }
        // Every regular file is pending: known from the snapshot, no need to ask git.
        let snapshot = Some(self.snapshot.clone());
        let files = Some(self.files.clone());
        Ok(SparseWorktree::new(
            path,
            git_dir,
            self.sandbox.clone(),
            snapshot,
            files,
        ))
    }

    /// The worktree an interrupted run left at `path`, as its writer's tools see it.
    pub fn sparse(&self, path: PathBuf) -> Result<SparseWorktree, String> {
        let git_dir = self.git_dir_of(&path)?;
        // As the interrupted run left it: git's index says what is pending.
        Ok(SparseWorktree::new(
            path,
            git_dir,
            self.sandbox.clone(),
            None,
            None,
        ))
    }

    /// The git directory a worktree's `.git` file names, which must be git's record of it
    /// under the project's `.git/worktrees`.
    fn git_dir_of(&self, worktree: &Path) -> Result<PathBuf, String> {
        let recorded = braincode_sandbox::beneath::read_file(worktree, Path::new(".git"), 4096)
            .map_err(|err| format!("the worktree's .git: {err}"))?;
        let recorded = String::from_utf8_lossy(&recorded);
        // Absolute, or relative to the worktree (`worktree.useRelativePaths`).
        let named = (recorded.trim().strip_prefix("gitdir: "))
            .and_then(|dir| std::fs::canonicalize(worktree.join(dir)).ok());
        let records = self.root.join(".git").join("worktrees");
        match named {
            Some(dir) if dir.parent() == Some(records.as_path()) => Ok(dir),
            _ => Err(format!(
                "the worktree's .git names {:?}, not a record under {}",
                recorded.trim(),
                records.display()
            )),
        }
    }

    /// Removes every worktree made and the run's writers directory: the worktrees' files all
    /// at once (one thread each; they are in the run's own directory), then one `prune` for
    /// git to forget the worktrees whose directory is gone.
    pub async fn remove_all(&self) {
        let made: Vec<PathBuf> = match self.made.lock() {
            Ok(mut made) => std::mem::take(&mut *made),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        let removed = tokio::task::spawn_blocking(move || {
            std::thread::scope(|scope| {
                for path in &made {
                    scope.spawn(move || std::fs::remove_dir_all(path));
                }
            });
        });
        let _ = removed.await;
        // Before the run's directory goes: git's sandbox has it as a writable root.
        let _ = self.git(&["worktree", "prune"], &[]).await;
        let _ = std::fs::remove_dir_all(&self.base);
    }

    /// Runs confined git in the project; its standard output, or why it failed.
    async fn git(&self, args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
        let out = self.git_at(&self.root, args, env, None).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Runs confined git in `cwd` (the project or one of the worktrees), `input` on its
    /// standard input.
    pub(super) async fn git_at(
        &self,
        cwd: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        input: Option<&[u8]>,
    ) -> Result<Vec<u8>, String> {
        confined_git(&self.sandbox, cwd, args, env, input).await
    }
}

/// Runs git in `sandbox` (confined as all of Braincode's own git) in `cwd`, `input` on its
/// standard input; its standard output, or why it failed.
pub(super) async fn confined_git(
    sandbox: &Sandbox,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    input: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    use tokio::io::AsyncWriteExt;
    let mut command = braincode_tools::git_safe::git_command_in(sandbox, cwd, args);
    for (name, value) in env {
        command.env(name, value);
    }
    command
        .stdin(match input {
            Some(_) => std::process::Stdio::piped(),
            None => std::process::Stdio::null(),
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    command.kill_on_drop(true);
    let failed = |err: std::io::Error| format!("git {}: {err}", args[0]);
    let mut child = command.spawn().map_err(failed)?;
    let stdin = child.stdin.take();
    let input = input.map(<[u8]>::to_vec);
    let run = async move {
        // Written while the output is read: a large input cannot fill both pipes.
        let write = async {
            if let (Some(mut stdin), Some(input)) = (stdin, input) {
                let _ = stdin.write_all(&input).await;
            }
        };
        let (_, output) = tokio::join!(write, child.wait_with_output());
        output
    };
    let output = tokio::time::timeout(GIT_TIMEOUT, run)
        .await
        .map_err(|_| format!("git {} took longer than {GIT_TIMEOUT:?}", args[0]))?
        .map_err(failed)?;
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

/// One answer of `git cat-file --batch` at the start of `out`: the blob's content (`None`:
/// missing, or not a file), and what follows it; `None` when `out` holds no whole answer.
pub(super) fn batch_entry(out: &[u8]) -> Option<(Option<Vec<u8>>, &[u8])> {
    let end = out.iter().position(|b| *b == b'\n')?;
    let header = std::str::from_utf8(&out[..end]).ok()?;
    let rest = &out[end + 1..];
    let mut words = header.rsplitn(3, ' ');
    let (Some(size), Some(kind)) = (words.next(), words.next()) else {
        return Some((None, rest));
    };
    let Ok(size) = size.parse::<usize>() else {
        // `<name> missing` (or ambiguous): no content follows.
        return Some((None, rest));
    };
    let content = rest.get(..size)?;
    let rest = rest.get(size + 1..)?;
    Some(((kind == "blob").then(|| content.to_vec()), rest))
}

/// The symbolic links (mode 120000) in `git ls-files --stage -z` or `git ls-tree -r -z`
/// output: both are `<mode> <type or id> …\t<path>` entries.
fn links_in(listed: &str) -> Vec<String> {
    (listed.split('\0'))
        .filter(|entry| entry.starts_with("120000 "))
        .filter_map(|entry| entry.split_once('\t').map(|(_, path)| path.to_string()))
        .collect()
}

/// The lock file of a run's writers directory.
pub(super) const LOCK_FILE: &str = ".alive";
/// The temporary index a run's snapshot is made in.
const SNAPSHOT_INDEX: &str = "snapshot.index";
/// The file of a run's writers directory that names its snapshot commit.
const SNAPSHOT_FILE: &str = "snapshot";

/// Whether `id` is a full hexadecimal git object id (SHA-1 or SHA-256).
pub(super) fn is_object_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A fixed identity for the snapshot commit (no user configuration is read).
pub(super) const IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "Braincode"),
    ("GIT_AUTHOR_EMAIL", "braincode@localhost"),
    ("GIT_COMMITTER_NAME", "Braincode"),
    ("GIT_COMMITTER_EMAIL", "braincode@localhost"),
];

/// Whether `path` is a directory and not a link to one.
pub(super) fn is_real_dir(path: &Path) -> bool {
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

use braincode_protocol::safe_name;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_answers_are_read_one_after_another() {
        let out = b"0123 blob 6\nfirst\n\n\
                    abc:new file.txt missing\n\
                    4567 tree 3\n\x01\x02\x03\n\
                    89ab blob 0\n\n";
        let (first, rest) = batch_entry(out).unwrap();
        // Content is taken by its size, line breaks and all.
        assert_eq!(first.as_deref(), Some(&b"first\n"[..]));
        let (missing, rest) = batch_entry(rest).unwrap();
        assert_eq!(missing, None, "a path not in the snapshot has no content");
        let (tree, rest) = batch_entry(rest).unwrap();
        assert_eq!(tree, None, "a directory is not a file's content");
        let (empty, rest) = batch_entry(rest).unwrap();
        assert_eq!(empty.as_deref(), Some(&b""[..]));
        assert!(rest.is_empty());
        assert!(batch_entry(rest).is_none());
        // A cut answer is no answer.
        assert!(batch_entry(b"0123 blob 6\nfir").is_none());
    }
}
