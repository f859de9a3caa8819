//! `apply_patch`: a unified diff applied with `git apply`, every path checked first.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::root_of;
use crate::patch::{escapes_root, patch_paths};
use crate::paths::resolve_inside;
use crate::registry::builtin_definition;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{ApplyPatchArgs, ToolArgs};

/// How long `git apply` may run.
const APPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// Applies a unified diff to the project.
#[derive(Debug, Clone)]
pub struct ApplyPatch {
    definition: ToolDefinition,
}

impl Default for ApplyPatch {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<ApplyPatchArgs>(
                "Apply a unified diff in git format (diff --git, --- a/, +++ b/; paths relative to the project root) with git apply, all or nothing.",
            ),
        }
    }
}

#[async_trait]
impl Tool for ApplyPatch {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match ApplyPatchArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let patch = args.patch.as_str();
        if patch.trim().is_empty() {
            return ToolOutput::error("apply_patch needs a patch");
        }
        if patch.trim_start().starts_with("*** Begin Patch") {
            return ToolOutput::error(
                "apply_patch expects a unified diff (--- a/file, +++ b/file, @@ hunks), not a *** Begin Patch envelope",
            );
        }
        let root = root_of(context);
        let paths = patch_paths(patch);
        if paths.is_empty() {
            return ToolOutput::error(
                "apply_patch: no file headers found (expected --- a/path and +++ b/path lines)",
            );
        }
        for path in &paths {
            if escapes_root(&path.raw) {
                return ToolOutput::error(format!(
                    "apply_patch refused: {} escapes project root",
                    path.raw
                ));
            }
            if let Err(error) = resolve_inside(&root, &path.path) {
                return ToolOutput::error(format!("apply_patch refused: {error}"));
            }
        }
        // A sparse worktree's files reach the disk before the patch is applied to them.
        let named: Vec<String> = (paths.iter())
            .filter_map(|path| resolve_inside(&root, &path.path).ok())
            .map(|resolved| resolved.relative)
            .collect();
        if let Err(error) = super::materialize(context, &named).await {
            return ToolOutput::error(format!("apply_patch: {error}"));
        }
        // `git apply` writes the project, so it runs in the run's own sandbox (protected paths
        // read-only, secrets hidden), never unconfined.
        let Some(sandbox) = context.sandbox.as_deref() else {
            return ToolOutput::error(
                "apply_patch needs the OS sandbox to run git apply, and this run has none; use edit_file instead",
            );
        };
        let mut command = tokio::process::Command::from(crate::git_safe::git_command_in(
            sandbox,
            &root,
            &["apply", "--whitespace=nowarn", "-"],
        ));
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // Paths are relative to the project root even when it sits inside a larger repository.
        if let Some(parent) = root.parent() {
            command.env("GIT_CEILING_DIRECTORIES", parent);
        }
        // A writer's worktree names a git directory its sandbox does not show: `git apply`
        // then works as a patch program on the files (a `.git` file has no child, so this
        // names no repository).
        if context.lazy.is_some() {
            command.env("GIT_DIR", root.join(".git").join("none"));
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => {
                return ToolOutput::error(format!("git apply failed: cannot run git: {error}"));
            }
        };
        if let Some(mut stdin) = child.stdin.take() {
            let mut text = patch.to_string();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if let Err(error) = stdin.write_all(text.as_bytes()).await {
                return ToolOutput::error(format!(
                    "git apply failed: cannot send the patch: {error}"
                ));
            }
        }
        let output = tokio::select! {
            output = tokio::time::timeout(APPLY_TIMEOUT, child.wait_with_output()) => output,
            () = context.cancel.cancelled() => return ToolOutput::error("apply_patch cancelled"),
        };
        let output = match output {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => return ToolOutput::error(format!("git apply failed: {error}")),
            Err(_) => return ToolOutput::error("git apply failed: timed out"),
        };
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return ToolOutput::error(format!("git apply failed: {}", stderr.trim()));
        }
        let mut files: Vec<String> = Vec::new();
        for path in paths {
            if !files.contains(&path.path) {
                files.push(path.path);
            }
        }
        ToolOutput::ok(format!(
            "applied patch to {} file(s): {}",
            files.len(),
            files.join(", ")
        ))
        .with_details(json!({"files": files}))
    }
}
