//! File tools: listing, reading, searching, editing and patching inside the project.

pub mod apply_patch;
pub mod edit_file;
pub mod list_files;
pub mod read_file;
pub mod search_files;

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;

use crate::paths::{canonical_root, resolve_inside};
use crate::tool::ToolContext;

/// Directories never listed or searched, even without a `.gitignore`.
const ALWAYS_SKIPPED: &[&str] = &[".git", "node_modules"];

/// The canonical project root of a call.
pub(crate) fn root_of(context: &ToolContext) -> PathBuf {
    canonical_root(&context.project_root)
}

/// Resolves an optional directory argument inside the project (the root when absent).
pub(crate) fn directory_arg(root: &Path, raw: Option<&str>) -> Result<PathBuf, String> {
    match raw.filter(|r| !r.trim().is_empty()) {
        None => Ok(root.to_path_buf()),
        Some(raw) => {
            let resolved = resolve_inside(root, raw).map_err(|e| e.to_string())?;
            if resolved.absolute.exists() {
                Ok(resolved.absolute)
            } else {
                Err(format!("{raw} does not exist"))
            }
        }
    }
}

/// A ripgrep-style walk: `.gitignore`/`.ignore` honoured (also outside git repositories),
/// hidden files skipped, `.git` and `node_modules` skipped, sorted by name, optional glob.
pub(crate) fn walk(dir: &Path, glob: Option<&str>) -> Result<ignore::Walk, String> {
    let mut builder = WalkBuilder::new(dir);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .parents(true)
        .follow_links(false)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .filter_entry(|entry| {
            !(entry.file_type().is_some_and(|t| t.is_dir())
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|name| ALWAYS_SKIPPED.contains(&name)))
        });
    if let Some(glob) = glob.filter(|g| !g.trim().is_empty()) {
        let mut overrides = OverrideBuilder::new(dir);
        overrides
            .add(glob)
            .map_err(|error| format!("invalid glob {glob:?}: {error}"))?;
        builder.overrides(
            overrides
                .build()
                .map_err(|error| format!("invalid glob {glob:?}: {error}"))?,
        );
    }
    Ok(builder.build())
}

/// Path relative to the root with `/` separators.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    crate::paths::relative_to(root, path)
}
