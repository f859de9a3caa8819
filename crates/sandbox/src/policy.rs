//! What a sandboxed command may touch: [`SandboxPolicy`] and the default lists behind
//! [`SandboxPolicy::for_project`].

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::SandboxError;

/// Paths inside the project that stay read-only for sandboxed commands, because writing them
/// would let a command act later outside the sandbox (git hooks and config, editor tasks, MCP
/// and agent configuration, package-manager config, direnv, dev containers, pre-commit hooks).
pub const PROTECTED_PROJECT_PATHS: &[&str] = &[
    ".git",
    ".gitmodules",
    ".hg",
    ".jj",
    ".agents",
    ".braincode",
    ".claude",
    ".codex",
    ".cursor",
    ".gemini",
    ".mcp.json",
    "mcp.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    ".cargo",
    ".vscode",
    ".idea",
    ".envrc",
    ".devcontainer",
    ".pre-commit-config.yaml",
    ".husky",
    "lefthook.yml",
    ".lefthook.yml",
];

/// File-name patterns of secret files inside a project, hidden at any depth: an exact name,
/// `prefix*` or `*suffix`. Names in [`SECRET_FILE_EXCEPTIONS`] are not secrets.
pub const SECRET_FILE_NAMES: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".pgpass",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
];

/// Names that match [`SECRET_FILE_NAMES`] but are templates committed on purpose.
pub const SECRET_FILE_EXCEPTIONS: &[&str] = &[
    ".env.example",
    ".env.sample",
    ".env.template",
    ".env.dist",
    ".env.defaults",
];

/// Secret paths relative to the user's home, hidden from sandboxed commands (credentials of
/// cloud CLIs, package registries, git, ssh, gpg, other agents, browsers, shell history).
/// An entry ending in `*` hides every sibling whose name starts with the rest.
pub const HOME_SECRET_PATHS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".oci",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/git/credentials",
    ".config/doctl",
    ".config/rclone",
    ".config/op",
    ".config/github-copilot",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".local/share/keyrings",
    ".password-store",
    ".docker/config.json",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".yarnrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".gem/credentials",
    ".cargo/credentials*",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".claude.json",
    ".bash_history",
    ".zsh_history",
];

/// Directories the secret-file walk never enters: version control data, dependencies and build
/// output, which are big and do not hold the project's own `.env` files.
pub const WALK_SKIPPED_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
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

/// How many directory entries the secret-file walk looks at before it stops; keeps
/// [`SandboxPolicy::for_project`] cheap on huge trees.
pub const WALK_MAX_ENTRIES: usize = 20_000;

/// How deep below the project root the secret-file walk goes.
pub const WALK_MAX_DEPTH: usize = 12;

/// What a sandboxed command may read, write and reach.
///
/// Everything outside the writable roots is read-only; `hidden` paths are not readable at all.
/// Paths that do not exist when the sandbox is built are skipped (nothing to protect yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The project directory, canonical; read-write.
    pub project_root: PathBuf,
    /// Extra read-write roots (often empty). Ones that do not exist are skipped.
    pub writable: Vec<PathBuf>,
    /// Paths inside writable roots that stay read-only (protected paths); nonexistent ones
    /// skipped.
    pub read_only: Vec<PathBuf>,
    /// Neither readable nor writable (files or dirs); nonexistent ones skipped.
    pub hidden: Vec<PathBuf>,
    /// `false` = no network at all, loopback of the host included.
    pub network: bool,
}

impl SandboxPolicy {
    /// Defaults for a project: `read_only` = the existing [`PROTECTED_PROJECT_PATHS`] inside the
    /// project; `hidden` = `braincode_home`, the existing [`HOME_SECRET_PATHS`] under
    /// `user_home`, and the project's secret files ([`SECRET_FILE_NAMES`], e.g. `.env`,
    /// `.env.*`) at any depth found by a bounded walk (skips [`WALK_SKIPPED_DIRS`], stops after
    /// [`WALK_MAX_ENTRIES`] entries or [`WALK_MAX_DEPTH`] levels). No extra writable roots,
    /// network off.
    ///
    /// The walk is a snapshot: a secret file created later is not hidden until the policy is
    /// built again.
    pub fn for_project(
        project_root: &Path,
        user_home: Option<&Path>,
        braincode_home: &Path,
    ) -> Self {
        let project_root =
            std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
        let read_only = PROTECTED_PROJECT_PATHS
            .iter()
            .map(|name| project_root.join(name))
            .filter(|path| exists(path))
            .collect();
        let mut hidden = vec![braincode_home.to_path_buf()];
        if let Some(home) = user_home {
            hidden.extend(home_secret_paths(home));
        }
        hidden.extend(project_secret_files(&project_root));
        Self {
            project_root,
            writable: Vec::new(),
            read_only,
            hidden,
            network: false,
        }
    }
}

/// Whether a path exists (a dangling symlink counts: something is there).
fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The existing [`HOME_SECRET_PATHS`] under `home`.
fn home_secret_paths(home: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in HOME_SECRET_PATHS {
        if let Some(prefix) = entry.strip_suffix('*') {
            let pattern = home.join(prefix);
            let (Some(dir), Some(start)) = (pattern.parent(), pattern.file_name()) else {
                continue;
            };
            let Ok(read) = std::fs::read_dir(dir) else {
                continue;
            };
            let start = start.to_string_lossy().into_owned();
            let mut matches: Vec<PathBuf> = read
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&start))
                .map(|e| e.path())
                .collect();
            matches.sort();
            found.extend(matches);
        } else {
            let path = home.join(entry);
            if exists(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// Whether a file name is a secret file name per [`SECRET_FILE_NAMES`].
pub fn is_secret_file_name(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    if SECRET_FILE_EXCEPTIONS.contains(&name) {
        return false;
    }
    SECRET_FILE_NAMES.iter().any(|pattern| {
        if let Some(prefix) = pattern.strip_suffix('*') {
            name.len() > prefix.len() && name.starts_with(prefix)
        } else if let Some(suffix) = pattern.strip_prefix('*') {
            name.len() > suffix.len() && name.ends_with(suffix)
        } else {
            name == *pattern
        }
    })
}

/// Secret files (not directories) inside `root`, found breadth-first within the walk bounds.
fn project_secret_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([(root.to_path_buf(), 0usize)]);
    let mut seen = 0usize;
    while let Some((dir, depth)) = queue.pop_front() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                return found;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if file_type.is_dir() {
                let skipped = name
                    .to_str()
                    .is_some_and(|n| WALK_SKIPPED_DIRS.contains(&n));
                if !skipped && depth < WALK_MAX_DEPTH {
                    queue.push_back((entry.path(), depth + 1));
                }
            } else if is_secret_file_name(&name) {
                // A symlink named `.env` is hidden through its target (see `normalize`), unless
                // it points at a directory, such as a virtualenv called `.env`.
                let path = entry.path();
                if !path.is_dir() {
                    found.push(path);
                }
            }
        }
    }
    found
}

/// A policy with canonical, existing paths only, checked for consistency. Used by every
/// backend so they all enforce the same thing.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedPolicy {
    /// Project root first, then the extra writable roots; canonical, existing directories,
    /// sorted so that a parent comes before its children.
    pub writable: Vec<PathBuf>,
    /// Existing read-only paths that lie inside a writable root (others are read-only anyway).
    pub read_only: Vec<PathBuf>,
    /// Existing hidden paths, canonical.
    pub hidden: Vec<PathBuf>,
    /// Whether the network is allowed.
    pub network: bool,
}

impl ResolvedPolicy {
    /// Whether `path` lies inside (or is) one of the writable roots.
    pub fn in_writable(&self, path: &Path) -> bool {
        self.writable.iter().any(|root| path.starts_with(root))
    }
}

/// Canonicalises and checks `policy`.
pub(crate) fn resolve(policy: &SandboxPolicy) -> Result<ResolvedPolicy, SandboxError> {
    let invalid = |reason: String| SandboxError::InvalidPolicy { reason };
    if !policy.project_root.is_absolute() {
        return Err(invalid(format!(
            "project root {} is not an absolute path; pass the canonical project directory",
            policy.project_root.display()
        )));
    }
    let project = std::fs::canonicalize(&policy.project_root).map_err(|e| {
        invalid(format!(
            "project root {} cannot be resolved ({e}); pass an existing directory",
            policy.project_root.display()
        ))
    })?;
    if !project.is_dir() {
        return Err(invalid(format!(
            "project root {} is not a directory; pass the project directory",
            project.display()
        )));
    }
    if project == Path::new("/") {
        return Err(invalid(
            "project root is `/`, which would make the whole system writable; open a project directory instead"
                .to_string(),
        ));
    }
    let mut writable = vec![project];
    for root in &policy.writable {
        if let Ok(root) = std::fs::canonicalize(root)
            && root.is_dir()
        {
            if root == Path::new("/") {
                return Err(invalid(
                    "a writable root is `/`, which would make the whole system writable; remove it from the policy"
                        .to_string(),
                ));
            }
            writable.push(root);
        }
    }
    sort_dedup(&mut writable);
    // A path inside another hidden path is hidden with it (and bubblewrap could not mount
    // over it inside the read-only placeholder).
    let mut hidden: Vec<PathBuf> = Vec::new();
    for path in canonical_existing(&policy.hidden) {
        if !hidden.iter().any(|outer| path.starts_with(outer)) {
            hidden.push(path);
        }
    }
    if let Some((h, w)) = hidden
        .iter()
        .find_map(|h| writable.iter().find(|w| w.starts_with(h)).map(|w| (h, w)))
    {
        return Err(invalid(format!(
            "hidden path {} contains the writable root {}; a command could not work there. Remove one of them from the policy",
            h.display(),
            w.display()
        )));
    }
    let resolved = ResolvedPolicy {
        writable,
        read_only: Vec::new(),
        hidden,
        network: policy.network,
    };
    let read_only = canonical_existing(&policy.read_only)
        .into_iter()
        .filter(|p| resolved.in_writable(p) && !resolved.writable.contains(p))
        .collect();
    Ok(ResolvedPolicy {
        read_only,
        ..resolved
    })
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = paths
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| p != Path::new("/"))
        .collect();
    sort_dedup(&mut out);
    out
}

/// Sorts paths so that parents come before children, and removes duplicates.
fn sort_dedup(paths: &mut Vec<PathBuf>) {
    paths.sort_by(|a, b| {
        a.components()
            .count()
            .cmp(&b.components().count())
            .then_with(|| a.cmp(b))
    });
    paths.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_file_names_match_env_files_but_not_templates() {
        for name in [
            ".env",
            ".env.local",
            ".env.production",
            "prod.env",
            "id_rsa",
            ".netrc",
        ] {
            assert!(is_secret_file_name(OsStr::new(name)), "{name}");
        }
        for name in [
            ".env.example",
            ".env.sample",
            "env",
            ".envrc",
            "README.md",
            ".env.",
        ] {
            assert!(!is_secret_file_name(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn for_project_lists_protected_and_secret_paths() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let project = tmp.path().join("proj");
        let home = tmp.path().join("home");
        let bc_home = home.join(".braincode");
        for dir in [
            project.join(".git/hooks"),
            project.join(".vscode"),
            project.join("src/deep/er"),
            project.join("node_modules/pkg"),
            project.join("venvdir/.env"),
            home.join(".ssh"),
            home.join(".cargo"),
            home.join(".config/gh"),
            bc_home.clone(),
        ] {
            std::fs::create_dir_all(dir)?;
        }
        for file in [
            project.join(".env"),
            project.join(".env.example"),
            project.join("src/deep/er/.env.local"),
            project.join("node_modules/pkg/.env"),
            project.join(".mcp.json"),
            home.join(".netrc"),
            home.join(".cargo/credentials.toml"),
            home.join(".cargo/config.toml"),
        ] {
            std::fs::write(file, "x")?;
        }
        let policy = SandboxPolicy::for_project(&project, Some(&home), &bc_home);
        let project = std::fs::canonicalize(&project)?;
        assert_eq!(policy.project_root, project);
        assert!(!policy.network);
        assert!(policy.writable.is_empty());
        let mut read_only = policy.read_only.clone();
        read_only.sort();
        assert_eq!(
            read_only,
            vec![
                project.join(".git"),
                project.join(".mcp.json"),
                project.join(".vscode")
            ]
        );
        for expected in [
            bc_home.clone(),
            home.join(".ssh"),
            home.join(".netrc"),
            home.join(".config/gh"),
            home.join(".cargo/credentials.toml"),
            project.join(".env"),
            project.join("src/deep/er/.env.local"),
        ] {
            assert!(
                policy.hidden.contains(&expected),
                "{} missing from {:?}",
                expected.display(),
                policy.hidden
            );
        }
        for absent in [
            home.join(".cargo/config.toml"),
            home.join(".aws"),
            project.join(".env.example"),
            project.join("node_modules/pkg/.env"),
            project.join("venvdir/.env"),
        ] {
            assert!(
                !policy.hidden.contains(&absent),
                "{} should not be hidden",
                absent.display()
            );
        }
        Ok(())
    }

    #[test]
    fn resolve_rejects_bad_roots_and_skips_missing_paths() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = std::fs::canonicalize(tmp.path())?;
        std::fs::create_dir(root.join(".git"))?;
        let mut policy = SandboxPolicy {
            project_root: root.clone(),
            writable: vec![root.join("missing")],
            read_only: vec![root.join(".git"), root.join("nope"), PathBuf::from("/etc")],
            hidden: vec![root.join("gone")],
            network: false,
        };
        let resolved = resolve(&policy).map_err(std::io::Error::other)?;
        assert_eq!(resolved.writable, vec![root.clone()]);
        assert_eq!(resolved.read_only, vec![root.join(".git")]);
        assert!(resolved.hidden.is_empty());

        std::fs::create_dir_all(root.join("secrets/inner"))?;
        policy.hidden = vec![root.join("secrets/inner"), root.join("secrets")];
        let resolved = resolve(&policy).map_err(std::io::Error::other)?;
        assert_eq!(resolved.hidden, vec![root.join("secrets")]);

        policy.hidden = vec![tmp.path().to_path_buf()];
        assert!(matches!(
            resolve(&policy),
            Err(SandboxError::InvalidPolicy { .. })
        ));
        policy.hidden.clear();
        policy.project_root = PathBuf::from("relative");
        assert!(matches!(
            resolve(&policy),
            Err(SandboxError::InvalidPolicy { .. })
        ));
        policy.project_root = PathBuf::from("/");
        assert!(matches!(
            resolve(&policy),
            Err(SandboxError::InvalidPolicy { .. })
        ));
        Ok(())
    }
}
