//! Protected paths: files through which a repository (or an agent) configures what runs later
//! — git hooks and config, agent and MCP configuration, package-manager and editor settings,
//! CI workflows. Creating or changing one, creating a link, or editing a file that has other
//! names (hard links) is "protected": only a person may approve it, per call.

use std::path::Path;

/// Project paths that only a person may let a call create or change, matched at any depth
/// together with everything inside them: the sandbox's one list
/// ([`braincode_sandbox::PROTECTED_PROJECT_PATHS`]).
pub const PROTECTED_PATHS: &[&str] = braincode_sandbox::PROTECTED_PROJECT_PATHS;

/// Whether a project-relative path (as written: `..` is applied lexically) is protected (see
/// [`braincode_sandbox::is_protected_path`]). A path that climbs out of the project is not
/// judged here: the rules for paths outside the project are.
pub fn is_protected(relative: &str) -> bool {
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return false;
                }
            }
            part => parts.push(part),
        }
    }
    braincode_sandbox::is_protected_path(parts.join("/"))
}

/// How many names (hard links) a regular file has; `None` when it is not a regular file.
pub fn hard_links(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.nlink())
    }
    #[cfg(not(unix))]
    {
        Some(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_at_any_depth() {
        for path in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            ".GIT/config",
            "vendor/lib/.git/config",
            ".agents/hooks.json",
            ".mcp.json",
            "web/.npmrc",
            ".yarnrc.yml",
            ".cargo/config.toml",
            ".github/workflows/ci.yml",
            ".vscode/settings.json",
            ".envrc",
            "src/../.git/config",
        ] {
            assert!(is_protected(path), "{path}");
        }
        for path in [
            "src/main.rs",
            ".gitignore",
            "docs/git.md",
            ".github/CODEOWNERS",
            "src/x/../auth/a.ts",
            "../outside/.git",
        ] {
            assert!(!is_protected(path), "{path}");
        }
    }
}
