//! What a sandboxed command may touch: [`SandboxPolicy`], its defaults for a project
//! ([`SandboxPolicy::for_project`], from the lists in [`crate::lists`]) and its resolution into
//! canonical paths every backend enforces the same way.

use std::path::{Path, PathBuf};

use crate::SandboxError;
use crate::lists::HOME_SECRET_PATHS;

/// What a sandboxed command may read, write and reach.
///
/// Everything outside the writable roots is read-only; `hidden` paths are not readable at all.
/// Paths that do not exist when the sandbox is built are skipped by the backends; protected
/// paths that appear later are caught by [`crate::Sandbox::check_protected`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// The project directory, canonical; read-write unless `project_writable` is false.
    pub project_root: PathBuf,
    /// Whether commands may write the project (Braincode's own read-only helpers, such as
    /// its git queries, run with the project read-only).
    pub project_writable: bool,
    /// Extra read-write roots (often empty). Ones that do not exist are skipped.
    pub writable: Vec<PathBuf>,
    /// Paths inside writable roots that stay read-only (protected paths); nonexistent ones
    /// skipped.
    pub read_only: Vec<PathBuf>,
    /// Neither readable nor writable (files or dirs); nonexistent ones skipped.
    pub hidden: Vec<PathBuf>,
    /// `false` = no network at all, loopback of the host included.
    pub network: bool,
    /// UNIX sockets of the host a command may connect to (e.g. `/var/run/docker.sock`);
    /// every other host socket is refused. Sockets a command makes itself (in the project or
    /// its private temp dir) always work.
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Whether the project walk of [`SandboxPolicy::for_project`] stopped at its bounds
    /// ([`crate::WALK_MAX_ENTRIES`]), so secret files and protected paths past them are not
    /// covered (the sandbox says so in [`crate::Sandbox::gaps`]).
    pub walk_truncated: bool,
}

impl SandboxPolicy {
    /// Defaults for a project, from one walk of it (see [`crate::walk`]): `read_only` = the
    /// project's [`crate::PROTECTED_PROJECT_PATHS`] at any depth; `hidden` = `braincode_home`,
    /// the existing [`HOME_SECRET_PATHS`] under `user_home`, and the project's secret files
    /// at any depth ([`crate::is_secret_file`]: `.env`, keys, credentials, a `.npmrc` with a
    /// token; in `node_modules`, `target` and other dependency and build directories,
    /// [`crate::WALK_DEPENDENCY_DEPTH`] levels down). No extra writable roots, network off,
    /// no host UNIX socket.
    ///
    /// The walk is a snapshot: a secret file created later is not hidden until the policy is
    /// built again (protected paths created later are caught by
    /// [`crate::Sandbox::check_protected`]).
    pub fn for_project(
        project_root: &Path,
        user_home: Option<&Path>,
        braincode_home: &Path,
    ) -> Self {
        let mut policy = Self::read_only_helper(project_root, user_home, braincode_home);
        let found = crate::walk::walk(&policy.project_root, true);
        policy.project_writable = true;
        policy.read_only = (found.protected.iter())
            .map(|relative| policy.project_root.join(relative))
            .collect();
        policy.hidden.extend(found.secrets);
        policy.walk_truncated = found.truncated;
        policy
    }

    /// The policy of Braincode's own helper processes (its git queries): the project and
    /// everything else read-only, `braincode_home` and the existing [`HOME_SECRET_PATHS`]
    /// under `user_home` hidden, no network, no host UNIX socket. The project is not walked
    /// (nothing in it can be written, so no protected path needs a guard), which keeps it
    /// cheap to build.
    pub fn read_only_helper(
        project_root: &Path,
        user_home: Option<&Path>,
        braincode_home: &Path,
    ) -> Self {
        let project_root =
            std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
        let mut hidden = vec![braincode_home.to_path_buf()];
        if let Some(home) = user_home {
            hidden.extend(home_secret_paths(home));
        }
        Self {
            project_root,
            project_writable: false,
            writable: Vec::new(),
            read_only: Vec::new(),
            hidden,
            network: false,
            allow_unix_sockets: Vec::new(),
            walk_truncated: false,
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

/// A policy with canonical, existing paths only, checked for consistency. Used by every
/// backend so they all enforce the same thing.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedPolicy {
    /// The project root (when the policy lets commands write it) and the extra writable roots;
    /// canonical, existing directories, sorted so that a parent comes before its children.
    pub writable: Vec<PathBuf>,
    /// The project root when commands may only read it (bound read-only, so that it stays
    /// visible under a private `/tmp`).
    pub read_only_project: Option<PathBuf>,
    /// Existing read-only paths that lie inside a writable root (others are read-only anyway).
    pub read_only: Vec<PathBuf>,
    /// Existing hidden paths, canonical.
    pub hidden: Vec<PathBuf>,
    /// Whether the network is allowed.
    pub network: bool,
    /// Host UNIX sockets a command may connect to, canonical and existing.
    pub sockets: Vec<PathBuf>,
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
    let (mut writable, read_only_project) = if policy.project_writable {
        (vec![project], None)
    } else {
        (Vec::new(), Some(project))
    };
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
    if let Some((h, w)) = hidden.iter().find_map(|h| {
        writable
            .iter()
            .chain(&read_only_project)
            .find(|w| w.starts_with(h))
            .map(|w| (h, w))
    }) {
        return Err(invalid(format!(
            "hidden path {} contains the writable root {}; a command could not work there. Remove one of them from the policy",
            h.display(),
            w.display()
        )));
    }
    let resolved = ResolvedPolicy {
        writable,
        read_only_project,
        read_only: Vec::new(),
        hidden,
        network: policy.network,
        sockets: canonical_existing(&policy.allow_unix_sockets),
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
            project.join("web"),
            home.join(".ssh"),
            home.join(".m2"),
            home.join(".config/containers"),
            home.join(".cache/huggingface"),
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
            project.join("web/.npmrc"),
            home.join(".netrc"),
            home.join(".m2/settings.xml"),
            home.join(".config/containers/auth.json"),
            home.join(".cache/huggingface/token"),
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
                project.join(".vscode"),
                project.join("web/.npmrc"),
            ]
        );
        for expected in [
            bc_home.clone(),
            home.join(".ssh"),
            home.join(".netrc"),
            home.join(".config/gh"),
            home.join(".cargo/credentials.toml"),
            home.join(".m2/settings.xml"),
            home.join(".config/containers/auth.json"),
            home.join(".cache/huggingface/token"),
            project.join(".env"),
            project.join("src/deep/er/.env.local"),
            project.join("node_modules/pkg/.env"),
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
            project_writable: true,
            writable: vec![root.join("missing")],
            read_only: vec![root.join(".git"), root.join("nope"), PathBuf::from("/etc")],
            hidden: vec![root.join("gone")],
            network: false,
            allow_unix_sockets: vec![root.join("no.sock")],
            walk_truncated: false,
        };
        let resolved = resolve(&policy).map_err(std::io::Error::other)?;
        assert_eq!(resolved.writable, vec![root.clone()]);
        assert_eq!(resolved.read_only, vec![root.join(".git")]);
        assert!(resolved.hidden.is_empty());
        assert!(resolved.sockets.is_empty());

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
