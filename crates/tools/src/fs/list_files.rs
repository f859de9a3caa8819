//! `list_files`: project files, ripgrep-style (gitignore-aware).

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{directory_in, pending_in, relative, root_of, walk};
use crate::registry::builtin_definition;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{ListFilesArgs, ToolArgs};

/// Default number of files listed.
pub const DEFAULT_MAX_FILES: u64 = 200;
/// Largest `maxFiles`.
pub const MAX_FILES: u64 = 2_000;

/// Lists files under a directory of the project.
#[derive(Debug, Clone)]
pub struct ListFiles {
    definition: ToolDefinition,
}

impl Default for ListFiles {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<ListFilesArgs>(
                "List project files, paths relative to the root (.gitignore respected, hidden files skipped).",
            ),
        }
    }
}

#[async_trait]
impl Tool for ListFiles {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match ListFilesArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let root = root_of(context);
        let dir = match directory_in(context, &root, args.directory.as_deref()).await {
            Ok(dir) => dir,
            Err(error) => return ToolOutput::error(format!("list_files: {error}")),
        };
        // A sparse worktree's files not on disk yet are listed as if they were.
        let pending = match pending_in(context, &root, &dir, args.glob.as_deref()).await {
            Ok(pending) => pending,
            Err(error) => return ToolOutput::error(format!("list_files: {error}")),
        };
        let glob = args.glob.clone();
        let max = args
            .max_files
            .unwrap_or(DEFAULT_MAX_FILES)
            .clamp(1, MAX_FILES) as usize;
        let cancel = context.cancel.clone();
        let listed = tokio::task::spawn_blocking(move || -> Result<(Vec<String>, bool), String> {
            let mut files = Vec::new();
            let mut truncated = false;
            for entry in walk(&dir, glob.as_deref())?.flatten() {
                if cancel.is_cancelled() {
                    break;
                }
                if !entry
                    .file_type()
                    .is_some_and(|t| t.is_file() || t.is_symlink())
                {
                    continue;
                }
                if files.len() == max {
                    truncated = true;
                    break;
                }
                files.push(relative(&root, entry.path()));
            }
            if !pending.is_empty() {
                files.extend(pending);
                files.sort();
                files.dedup();
                truncated |= files.len() > max;
                files.truncate(max);
            }
            files.sort();
            Ok((files, truncated))
        })
        .await;
        let (files, truncated) = match listed {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => return ToolOutput::error(format!("list_files: {error}")),
            Err(error) => return ToolOutput::error(format!("list_files failed: {error}")),
        };
        let mut content = if files.is_empty() {
            "(no files)".to_string()
        } else {
            files.join("\n")
        };
        if truncated {
            content.push_str(&format!(
                "\n(showing the first {max} files; narrow with directory or glob, or raise maxFiles)"
            ));
        }
        ToolOutput::ok(content).with_details(json!({"count": files.len(), "truncated": truncated}))
    }
}
