//! The protected-path guard: what no backend can forbid (creating a protected path that did
//! not exist when the sandbox was built, `web/.npmrc` or `.vscode/tasks.json`; and, under
//! Landlock, changing any protected path) is found after the fact, put back, and reported.
//!
//! The guard keeps a baseline of every protected path of the project (found at any depth by
//! [`crate::walk`]) and of the paths the policy makes read-only, with the contents of their
//! small files. [`Guard::check`] compares the project with it: a protected path that appeared
//! is removed, one that changed or disappeared is restored from the baseline. A change below
//! a path the backend itself keeps read-only can only come from outside the sandbox (the
//! user's editor, their own git): it is taken into the baseline, not undone.
//!
//! Every change the guard makes goes through [`crate::beneath`], so a symlink planted in the
//! project cannot turn a removal or a restore into a write outside it.

use std::collections::BTreeMap;
use std::fmt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::beneath::{self, Kept, read_file, remove_beneath};

/// Most entries one baseline tracks (a huge protected tree is tracked in part).
const MAX_TRACKED: usize = 20_000;
/// Largest file whose contents a baseline keeps to restore it.
const MAX_KEPT_FILE: u64 = 256 * 1024;
/// Most bytes of contents one baseline keeps.
const MAX_KEPT_TOTAL: usize = 16 * 1024 * 1024;
/// Inside a git directory, what can make git run something (the rest, objects and refs,
/// changes with every commit and runs nothing).
const GIT_DIR_TRACKED: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "hooks",
    "info",
    "modules",
    "worktrees",
];

/// What happened to one protected path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// It did not exist in the baseline.
    Created,
    /// Its contents, type or permissions changed.
    Modified,
    /// It existed in the baseline and is gone.
    Removed,
}

/// One change to a protected path, and whether the guard undid it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedChange {
    /// Relative to the project root.
    pub path: PathBuf,
    /// What happened.
    pub kind: ChangeKind,
    /// Whether it was undone (removed again, or restored from the baseline).
    pub undone: bool,
}

/// Protected paths changed by something running in the sandbox, and what was undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedViolation {
    /// Every change, outermost paths only.
    pub changes: Vec<ProtectedChange>,
}

impl fmt::Display for ProtectedViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .changes
            .iter()
            .map(|change| {
                let (what, undone) = match change.kind {
                    ChangeKind::Created => ("created", "removed again"),
                    ChangeKind::Modified => ("changed", "restored"),
                    ChangeKind::Removed => ("removed", "restored"),
                };
                format!(
                    "{what} {} ({})",
                    change.path.display(),
                    if change.undone {
                        undone
                    } else {
                        "could NOT be undone: check it by hand"
                    }
                )
            })
            .collect();
        write!(
            f,
            "a command changed protected paths, which only a person may change: {}",
            parts.join("; ")
        )
    }
}

impl std::error::Error for ProtectedViolation {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// What a change is judged by: `ctime` moves with every write, rename, chmod or link and
/// cannot be set back by a process (unlike `mtime`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Meta {
    kind: Kind,
    mode: u32,
    len: u64,
    ino: u64,
    ctime: (i64, i64),
}

#[derive(Debug, Clone)]
struct Entry {
    meta: Meta,
    /// A file's contents, when kept.
    content: Option<Arc<Vec<u8>>>,
    /// A symlink's target.
    link: Option<PathBuf>,
}

type Snapshot = BTreeMap<PathBuf, Entry>;

/// How a directory's children are tracked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everything.
    All,
    /// A git directory: only [`GIT_DIR_TRACKED`].
    GitDir,
    /// `modules/` or `worktrees/` of a git directory: git directories (or more levels of a
    /// submodule's path).
    GitContainer,
}

impl Scope {
    fn of_root(relative: &Path) -> Scope {
        let git = relative
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.eq_ignore_ascii_case(".git"));
        if git { Scope::GitDir } else { Scope::All }
    }

    /// The scope of the child `name` (at `absolute`), or `None` when it is not tracked.
    fn child(self, name: &std::ffi::OsStr, absolute: &Path) -> Option<Scope> {
        match self {
            Scope::All => Some(Scope::All),
            Scope::GitDir => {
                let name = name.to_str()?;
                if !GIT_DIR_TRACKED.contains(&name) {
                    None
                } else if name == "modules" || name == "worktrees" {
                    Some(Scope::GitContainer)
                } else {
                    Some(Scope::All)
                }
            }
            Scope::GitContainer => {
                let git = absolute.join("HEAD").exists() || absolute.join("config").exists();
                Some(if git {
                    Scope::GitDir
                } else {
                    Scope::GitContainer
                })
            }
        }
    }
}

/// The guard of one sandbox (see the module docs).
#[derive(Debug)]
pub(crate) struct Guard {
    root: PathBuf,
    /// Paths (relative) the backend keeps read-only.
    enforced: Vec<PathBuf>,
    /// Paths (relative) the policy makes read-only besides the protected list.
    extra: Vec<PathBuf>,
    baseline: Mutex<Snapshot>,
}

/// The outermost paths of a snapshot (the roots it was taken from).
fn roots_of(snapshot: &Snapshot) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for path in snapshot.keys() {
        if !roots.last().is_some_and(|root| path.starts_with(root)) {
            roots.push(path.clone());
        }
    }
    roots
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Guard {
    /// A guard of `root` (canonical) that also tracks `extra` and trusts the backend to keep
    /// `enforced` read-only (both absolute; those outside the root are ignored).
    pub(crate) fn new(root: &Path, extra: &[PathBuf], enforced: &[PathBuf]) -> Self {
        let relative = |paths: &[PathBuf]| -> Vec<PathBuf> {
            paths
                .iter()
                .filter_map(|p| p.strip_prefix(root).ok())
                .filter(|p| !p.as_os_str().is_empty())
                .map(Path::to_path_buf)
                .collect()
        };
        let guard = Self {
            root: root.to_path_buf(),
            enforced: relative(enforced),
            extra: relative(extra),
            baseline: Mutex::new(Snapshot::new()),
        };
        *lock(&guard.baseline) = guard.scan(true, &[]);
        guard
    }

    /// The state of every tracked path: the protected paths the walk finds, the extra ones
    /// and `also` (the baseline's, so a walk cut short by its bounds does not read as a
    /// removal); with `keep`, with the contents needed to restore them.
    fn scan(&self, keep: bool, also: &[PathBuf]) -> Snapshot {
        let mut roots = crate::walk::walk(&self.root, false).protected;
        roots.extend(self.extra.iter().cloned());
        roots.extend(also.iter().cloned());
        let mut snapshot = Snapshot::new();
        let mut kept = 0usize;
        let mut stack: Vec<(PathBuf, Scope)> = roots
            .into_iter()
            .map(|root| {
                let scope = Scope::of_root(&root);
                (root, scope)
            })
            .collect();
        while let Some((relative, scope)) = stack.pop() {
            if snapshot.len() >= MAX_TRACKED || snapshot.contains_key(&relative) {
                continue;
            }
            let absolute = self.root.join(&relative);
            let Ok(meta) = std::fs::symlink_metadata(&absolute) else {
                continue;
            };
            let kind = if meta.file_type().is_symlink() {
                Kind::Symlink
            } else if meta.is_dir() {
                Kind::Dir
            } else if meta.is_file() {
                Kind::File
            } else {
                Kind::Other
            };
            // A directory changes with every entry made in it: its entries are tracked on
            // their own, so only its type and permissions say it changed.
            let dir = kind == Kind::Dir;
            let mut entry = Entry {
                meta: Meta {
                    kind,
                    mode: meta.mode() & 0o7777,
                    len: if dir { 0 } else { meta.len() },
                    ino: if dir { 0 } else { meta.ino() },
                    ctime: if dir {
                        (0, 0)
                    } else {
                        (meta.ctime(), meta.ctime_nsec())
                    },
                },
                content: None,
                link: None,
            };
            match kind {
                Kind::Symlink => entry.link = std::fs::read_link(&absolute).ok(),
                Kind::File
                    if keep
                        && meta.len() <= MAX_KEPT_FILE
                        && kept + meta.len() as usize <= MAX_KEPT_TOTAL =>
                {
                    if let Ok(bytes) = read_file(&self.root, &relative, MAX_KEPT_FILE) {
                        kept += bytes.len();
                        entry.content = Some(Arc::new(bytes));
                    }
                }
                Kind::Dir => {
                    if let Ok(children) = std::fs::read_dir(&absolute) {
                        for child in children.flatten() {
                            let name = child.file_name();
                            if let Some(child_scope) = scope.child(&name, &child.path()) {
                                stack.push((relative.join(&name), child_scope));
                            }
                        }
                    }
                }
                _ => {}
            }
            snapshot.insert(relative, entry);
        }
        snapshot
    }

    fn enforced(&self, relative: &Path) -> bool {
        self.enforced.iter().any(|e| relative.starts_with(e))
    }

    /// Compares the project with the baseline, undoes what changed (except below paths the
    /// backend keeps read-only, see the module docs) and takes the result as the new
    /// baseline. `Err` lists what changed and what could not be undone.
    pub(crate) fn check(&self) -> Result<(), ProtectedViolation> {
        let mut baseline = lock(&self.baseline);
        let current = self.scan(false, &roots_of(&baseline));
        let mut changes: Vec<ProtectedChange> = Vec::new();
        let outermost = |changes: &[ProtectedChange], path: &Path| {
            !changes.iter().any(|c| path.starts_with(&c.path))
        };
        for (path, old) in baseline.iter() {
            if self.enforced(path) || !outermost(&changes, path) {
                continue;
            }
            let kind = match current.get(path) {
                None => ChangeKind::Removed,
                Some(now)
                    if now.meta != old.meta && !same_file_content(&self.root, path, old, now) =>
                {
                    ChangeKind::Modified
                }
                Some(_) => continue,
            };
            let undone = restore(&self.root, path, &baseline);
            changes.push(ProtectedChange {
                path: path.clone(),
                kind,
                undone,
            });
        }
        for path in current.keys() {
            if baseline.contains_key(path) || self.enforced(path) || !outermost(&changes, path) {
                continue;
            }
            let undone = remove_beneath(&self.root, path).is_ok();
            changes.push(ProtectedChange {
                path: path.clone(),
                kind: ChangeKind::Created,
                undone,
            });
        }
        if changes.is_empty() {
            // Changes below enforced paths (the user's own edits) become the baseline.
            if current
                .iter()
                .any(|(p, e)| baseline.get(p).is_none_or(|b| b.meta != e.meta))
                || baseline.keys().any(|p| !current.contains_key(p))
            {
                *baseline = self.scan(true, &[]);
            }
            return Ok(());
        }
        *baseline = self.scan(true, &[]);
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        Err(ProtectedViolation { changes })
    }

    /// Takes the project as it is now as the baseline (after a change a person approved).
    pub(crate) fn accept(&self) {
        let fresh = self.scan(true, &[]);
        *lock(&self.baseline) = fresh;
    }
}

/// Whether a file whose metadata changed still has the baseline's contents and mode (a
/// rewrite with the same bytes is not a change worth stopping a run for).
fn same_file_content(root: &Path, path: &Path, old: &Entry, now: &Entry) -> bool {
    if old.meta.kind != Kind::File || now.meta.kind != Kind::File || old.meta.mode != now.meta.mode
    {
        return false;
    }
    match &old.content {
        Some(kept) => read_file(root, path, MAX_KEPT_FILE).is_ok_and(|bytes| bytes == **kept),
        None => false,
    }
}

/// Puts `path` and everything below it back as `baseline` has them; whether all of it could
/// be restored.
fn restore(root: &Path, path: &Path, baseline: &Snapshot) -> bool {
    let mut all = true;
    for (relative, entry) in baseline.range(path.to_path_buf()..) {
        if !relative.starts_with(path) {
            break;
        }
        let kept = match entry.meta.kind {
            Kind::Dir => Some(Kept::Dir),
            Kind::File => entry.content.as_deref().map(|bytes| Kept::File(bytes)),
            Kind::Symlink => entry.link.as_deref().map(Kept::Symlink),
            Kind::Other => None,
        };
        all &= kept
            .is_some_and(|kept| beneath::restore(root, relative, &kept, entry.meta.mode).is_ok());
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> std::io::Result<(tempfile::TempDir, PathBuf)> {
        let tmp = tempfile::tempdir()?;
        let root = std::fs::canonicalize(tmp.path())?;
        std::fs::create_dir_all(root.join(".git/hooks"))?;
        std::fs::create_dir_all(root.join(".git/objects/aa"))?;
        std::fs::create_dir_all(root.join("src"))?;
        std::fs::write(root.join(".git/config"), "[core]\n")?;
        std::fs::write(root.join(".git/objects/aa/bb"), "blob")?;
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n")?;
        Ok((tmp, root))
    }

    #[test]
    fn ordinary_changes_pass_and_protected_ones_are_undone() -> std::io::Result<()> {
        let (_tmp, root) = project()?;
        let outside = tempfile::tempdir()?;
        std::fs::write(outside.path().join("keep"), "keep")?;
        let guard = Guard::new(&root, &[], &[]);
        std::fs::write(root.join("src/main.rs"), "changed")?;
        std::fs::write(root.join(".git/objects/aa/cc"), "new object")?;
        assert_eq!(guard.check(), Ok(()));

        std::fs::write(root.join(".git/config"), "[core]\n\tfsmonitor = evil\n")?;
        std::fs::write(root.join(".git/hooks/pre-commit"), "evil")?;
        std::fs::create_dir_all(root.join("web/.vscode"))?;
        std::fs::write(root.join("web/.vscode/tasks.json"), "{}")?;
        std::fs::create_dir_all(root.join("sub"))?;
        std::os::unix::fs::symlink(outside.path(), root.join("sub/.envrc"))?;
        let violation = guard
            .check()
            .err()
            .ok_or_else(|| std::io::Error::other("no change"))?;
        let found: Vec<(String, ChangeKind, bool)> = violation
            .changes
            .iter()
            .map(|c| (c.path.display().to_string(), c.kind, c.undone))
            .collect();
        assert_eq!(
            found,
            vec![
                (".git/config".into(), ChangeKind::Modified, true),
                (".git/hooks/pre-commit".into(), ChangeKind::Created, true),
                ("sub/.envrc".into(), ChangeKind::Created, true),
                ("web/.vscode".into(), ChangeKind::Created, true),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config"))?,
            "[core]\n"
        );
        assert!(!root.join(".git/hooks/pre-commit").exists());
        assert!(!root.join("web/.vscode").exists());
        assert!(std::fs::symlink_metadata(root.join("sub/.envrc")).is_err());
        assert!(outside.path().join("keep").exists(), "a link was followed");
        assert!(
            violation
                .to_string()
                .contains("created web/.vscode (removed again)")
        );
        // The project as restored is the new baseline.
        assert_eq!(guard.check(), Ok(()));

        std::fs::remove_dir_all(root.join(".git"))?;
        let violation = guard
            .check()
            .err()
            .ok_or_else(|| std::io::Error::other("no change"))?;
        assert_eq!(violation.changes.len(), 1);
        assert_eq!(violation.changes[0].kind, ChangeKind::Removed);
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config"))?,
            "[core]\n"
        );
        Ok(())
    }

    #[test]
    fn changes_below_enforced_paths_and_accepted_ones_are_kept() -> std::io::Result<()> {
        let (_tmp, root) = project()?;
        let guard = Guard::new(&root, &[root.join("data")], &[root.join(".git")]);
        std::fs::write(root.join(".git/config"), "[user]\n\tname = me\n")?;
        assert_eq!(guard.check(), Ok(()));
        assert_eq!(
            std::fs::read_to_string(root.join(".git/config"))?,
            "[user]\n\tname = me\n"
        );
        std::fs::create_dir_all(root.join(".vscode"))?;
        guard.accept();
        assert_eq!(guard.check(), Ok(()));
        assert!(root.join(".vscode").exists());
        Ok(())
    }
}
