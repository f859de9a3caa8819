//! A writer's worktree is checked out sparsely: making it writes no project file (every index
//! entry is marked skip-worktree), so it takes milliseconds and no copy of the project on
//! disk, whatever the project's size. A file reaches the worktree's disk when the writer's
//! tools first read or change it ([`LazyFiles`]); until then it is *pending*, listed and
//! searched from git's objects. A command run in the worktree sees the whole tree: the first
//! one materializes every pending file (git's own sparse checkout, widened).
//!
//! Git's sparse checkout is switched on for these calls alone, through the environment, so
//! the project's configuration is never written. `git status` under it counts a pending file
//! that is on disk as a normal one, and a materialized file has its skip-worktree bit cleared
//! when it is written, so a writer's change, a deletion included, is seen like in a full
//! checkout.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use braincode_sandbox::Sandbox;
use braincode_tools::LazyFiles;

use super::merge::FileSides;
use super::worktree::{batch_entry, confined_git, is_object_id};

/// Git's sparse checkout for one call, without writing it into any configuration.
pub(super) const SPARSE: (&str, &str) = (
    "GIT_CONFIG_PARAMETERS",
    "'core.sparseCheckout=true' 'core.sparseCheckoutCone=false'",
);
/// The sparse-checkout patterns of a worktree that has no file on disk yet.
pub(super) const NOTHING: &[u8] = b"!/*\n";
/// The sparse-checkout patterns of a worktree with every file on disk.
const EVERYTHING: &[u8] = b"/*\n";

/// A pending file: its blob and whether it is executable.
#[derive(Debug, Clone)]
struct Entry {
    blob: String,
    executable: bool,
}

/// What is still pending in a worktree.
#[derive(Debug, Default, Clone)]
pub(super) struct Pending {
    entries: BTreeMap<String, Entry>,
    names: Arc<BTreeSet<String>>,
}

impl Pending {
    /// The regular files of a `git ls-files --stage -z` or `git ls-tree -r -z` listing (both
    /// `<mode> … <object id> …\t<path>` entries), all pending: a new sparse worktree of it.
    pub(super) fn of_listing(listed: &str) -> Self {
        let mut pending = Self::default();
        for line in listed.split('\0') {
            let Some((head, path)) = line.split_once('\t') else {
                continue;
            };
            let mut words = head.split(' ');
            let mode = words.next().unwrap_or_default();
            let blob = words.find(|word| is_object_id(word));
            if let (Some(blob), "100644" | "100755") = (blob, mode) {
                let entry = Entry {
                    blob: blob.to_string(),
                    executable: mode == "100755",
                };
                pending.entries.insert(path.to_string(), entry);
            }
        }
        pending.names = Arc::new(pending.entries.keys().cloned().collect());
        pending
    }

    fn remove(&mut self, paths: &[String]) {
        for path in paths {
            self.entries.remove(path);
        }
        self.names = Arc::new(self.entries.keys().cloned().collect());
    }
}

/// One writer's sparse worktree, as its tools see it.
#[derive(Debug)]
pub struct SparseWorktree {
    /// The worktree (canonical).
    path: PathBuf,
    /// Its git directory (`<project>/.git/worktrees/<name>`).
    git_dir: PathBuf,
    /// Git that may write the worktree, its index and git's objects.
    sandbox: Arc<Sandbox>,
    /// Read from the index on first use, then kept up to date.
    pending: tokio::sync::Mutex<Option<Pending>>,
    /// Its `HEAD` when known without asking git: the snapshot it was made from, or the commit
    /// of what was carried into it (an interrupted run's worktree: unknown).
    head: std::sync::Mutex<Option<String>>,
}

impl SparseWorktree {
    pub(super) fn new(
        path: PathBuf,
        git_dir: PathBuf,
        sandbox: Arc<Sandbox>,
        head: Option<String>,
        pending: Option<Pending>,
    ) -> Self {
        Self {
            path,
            git_dir,
            sandbox,
            pending: tokio::sync::Mutex::new(pending),
            head: std::sync::Mutex::new(head),
        }
    }

    /// The commit the worktree starts from (its `HEAD`).
    pub async fn head(&self) -> Result<String, String> {
        if let Some(head) = self.head.lock().ok().and_then(|head| head.clone()) {
            return Ok(head);
        }
        let out = self.git(&["rev-parse", "HEAD"], None).await?;
        let head = String::from_utf8_lossy(&out).trim().to_string();
        if let Ok(mut known) = self.head.lock() {
            *known = Some(head.clone());
        }
        Ok(head)
    }

    /// Says the worktree's `HEAD` is now `commit`.
    pub(super) fn moved_to(&self, commit: &str) {
        if let Ok(mut head) = self.head.lock() {
            *head = Some(commit.to_string());
        }
    }

    /// The worktree.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn git(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        confined_git(&self.sandbox, &self.path, args, &[SPARSE], input).await
    }

    /// The pending files, read from the index (its skip-worktree entries) the first time.
    async fn loaded(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Pending>>, String> {
        let mut guard = self.pending.lock().await;
        if guard.is_none() {
            let listed = self.git(&["ls-files", "--stage", "-t", "-z"], None).await?;
            let listed = String::from_utf8_lossy(&listed);
            // `S <mode> <blob> <stage>\t<path>`: skip-worktree, i.e. not on disk.
            let skipped: Vec<&str> = (listed.split('\0'))
                .filter_map(|line| line.strip_prefix("S "))
                .collect();
            *guard = Some(Pending::of_listing(&skipped.join("\0")));
        }
        Ok(guard)
    }

    /// The paths the writer changed (against its `HEAD`), sorted; `.git` left out.
    pub async fn changed_files(&self) -> Result<Vec<String>, String> {
        // Under the sparse checkout, a pending file on disk (a command may have written it)
        // is a normal one.
        let args = [
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ];
        let status = self.git(&args, None).await?;
        let mut paths: Vec<String> = (status.split(|b| *b == 0))
            .filter(|entry| entry.len() > 3)
            .map(|entry| String::from_utf8_lossy(&entry[3..]).into_owned())
            .filter(|path| !path.split('/').any(|part| part == ".git"))
            // A write cut by a kill (an edit, a file written out) leaves its temporary file:
            // nothing the writer made.
            .filter(|path| {
                let name = path.rsplit('/').next().unwrap_or(path);
                !braincode_sandbox::beneath::is_unfinished_write(name)
            })
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The contents of `paths` in `commit` (`None`: not a file there), read by one
    /// `git cat-file --batch`.
    async fn contents_at(
        &self,
        commit: &str,
        paths: &[String],
    ) -> Result<HashMap<String, Option<Vec<u8>>>, String> {
        let mut contents = HashMap::new();
        // The batch reads one name a line: a path with a line break in it is read alone.
        let (batched, alone): (Vec<&String>, Vec<&String>) =
            paths.iter().partition(|path| !path.contains('\n'));
        for path in alone {
            let spec = format!("{commit}:{path}");
            let blob = self.git(&["cat-file", "blob", spec.as_str()], None).await;
            contents.insert(path.clone(), blob.ok());
        }
        if batched.is_empty() {
            return Ok(contents);
        }
        let input: String = (batched.iter())
            .map(|path| format!("{commit}:{path}\n"))
            .collect();
        let out = self
            .git(&["cat-file", "--batch"], Some(input.as_bytes()))
            .await?;
        let mut rest = out.as_slice();
        for path in batched {
            let (content, after) = batch_entry(rest)
                .ok_or_else(|| format!("git cat-file --batch: no answer for {path}"))?;
            contents.insert(path.clone(), content);
            rest = after;
        }
        Ok(contents)
    }

    /// What the writer changed, each file with its side at the worktree's start (the
    /// snapshot, or what was carried into it) and its side now; the project's side is left
    /// for the merge to read.
    pub(super) async fn changes(&self) -> Result<Vec<FileSides>, String> {
        let (paths, head) = futures::future::join(self.changed_files(), self.head()).await;
        let (paths, head) = (paths?, head?);
        let mut bases = self.contents_at(&head, &paths).await?;
        (paths.into_iter())
            .map(|path| {
                Ok(FileSides {
                    base: bases.remove(&path).flatten(),
                    ours: None,
                    theirs: super::read_beneath(&self.path, &path)?,
                    path,
                })
            })
            .collect()
    }

    /// The contents of `blobs`, by one `git cat-file --batch`.
    async fn blobs(&self, blobs: &[&str]) -> Result<Vec<Option<Vec<u8>>>, String> {
        if blobs.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = blobs.iter().map(|blob| format!("{blob}\n")).collect();
        let out = self
            .git(&["cat-file", "--batch"], Some(input.as_bytes()))
            .await?;
        let mut rest = out.as_slice();
        let mut contents = Vec::with_capacity(blobs.len());
        for blob in blobs {
            let (content, after) = batch_entry(rest)
                .ok_or_else(|| format!("git cat-file --batch: no answer for {blob}"))?;
            contents.push(content);
            rest = after;
        }
        Ok(contents)
    }
}

#[async_trait]
impl LazyFiles for SparseWorktree {
    async fn pending(&self) -> Result<Arc<BTreeSet<String>>, String> {
        let guard = self.loaded().await?;
        Ok(guard.as_ref().map(|p| p.names.clone()).unwrap_or_default())
    }

    async fn read_pending(&self, paths: &[String]) -> Result<HashMap<String, Vec<u8>>, String> {
        let wanted: Vec<(String, String)> = {
            let guard = self.loaded().await?;
            let Some(pending) = guard.as_ref() else {
                return Ok(HashMap::new());
            };
            (paths.iter())
                .filter_map(|path| {
                    let entry = pending.entries.get(path)?;
                    Some((path.clone(), entry.blob.clone()))
                })
                .collect()
        };
        let blobs: Vec<&str> = wanted.iter().map(|(_, blob)| blob.as_str()).collect();
        let contents = self.blobs(&blobs).await?;
        Ok((wanted.into_iter().zip(contents))
            .filter_map(|((path, _), content)| Some((path, content?)))
            .collect())
    }

    async fn materialize(&self, paths: &[String]) -> Result<(), String> {
        let mut guard = self.loaded().await?;
        let Some(pending) = guard.as_mut() else {
            return Ok(());
        };
        let wanted: Vec<(String, Entry)> = (paths.iter())
            .filter_map(|path| Some((path.clone(), pending.entries.get(path)?.clone())))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let blobs: Vec<&str> = wanted
            .iter()
            .map(|(_, entry)| entry.blob.as_str())
            .collect();
        let contents = self.blobs(&blobs).await?;
        for ((path, entry), content) in wanted.iter().zip(contents) {
            let content = content.ok_or_else(|| format!("{path}: not in git's objects"))?;
            let mode = if entry.executable { 0o755 } else { 0o644 };
            // Beneath the worktree, no link followed: a link the writer planted among the
            // parents is refused.
            braincode_sandbox::beneath::write_file(&self.path, Path::new(path), &content, mode)
                .map_err(|err| format!("{path}: {err}"))?;
        }
        // On disk now: git sees them (a deletion too) as in a full checkout. Should this fail,
        // `status` still counts a present file as a normal one.
        let names: Vec<String> = wanted.into_iter().map(|(path, _)| path).collect();
        let input: Vec<u8> = (names.iter())
            .flat_map(|path| path.bytes().chain([0]))
            .collect();
        self.git(
            &["update-index", "--no-skip-worktree", "-z", "--stdin"],
            Some(&input),
        )
        .await?;
        pending.remove(&names);
        Ok(())
    }

    async fn materialize_all(&self) -> Result<(), String> {
        let mut guard = self.loaded().await?;
        if guard.as_ref().is_some_and(|p| p.entries.is_empty()) {
            return Ok(());
        }
        braincode_sandbox::beneath::write_file(
            &self.git_dir,
            Path::new("info/sparse-checkout"),
            EVERYTHING,
            0o644,
        )
        .map_err(|err| format!("the worktree's sparse-checkout file: {err}"))?;
        // A one-tree merge of `HEAD` under the widened patterns: the pending files are
        // written, what the writer changed or removed stays as it is.
        self.git(&["read-tree", "-m", "-u", "HEAD"], None).await?;
        *guard = Some(Pending::default());
        Ok(())
    }
}
