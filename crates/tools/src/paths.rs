//! Project-root confinement: normalizing path text and resolving it physically (symlinks,
//! `..`, absolute paths) against the project root, with missing files allowed.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Largest project file Braincode reads on its own to discover checks and scripts.
pub const MAX_DISCOVERY_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The text of the regular file `name` in `dir`, read through the capability-safe layer
/// ([`braincode_sandbox::beneath`]): a symlink is never followed (a `package.json ->
/// ~/.ssh/id_rsa` is not read), nor is anything over [`MAX_DISCOVERY_FILE_BYTES`]. `None`
/// when there is no such readable text file.
pub fn read_project_text(dir: &Path, name: &str) -> Option<String> {
    let bytes =
        braincode_sandbox::beneath::read_file(dir, Path::new(name), MAX_DISCOVERY_FILE_BYTES)
            .ok()?;
    if bytes.len() as u64 > MAX_DISCOVERY_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// How many symlinks one resolution may follow before giving up (as the kernel's ELOOP).
const MAX_SYMLINK_HOPS: usize = 40;

/// A path resolved against the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The physical absolute path (symlinks in existing prefixes followed).
    pub absolute: PathBuf,
    /// The path relative to the project root with `/` separators; starts with `../` when the
    /// path is outside the root, and is empty for the root itself.
    pub relative: String,
    /// Whether the path lies inside the project root.
    pub inside: bool,
}

/// Why a path could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is empty.
    #[error("path is empty")]
    Empty,
    /// The path resolves outside the project root.
    #[error("path {path} escapes the project root (resolves to {resolved})")]
    OutsideProject {
        /// The path as given.
        path: String,
        /// Where it resolves.
        resolved: String,
    },
    /// Too many symlinks.
    #[error("path {0} has too many levels of symbolic links")]
    SymlinkLoop(String),
}

/// Normalizes path text the way permission rules see it: surrounding quotes stripped, `\` →
/// `/`, repeated `/` collapsed, leading `./` removed.
pub fn normalize_path_text(raw: &str) -> String {
    let mut text = raw.trim();
    for quote in ['"', '\'', '`'] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            text = &text[1..text.len() - 1];
        }
    }
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        let ch = if ch == '\\' { '/' } else { ch };
        if ch == '/' && out.ends_with('/') {
            continue;
        }
        out.push(ch);
    }
    while let Some(rest) = out.strip_prefix("./") {
        out = rest.to_string();
    }
    if out == "." {
        out.clear();
    }
    out
}

/// The canonical form of the project root, or the root as given when it cannot be resolved.
pub fn canonical_root(root: &Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| absolute_lexical(root))
}

fn absolute_lexical(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|dir| dir.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Resolves `raw` (relative to `base`, or absolute) physically: `..` and symlinks are followed
/// in the order the kernel would, and missing trailing components are kept as written.
/// `root` must be canonical (see [`canonical_root`]).
pub fn resolve_from(root: &Path, base: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    let text = normalize_path_text(raw);
    let input = Path::new(&text);
    let mut current = if input.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let mut queue: VecDeque<OwnedComponent> = components(input);
    let mut hops = 0;
    while let Some(component) = queue.pop_front() {
        match component {
            OwnedComponent::Root => current = PathBuf::from("/"),
            OwnedComponent::Parent => {
                current.pop();
            }
            OwnedComponent::Normal(name) => {
                let candidate = current.join(&name);
                match std::fs::symlink_metadata(&candidate) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        hops += 1;
                        if hops > MAX_SYMLINK_HOPS {
                            return Err(PathError::SymlinkLoop(raw.to_string()));
                        }
                        let target = std::fs::read_link(&candidate)
                            .map_err(|_| PathError::SymlinkLoop(raw.to_string()))?;
                        let mut front = components(&target);
                        front.extend(queue);
                        queue = front;
                    }
                    _ => current = candidate,
                }
            }
        }
    }
    let relative = relative_to(root, &current);
    let inside = current.starts_with(root);
    Ok(ResolvedPath {
        absolute: current,
        relative,
        inside,
    })
}

/// Resolves `raw` against the project root (see [`resolve_from`]).
pub fn resolve(root: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    resolve_from(root, root, raw)
}

/// Resolves `raw` and requires it to be inside the project root. `root` must be canonical.
pub fn resolve_inside(root: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    if raw.trim().is_empty() {
        return Err(PathError::Empty);
    }
    let resolved = resolve(root, raw)?;
    if resolved.inside {
        Ok(resolved)
    } else {
        Err(PathError::OutsideProject {
            path: raw.to_string(),
            resolved: resolved.absolute.display().to_string(),
        })
    }
}

/// `path` relative to `root` with `/` separators, using `..` when it is outside.
pub fn relative_to(root: &Path, path: &Path) -> String {
    let root_parts: Vec<_> = root.components().collect();
    let path_parts: Vec<_> = path.components().collect();
    let common = root_parts
        .iter()
        .zip(&path_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<String> = Vec::new();
    for _ in common..root_parts.len() {
        parts.push("..".to_string());
    }
    for part in &path_parts[common..] {
        parts.push(part.as_os_str().to_string_lossy().into_owned());
    }
    parts.join("/")
}

#[derive(Debug, Clone)]
enum OwnedComponent {
    Root,
    Parent,
    Normal(OsString),
}

fn components(path: &Path) -> VecDeque<OwnedComponent> {
    path.components()
        .filter_map(|component| match component {
            Component::RootDir | Component::Prefix(_) => Some(OwnedComponent::Root),
            Component::CurDir => None,
            Component::ParentDir => Some(OwnedComponent::Parent),
            Component::Normal(name) => Some(OwnedComponent::Normal(name.to_os_string())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_text() {
        assert_eq!(normalize_path_text("'./src\\\\a.ts'"), "src/a.ts");
        assert_eq!(normalize_path_text("././a//b"), "a/b");
        assert_eq!(normalize_path_text("."), "");
    }

    #[test]
    fn resolves_dots_symlinks_and_missing_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = canonical_root(dir.path());
        std::fs::create_dir_all(root.join("src/auth")).unwrap();
        let r = resolve(&root, "src/x/../auth/a.ts").unwrap();
        assert_eq!(r.relative, "src/auth/a.ts");
        assert!(r.inside);
        let r = resolve(&root, "../outside.txt").unwrap();
        assert!(!r.inside);
        assert!(r.relative.starts_with("../"));
        let r = resolve(&root, "/etc/passwd").unwrap();
        assert!(!r.inside);
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).unwrap();
        let r = resolve(&root, "etc-link/new-file").unwrap();
        assert!(!r.inside);
        std::os::unix::fs::symlink("src/auth", root.join("alias")).unwrap();
        let r = resolve(&root, "alias/a.ts").unwrap();
        assert_eq!(r.relative, "src/auth/a.ts");
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert!(matches!(
            resolve(&root, "loop/x"),
            Err(PathError::SymlinkLoop(_))
        ));
        assert!(resolve_inside(&root, "").is_err());
        assert_eq!(
            resolve(&root, ".").map(|r| r.relative).ok(),
            Some(String::new())
        );
    }
}
