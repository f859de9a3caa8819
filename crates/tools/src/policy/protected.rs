//! Protected paths: files through which a repository (or an agent) configures what runs later
//! — git hooks and config, agent and MCP configuration, package-manager and editor settings,
//! CI workflows. Creating or changing one, creating a link, or editing a file that has other
//! names (hard links) is "protected": only a person may approve it, per call.

use std::path::Path;
use std::sync::OnceLock;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Project paths (globs, also matched at any depth) that only a person may let a call create
/// or change.
pub const PROTECTED_PATHS: &[&str] = &[
    ".agents",
    ".agents/**",
    ".braincode",
    ".braincode/**",
    ".mcp.json",
    "mcp.json",
    ".git",
    ".git/**",
    ".gitmodules",
    ".npmrc",
    ".yarnrc*",
    ".cargo/config*",
    ".vscode/**",
    ".idea/**",
    ".envrc",
    ".devcontainer/**",
    ".pre-commit-config.yaml",
    ".github/workflows/**",
];

fn matcher() -> &'static Option<GlobSet> {
    static MATCHER: OnceLock<Option<GlobSet>> = OnceLock::new();
    MATCHER.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        for pattern in PROTECTED_PATHS {
            for variant in [(*pattern).to_string(), format!("**/{pattern}")] {
                let glob = GlobBuilder::new(&variant)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .backslash_escape(false)
                    .build()
                    .ok()?;
                builder.add(glob);
            }
        }
        builder.build().ok()
    })
}

/// Whether a project-relative path is protected. Fails closed: if the patterns could not be
/// compiled, every path is.
pub fn is_protected(relative: &str) -> bool {
    match matcher() {
        Some(set) => set.is_match(relative.trim_end_matches('/')),
        None => true,
    }
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
        ] {
            assert!(is_protected(path), "{path}");
        }
        for path in [
            "src/main.rs",
            ".gitignore",
            "docs/git.md",
            ".github/CODEOWNERS",
        ] {
            assert!(!is_protected(path), "{path}");
        }
    }
}
