//! The project paths the user's `deny` path rules cover, for the OS sandbox: a rule is a
//! promise about what happens to those paths, not only about the commands the parser can
//! read (`${X:-rm} -rf d` names no path the parser could check against `d/**`).

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::PermissionPolicy;
use crate::config::PolicyDecision;
use crate::paths::{canonical_root, normalize_path_text, relative_to};

/// Most entries looked at to find what one glob rule matches.
const MAX_ENTRIES_PER_RULE: usize = 20_000;

/// Whether a pattern component is a glob (anything but a literal name).
fn is_glob(component: &str) -> bool {
    component.contains(['*', '?', '[', '{'])
}

impl PermissionPolicy {
    /// The existing paths inside the project that the user's path rules deny (`tools.json` →
    /// `permissions.paths` with `"edit": "deny"`), outermost only, absolute. Give them to the
    /// sandbox as read-only paths: a command cannot change or delete them however it is
    /// written. Paths that do not exist yet are not listed (the parser still denies creating
    /// them by name).
    pub fn denied_project_paths(&self, project_root: &Path) -> Vec<PathBuf> {
        let root = canonical_root(project_root);
        let root_text = format!("{}/", root.display());
        let mut found: Vec<PathBuf> = Vec::new();
        for rule in self
            .path_rules
            .iter()
            .filter(|r| !r.default_rule && r.action == PolicyDecision::Deny)
        {
            let pattern = normalize_path_text(&rule.pattern);
            let relative = match pattern.strip_prefix(&root_text) {
                Some(inside) => inside.to_string(),
                None if pattern.starts_with('/') || pattern.starts_with("../") => continue,
                None if pattern.starts_with('~') || pattern.starts_with('$') => continue,
                None => pattern,
            };
            let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
            let literal = parts.iter().take_while(|p| !is_glob(p)).count();
            let prefix: PathBuf = parts[..literal].iter().collect();
            let rest = &parts[literal..];
            if rest.is_empty() {
                if std::fs::symlink_metadata(root.join(&prefix)).is_ok() {
                    found.push(root.join(&prefix));
                }
            } else if (rest == ["**"] || rest == ["**", "*"]) && literal > 0 {
                if root.join(&prefix).is_dir() {
                    found.push(root.join(&prefix));
                }
            } else {
                found.extend(matching(
                    &root,
                    &root.join(&prefix),
                    |relative, absolute| rule.matches(relative, absolute),
                ));
            }
        }
        found.sort();
        found.dedup();
        let mut outermost: Vec<PathBuf> = Vec::new();
        for path in found {
            if !outermost.iter().any(|outer| path.starts_with(outer)) {
                outermost.push(path);
            }
        }
        outermost
    }
}

/// The entries below `start` (not following symlinks) that `matches` accepts, given their
/// project-relative and absolute forms; a matching directory is not entered.
fn matching(root: &Path, start: &Path, matches: impl Fn(&str, &str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut queue = VecDeque::from([start.to_path_buf()]);
    let mut seen = 0usize;
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES_PER_RULE {
                return found;
            }
            let path = entry.path();
            let relative = relative_to(root, &path);
            if matches(&relative, &path.display().to_string()) {
                found.push(path);
            } else if entry.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push_back(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{PathRule, PermissionsConfig};

    fn deny(pattern: &str) -> PathRule {
        PathRule {
            pattern: pattern.to_string(),
            edit: PolicyDecision::Deny,
            review: None,
            reason: None,
        }
    }

    #[test]
    fn deny_rules_become_the_paths_they_cover() -> Result<(), Box<dyn std::error::Error>> {
        let tmp = tempfile::tempdir()?;
        let root = std::fs::canonicalize(tmp.path())?;
        for dir in ["d/sub", "keys/a", "src"] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        for file in [
            "d/sub/x",
            "keys/a/one.pem",
            "keys/two.pem",
            "src/main.rs",
            "notes.txt",
        ] {
            std::fs::write(root.join(file), "x")?;
        }
        let config = PermissionsConfig {
            paths: vec![
                deny("d/**"),
                deny("**/*.pem"),
                deny("notes.txt"),
                deny("missing/**"),
                deny("../outside/**"),
                PathRule {
                    edit: PolicyDecision::Ask,
                    ..deny("src/**")
                },
            ],
            ..PermissionsConfig::default()
        };
        let policy = PermissionPolicy::new(&config)?;
        let found = policy.denied_project_paths(&root);
        assert_eq!(
            found,
            vec![
                root.join("d"),
                root.join("keys/a/one.pem"),
                root.join("keys/two.pem"),
                root.join("notes.txt"),
            ]
        );
        Ok(())
    }
}
