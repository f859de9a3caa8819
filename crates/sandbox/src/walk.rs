//! The walk of a project that finds its secret files and its protected paths, at any depth.
//!
//! One breadth-first pass, no symlink followed, bounded by [`WALK_MAX_ENTRIES`] and
//! [`WALK_MAX_DEPTH`]. Secret files are looked for everywhere except inside version-control
//! data (`.git`, …), at any depth of the project's own directories, and
//! [`WALK_DEPENDENCY_DEPTH`] levels into dependencies and build output (`node_modules/.env`,
//! `node_modules/@scope/pkg/.env`, `target/debug/.env`, `.next/standalone/.env`): listing a
//! whole `node_modules` costs the kernel about a second per hundred thousand files, where
//! copied or shipped `.env` files sit near the top. Protected paths are looked for outside
//! [`WALK_SKIPPED_DIRS`]: tools that act outside the sandbox (git, editors, direnv) do not
//! read them inside dependencies, and skipping those keeps the check after every command
//! cheap.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use crate::lists::{is_protected_entry, secret_by_content, secret_by_name};

/// Directories whose contents the protected-path walk does not look into (dependencies, build
/// output, caches); the secret-file walk does.
pub const WALK_SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".next",
];

/// Version-control data: never searched for secret files (protected as a whole instead).
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// How many directory entries one walk looks at before it stops; a project bigger than that
/// is reported as only partly covered ([`Sandbox::gaps`](crate::Sandbox::gaps)).
pub const WALK_MAX_ENTRIES: usize = 200_000;

/// How deep below the project root a walk goes.
pub const WALK_MAX_DEPTH: usize = 64;

/// How many levels into a directory of [`WALK_SKIPPED_DIRS`] the secret walk looks (a
/// `@scope` directory of npm does not count as one).
pub const WALK_DEPENDENCY_DEPTH: usize = 2;

/// What one walk found.
#[derive(Debug, Default)]
pub(crate) struct WalkResult {
    /// Secret files (absolute), when asked for.
    pub secrets: Vec<PathBuf>,
    /// Protected paths, relative to the root, outermost only (nothing inside one is listed).
    pub protected: Vec<PathBuf>,
    /// Whether the bounds stopped the walk before it saw everything.
    pub truncated: bool,
}

/// Walks `root`. With `secrets` the walk also enters dependencies and build output and
/// reports secret files; without, it only looks for protected paths (the cheap walk run after
/// every command).
pub(crate) fn walk(root: &Path, secrets: bool) -> WalkResult {
    struct Dir {
        path: PathBuf,
        names: Vec<String>,
        /// Inside a directory the protected-path walk skips: how many levels below it.
        skipped: Option<usize>,
        /// Inside a protected path (its contents are covered by it).
        protected: bool,
    }
    let mut result = WalkResult::default();
    let mut queue = VecDeque::from([Dir {
        path: root.to_path_buf(),
        names: Vec::new(),
        skipped: None,
        protected: false,
    }]);
    let mut seen = 0usize;
    while let Some(dir) = queue.pop_front() {
        let Ok(read) = std::fs::read_dir(&dir.path) else {
            continue;
        };
        let parent: Vec<&str> = dir.names.iter().map(String::as_str).collect();
        for entry in read.flatten() {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                result.truncated = true;
                return result;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let os_name = entry.file_name();
            let Some(name) = os_name.to_str() else {
                continue;
            };
            let protected_here =
                dir.skipped.is_none() && !dir.protected && is_protected_entry(&parent, name);
            if protected_here {
                let mut relative: PathBuf = dir.names.iter().collect();
                relative.push(name);
                result.protected.push(relative);
            }
            if file_type.is_dir() {
                if VCS_DIRS.contains(&name) {
                    continue;
                }
                let skipped = match dir.skipped {
                    Some(depth) if name.starts_with('@') => Some(depth),
                    Some(depth) => Some(depth + 1),
                    None => WALK_SKIPPED_DIRS.contains(&name).then_some(0),
                };
                if (skipped.is_some() || dir.protected || protected_here) && !secrets {
                    continue;
                }
                if skipped.is_some_and(|depth| depth >= WALK_DEPENDENCY_DEPTH) {
                    continue;
                }
                if dir.names.len() < WALK_MAX_DEPTH {
                    let mut names = dir.names.clone();
                    names.push(name.to_string());
                    queue.push_back(Dir {
                        path: entry.path(),
                        names,
                        skipped,
                        protected: dir.protected || protected_here,
                    });
                } else {
                    result.truncated = true;
                }
            } else if secrets {
                let secret = match secret_by_name(&parent, name) {
                    Some(secret) => secret,
                    None => secret_by_content(&entry.path(), name),
                };
                // A symlink named `.env` is hidden through its target (the policy resolves
                // it), unless it points at a directory, such as a virtualenv called `.env`.
                if secret && !entry.path().is_dir() {
                    result.secrets.push(entry.path());
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_secrets_everywhere_and_protected_paths_outside_dependencies() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = tmp.path();
        let deep: PathBuf = (0..13).map(|i| format!("d{i}")).collect();
        for dir in [
            deep.clone(),
            PathBuf::from("node_modules/pkg/.git"),
            PathBuf::from("node_modules/@scope/pkg/lib/deep"),
            PathBuf::from("target/debug"),
            PathBuf::from(".git/hooks"),
            PathBuf::from("web/.vscode"),
            PathBuf::from(".github/workflows"),
            PathBuf::from("venv/.env"),
        ] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        for file in [
            deep.join(".env"),
            PathBuf::from("node_modules/pkg/.env"),
            PathBuf::from("node_modules/@scope/pkg/.env"),
            PathBuf::from("node_modules/@scope/pkg/lib/deep/.env"),
            PathBuf::from("target/.env"),
            PathBuf::from("target/debug/.env"),
            PathBuf::from(".git/.env"),
            PathBuf::from("web/.npmrc"),
            PathBuf::from("web/.vscode/tasks.json"),
            PathBuf::from(".github/workflows/ci.yml"),
            PathBuf::from("config/master.key"),
        ] {
            if let Some(parent) = root.join(&file).parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(root.join(file), "x")?;
        }
        let found = walk(root, true);
        assert!(!found.truncated);
        for secret in [
            deep.join(".env"),
            PathBuf::from("node_modules/pkg/.env"),
            PathBuf::from("node_modules/@scope/pkg/.env"),
            PathBuf::from("target/.env"),
            PathBuf::from("target/debug/.env"),
            PathBuf::from("config/master.key"),
        ] {
            assert!(found.secrets.contains(&root.join(&secret)), "{secret:?}");
        }
        // Past the dependency depth: not looked for (the cost of listing everything).
        assert!(!found.secrets.iter().any(|s| s.ends_with("lib/deep/.env")));
        assert!(!found.secrets.contains(&root.join(".git/.env")));
        assert!(!found.secrets.iter().any(|s| s.ends_with("venv/.env")));
        let mut protected = found.protected.clone();
        protected.sort();
        let expected: Vec<PathBuf> = [".git", ".github/workflows", "web/.npmrc", "web/.vscode"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(protected, expected);
        let cheap = walk(root, false);
        assert!(cheap.secrets.is_empty());
        let mut protected = cheap.protected;
        protected.sort();
        assert_eq!(protected, expected);
        Ok(())
    }
}
