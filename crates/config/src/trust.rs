//! Workspace trust: what a repository can make Braincode execute or load (project hooks,
//! project MCP servers, project settings, tools rules and checks) is inert until the user
//! trusts that project.
//!
//! Trust is stored in `<home>/trust.json`, keyed by the project's canonical path, together
//! with the SHA-256 of every trust-relevant file as it was when the user trusted it. A file
//! that changes, appears or disappears afterwards makes the project untrusted again, so a
//! hooks file the agent (or a `git pull`) rewrote needs the user's eyes before it runs. A
//! `trusted` field inside a project file means nothing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::json_io::{read_json_file, write_json_atomic};
use crate::{ConfigError, Home};

/// Project files whose content can make Braincode run something or change how it behaves,
/// relative to the project root. Their hashes are what the user trusts.
pub const TRUST_FILES: &[&str] = &[
    ".agents/hooks.json",
    ".mcp.json",
    "mcp.json",
    ".braincode/settings.json",
    ".braincode/tools.json",
    ".braincode/checks.json",
];

/// Largest trust-relevant file that is hashed; a larger one is never trusted.
pub const TRUST_FILE_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// The trust store's file name in the home.
const TRUST_FILE_NAME: &str = "trust.json";

/// One trusted project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustedProject {
    /// When the user trusted it (RFC 3339).
    pub trusted_at: String,
    /// Project-relative path → SHA-256 (hex) of each trust-relevant file that existed then.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// `<home>/trust.json`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustStore {
    /// Canonical project path → its trust record.
    #[serde(default)]
    pub projects: BTreeMap<String, TrustedProject>,
}

/// A trust-relevant file that exists in the project now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustFile {
    /// Project-relative path.
    pub path: String,
    /// SHA-256 (hex) of its content; `None` when it cannot be trusted at all (a symlink, not
    /// a regular file, too large, unreadable) — see `problem`.
    pub sha256: Option<String>,
    /// Why the file can never be trusted as it is.
    pub problem: Option<String>,
}

/// Whether a project's configuration may be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum TrustState {
    /// The project has no trust-relevant file: there is nothing to trust.
    NothingToTrust,
    /// Trusted, and every trust-relevant file is as it was when trusted.
    Trusted,
    /// Not trusted (never, or a file changed since).
    Untrusted {
        /// Files that are present now.
        files: Vec<TrustFile>,
        /// Files that changed, appeared or disappeared since the user trusted the project
        /// (empty when it was never trusted).
        changed: Vec<String>,
    },
}

impl TrustState {
    /// Whether project configuration may be executed or loaded.
    pub fn is_trusted(&self) -> bool {
        matches!(self, Self::NothingToTrust | Self::Trusted)
    }
}

/// The outcome of checking one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrust {
    /// Canonical project root.
    pub root: PathBuf,
    /// The verdict.
    pub state: TrustState,
    /// Whether the user trusted this project (`braincode trust`, `--trust`), whatever its
    /// files have become since.
    pub trusted_by_user: bool,
}

impl ProjectTrust {
    /// Whether project configuration may be executed or loaded.
    pub fn is_trusted(&self) -> bool {
        self.state.is_trusted()
    }

    /// Whether the project's own code may run without a person approving it: its discovered
    /// checks (test scripts, Makefiles, conftest.py, build scripts). Having no configuration
    /// file is not enough; the user must have trusted the project, and nothing it trusted
    /// may have changed since.
    pub fn trusts_code(&self) -> bool {
        self.trusted_by_user && self.state.is_trusted()
    }

    /// The one notice an untrusted project gets: what was ignored and how to trust it.
    /// `None` when trusted or when there is nothing to trust.
    pub fn notice(&self) -> Option<String> {
        let TrustState::Untrusted { files, changed } = &self.state else {
            return None;
        };
        let names: Vec<String> = files
            .iter()
            .map(|file| match &file.problem {
                Some(problem) => format!("{} ({problem})", file.path),
                None => file.path.clone(),
            })
            .collect();
        let why = if changed.is_empty() {
            "this project is not trusted".to_string()
        } else {
            format!(
                "{} changed since you trusted this project",
                changed.join(", ")
            )
        };
        Some(format!(
            "Ignored {} ({why}): project hooks, MCP servers, settings and checks stay off. \
             Review them, then run `braincode trust {}` (or pass --trust).",
            names.join(", "),
            shell_word(&self.root.display().to_string()),
        ))
    }
}

fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c))
    {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

fn store_path(home: &Home) -> PathBuf {
    home.root().join(TRUST_FILE_NAME)
}

/// Reads the trust store (missing → empty; malformed → an error naming line and field).
pub fn load_trust_store(home: &Home) -> Result<TrustStore, ConfigError> {
    Ok(read_json_file::<TrustStore>(&store_path(home))?.unwrap_or_default())
}

fn canonical_root(project_root: &Path) -> PathBuf {
    std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf())
}

/// Hashes one trust-relevant file without following a symlink out of the project: the file
/// itself must be a regular file, and its parent directories must resolve inside the root.
fn hash_trust_file(root: &Path, relative: &str) -> Option<TrustFile> {
    let path = root.join(relative);
    let metadata = std::fs::symlink_metadata(&path).ok()?;
    let problem = |problem: &str| {
        Some(TrustFile {
            path: relative.to_string(),
            sha256: None,
            problem: Some(problem.to_string()),
        })
    };
    if metadata.file_type().is_symlink() {
        return problem("a symbolic link: never loaded");
    }
    if !metadata.is_file() {
        return problem("not a regular file");
    }
    if metadata.len() > TRUST_FILE_MAX_BYTES {
        return problem("larger than 4 MiB");
    }
    let parent_inside = path
        .parent()
        .and_then(|parent| std::fs::canonicalize(parent).ok())
        .is_some_and(|parent| parent.starts_with(root));
    if !parent_inside {
        return problem("its directory links outside the project");
    }
    let mut hasher = Sha256::new();
    let mut file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(err) => return problem(&format!("unreadable: {err}")),
    };
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => hasher.update(&buffer[..read]),
            Err(err) => return problem(&format!("unreadable: {err}")),
        }
    }
    let digest = hasher.finalize();
    let hex = braincode_protocol::lower_hex(&digest);
    Some(TrustFile {
        path: relative.to_string(),
        sha256: Some(hex),
        problem: None,
    })
}

/// The trust-relevant files present in a project now.
pub fn trust_files(project_root: &Path) -> Vec<TrustFile> {
    let root = canonical_root(project_root);
    TRUST_FILES
        .iter()
        .filter_map(|relative| hash_trust_file(&root, relative))
        .collect()
}

/// Checks a project against the store. A store that cannot be read counts as "not trusted"
/// (fail closed); the error is returned alongside so the caller can show it.
pub fn check_trust(home: &Home, project_root: &Path) -> (ProjectTrust, Option<ConfigError>) {
    let root = canonical_root(project_root);
    let files = trust_files(&root);
    let (store, error) = match load_trust_store(home) {
        Ok(store) => (store, None),
        Err(err) => (TrustStore::default(), Some(err)),
    };
    let record = store.projects.get(&root.display().to_string());
    let state = if files.is_empty() {
        TrustState::NothingToTrust
    } else {
        match record {
            Some(record) => {
                let changed = changed_files(record, &files);
                let unusable = files.iter().any(|f| f.sha256.is_none());
                if changed.is_empty() && !unusable {
                    TrustState::Trusted
                } else {
                    TrustState::Untrusted { files, changed }
                }
            }
            None => TrustState::Untrusted {
                files,
                changed: Vec::new(),
            },
        }
    };
    let trusted_by_user = record.is_some();
    (
        ProjectTrust {
            root,
            state,
            trusted_by_user,
        },
        error,
    )
}

fn changed_files(record: &TrustedProject, files: &[TrustFile]) -> Vec<String> {
    let mut changed: Vec<String> = files
        .iter()
        .filter(|file| record.files.get(&file.path) != file.sha256.as_ref())
        .map(|file| file.path.clone())
        .collect();
    for path in record.files.keys() {
        if !files.iter().any(|file| &file.path == path) {
            changed.push(path.clone());
        }
    }
    changed.sort();
    changed
}

/// Why a project could not be trusted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The directory does not exist.
    #[error("{path}: not a directory: {source}")]
    NotADirectory {
        /// The path given.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file can never be trusted as it is.
    #[error(
        "{path} cannot be trusted: {problem}; replace it with a regular file inside the project"
    )]
    Untrustable {
        /// Project-relative path.
        path: String,
        /// Why.
        problem: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] ConfigError),
}

/// Trusts a project as its files are now; returns the files trusted.
pub fn trust_project(home: &Home, project_root: &Path) -> Result<Vec<TrustFile>, TrustError> {
    let root = std::fs::canonicalize(project_root).map_err(|source| TrustError::NotADirectory {
        path: project_root.to_path_buf(),
        source,
    })?;
    if !root.is_dir() {
        return Err(TrustError::NotADirectory {
            path: root,
            source: std::io::Error::other("not a directory"),
        });
    }
    let files = trust_files(&root);
    if let Some(file) = files.iter().find(|f| f.sha256.is_none()) {
        return Err(TrustError::Untrustable {
            path: file.path.clone(),
            problem: file.problem.clone().unwrap_or_default(),
        });
    }
    let _lock = crate::json_io::lock_for_update(&store_path(home))?;
    let mut store = load_trust_store(home)?;
    store.projects.insert(
        root.display().to_string(),
        TrustedProject {
            trusted_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            files: files
                .iter()
                .filter_map(|f| f.sha256.clone().map(|sha| (f.path.clone(), sha)))
                .collect(),
        },
    );
    write_json_atomic(&store_path(home), &store, 0o600)?;
    Ok(files)
}

/// Forgets a project; returns whether it was trusted.
pub fn untrust_project(home: &Home, project_root: &Path) -> Result<bool, ConfigError> {
    let root = canonical_root(project_root);
    let _lock = crate::json_io::lock_for_update(&store_path(home))?;
    let mut store = load_trust_store(home)?;
    let removed = store.projects.remove(&root.display().to_string()).is_some();
    if removed {
        write_json_atomic(&store_path(home), &store, 0o600)?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn nothing_to_trust_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let (trust, error) = check_trust(&home, &project);
        assert!(error.is_none());
        assert_eq!(trust.state, TrustState::NothingToTrust);
        assert!(trust.notice().is_none());
    }

    #[test]
    fn trust_then_change_needs_trust_again() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let project = dir.path().join("p");
        write(&project.join(".agents/hooks.json"), "{\"hooks\": {}}");
        let (trust, _) = check_trust(&home, &project);
        assert!(!trust.is_trusted());
        let notice = trust.notice().unwrap();
        assert!(notice.contains(".agents/hooks.json"), "{notice}");
        assert!(notice.contains("braincode trust"), "{notice}");

        trust_project(&home, &project).unwrap();
        assert!(check_trust(&home, &project).0.is_trusted());

        // A changed hooks file, then a new MCP file, each revoke trust and are named.
        write(
            &project.join(".agents/hooks.json"),
            "{\"hooks\": {\"Stop\": []}}",
        );
        let (trust, _) = check_trust(&home, &project);
        assert!(!trust.is_trusted());
        assert!(trust.notice().unwrap().contains("changed since"));
        trust_project(&home, &project).unwrap();
        write(&project.join(".mcp.json"), "{}");
        let (trust, _) = check_trust(&home, &project);
        let TrustState::Untrusted { changed, .. } = &trust.state else {
            panic!("expected untrusted, got {trust:?}");
        };
        assert_eq!(changed, &[".mcp.json".to_string()]);
        // Removing a trusted file is a change too.
        trust_project(&home, &project).unwrap();
        std::fs::remove_file(project.join(".mcp.json")).unwrap();
        assert!(!check_trust(&home, &project).0.is_trusted());

        assert!(untrust_project(&home, &project).unwrap());
        assert!(!untrust_project(&home, &project).unwrap());
    }

    #[test]
    fn symlinked_trust_files_can_never_be_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        write(&dir.path().join("outside.json"), "{}");
        std::os::unix::fs::symlink(dir.path().join("outside.json"), project.join(".mcp.json"))
            .unwrap();
        let error = trust_project(&home, &project).unwrap_err().to_string();
        assert!(error.contains("symbolic link"), "{error}");
        assert!(!check_trust(&home, &project).0.is_trusted());
    }

    #[test]
    fn a_malformed_store_fails_closed_and_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let project = dir.path().join("p");
        write(&project.join(".mcp.json"), "{}");
        write(&store_path(&home), "{\"projects\": [");
        let (trust, error) = check_trust(&home, &project);
        assert!(!trust.is_trusted());
        assert!(error.unwrap().to_string().contains("trust.json"));
        assert!(trust_project(&home, &project).is_err());
        assert_eq!(
            std::fs::read_to_string(store_path(&home)).unwrap(),
            "{\"projects\": ["
        );
    }
}
