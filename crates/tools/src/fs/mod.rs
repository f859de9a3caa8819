//! File tools: listing, reading, searching, editing and patching inside the project.

pub mod apply_patch;
pub mod edit_file;
pub mod list_files;
pub mod read_file;
pub mod search_files;

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use ignore::overrides::{Override, OverrideBuilder};

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

/// [`directory_arg`], where a directory whose files are all still pending (not on disk yet)
/// exists too.
pub(crate) async fn directory_in(
    context: &ToolContext,
    root: &Path,
    raw: Option<&str>,
) -> Result<PathBuf, String> {
    let error = match directory_arg(root, raw) {
        Ok(dir) => return Ok(dir),
        Err(error) => error,
    };
    if let (Some(lazy), Some(raw)) = (&context.lazy, raw)
        && let Ok(resolved) = resolve_inside(root, raw)
    {
        let prefix = format!("{}/", resolved.relative.trim_end_matches('/'));
        if lazy
            .pending()
            .await?
            .iter()
            .any(|path| path.starts_with(&prefix))
        {
            return Ok(resolved.absolute);
        }
    }
    Err(error)
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
    if let Some(overrides) = glob_filter(dir, glob)? {
        builder.overrides(overrides);
    }
    Ok(builder.build())
}

/// The filter a `glob` argument makes, rooted at `dir` (none when it is absent or blank).
fn glob_filter(dir: &Path, glob: Option<&str>) -> Result<Option<Override>, String> {
    let Some(glob) = glob.filter(|g| !g.trim().is_empty()) else {
        return Ok(None);
    };
    let invalid = |error: ignore::Error| format!("invalid glob {glob:?}: {error}");
    let mut overrides = OverrideBuilder::new(dir);
    overrides.add(glob).map_err(invalid)?;
    overrides.build().map(Some).map_err(invalid)
}

/// Writes the pending ones of `paths` (relative) to disk before a tool reads or changes them,
/// when the root's files reach the disk on first use.
pub(crate) async fn materialize(context: &ToolContext, paths: &[String]) -> Result<(), String> {
    match &context.lazy {
        Some(lazy) => lazy.materialize(paths).await,
        None => Ok(()),
    }
}

/// Writes every pending file to disk before a command runs in the root.
pub(crate) async fn materialize_all(context: &ToolContext) -> Result<(), String> {
    match &context.lazy {
        Some(lazy) => lazy.materialize_all().await,
        None => Ok(()),
    }
}

/// The pending files (not yet on disk) a walk of `dir` with `glob` would have found had they
/// been there: beneath `dir`, matching the glob, no hidden or always-skipped part. Sorted.
pub(crate) async fn pending_in(
    context: &ToolContext,
    root: &Path,
    dir: &Path,
    glob: Option<&str>,
) -> Result<Vec<String>, String> {
    let Some(lazy) = &context.lazy else {
        return Ok(Vec::new());
    };
    let pending = lazy.pending().await?;
    let prefix = relative(root, dir);
    let prefix = prefix.trim_end_matches('/');
    let matcher = glob_filter(dir, glob)?;
    Ok((pending.iter())
        .filter(|path| {
            prefix.is_empty()
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|r| r.starts_with('/'))
        })
        .filter(|path| {
            !path
                .split('/')
                .any(|part| part.starts_with('.') || ALWAYS_SKIPPED.contains(&part))
        })
        .filter(|path| {
            matcher
                .as_ref()
                .is_none_or(|matcher| !matcher.matched(root.join(path.as_str()), false).is_ignore())
        })
        .cloned()
        .collect())
}

/// Path relative to the root with `/` separators.
pub(crate) fn relative(root: &Path, path: &Path) -> String {
    crate::paths::relative_to(root, path)
}
