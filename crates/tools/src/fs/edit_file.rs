//! `edit_file`: write a whole file or replace a literal string, confined to the project.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::root_of;
use crate::paths::resolve_inside;
use crate::registry::builtin_definition;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{EditFileArgs, ToolArgs};

/// Largest file replace mode edits (bytes).
pub const MAX_REPLACE_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// Why `rel` could not be read or written, for the model.
fn refusal(rel: &str, error: &std::io::Error) -> String {
    if braincode_sandbox::beneath::is_link_refusal(error) {
        format!(
            "edit_file refused: a component of {rel} is a symbolic link (changed since it was checked?); edits never go through links"
        )
    } else {
        format!("edit_file: cannot write {rel}: {error}")
    }
}

/// Writes or edits a file inside the project.
#[derive(Debug, Clone)]
pub struct EditFile {
    definition: ToolDefinition,
}

impl Default for EditFile {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<EditFileArgs>(
                "Create or change a project file: write the whole content, or replace oldString with newString (first occurrence, or all with replaceAll). Parent directories are created.",
            ),
        }
    }
}

#[async_trait]
impl Tool for EditFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match EditFileArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let raw = args.path.as_str();
        if raw.trim().is_empty() {
            return ToolOutput::error("edit_file needs a path");
        }
        let root = root_of(context);
        let resolved = match resolve_inside(&root, raw) {
            Ok(resolved) => resolved,
            Err(error) => return ToolOutput::error(format!("edit_file refused: {error}")),
        };
        let rel = resolved.relative.clone();
        // A sparse worktree's file reaches the disk before it is read or changed.
        if let Err(error) = super::materialize(context, std::slice::from_ref(&rel)).await {
            return ToolOutput::error(format!("edit_file: {error}"));
        }
        // From here on the file is reached beneath the root with no symlink followed at any
        // component (resolution above may have followed links inside the project; a link
        // swapped in since then is refused, never written through).
        let relative = std::path::Path::new(&rel);
        let existing = match braincode_sandbox::beneath::stat(&root, relative) {
            Ok(entry) => entry,
            Err(error) => return ToolOutput::error(refusal(&rel, &error)),
        };
        if rel.is_empty()
            || existing.is_some_and(|e| e.kind == braincode_sandbox::beneath::EntryKind::Dir)
        {
            return ToolOutput::error(format!("edit_file: {raw} is a directory"));
        }
        let old = args.old_string.as_deref();
        let content = args.content.as_deref();
        // Where the (first) replacement starts: the transcript numbers its diff from it.
        let mut first_line: Option<usize> = None;
        let (mode, new_content, replaced) = match (old, content) {
            (Some(old), _) => {
                if old.is_empty() {
                    return ToolOutput::error(
                        "edit_file: oldString is empty; use content to write a whole file",
                    );
                }
                let new = args.new_string.as_deref().unwrap_or("");
                let replace_all = args.replace_all.unwrap_or(false);
                if existing.is_none() {
                    return ToolOutput::error(format!(
                        "edit_file: {rel} not found; use content to create it"
                    ));
                }
                // The editor's buffer (saved or not) when it serves the file; else the disk.
                let buffered = match &context.editor {
                    Some(editor) => editor.read(&root.join(relative)).await.ok(),
                    None => None,
                };
                let bytes = match buffered {
                    Some(text) => text.into_bytes(),
                    None => match braincode_sandbox::beneath::read_file(
                        &root,
                        relative,
                        MAX_REPLACE_FILE_BYTES,
                    ) {
                        Ok(bytes) => bytes,
                        Err(error) => return ToolOutput::error(refusal(&rel, &error)),
                    },
                };
                if bytes.len() as u64 > MAX_REPLACE_FILE_BYTES {
                    return ToolOutput::error(format!(
                        "edit_file: {rel} is larger than {MAX_REPLACE_FILE_BYTES} bytes; replace mode is not available"
                    ));
                }
                let Ok(current) = String::from_utf8(bytes) else {
                    return ToolOutput::error(format!("edit_file: {rel} is not UTF-8 text"));
                };
                let count = current.matches(old).count();
                let Some(at) = current.find(old) else {
                    return ToolOutput::error(format!("edit_file: oldString not found in {rel}"));
                };
                first_line = Some(current[..at].matches('\n').count() + 1);
                let updated = if replace_all {
                    current.replace(old, new)
                } else {
                    current.replacen(old, new, 1)
                };
                ("replace", updated, if replace_all { count } else { 1 })
            }
            (None, Some(content)) if existing.is_none() => ("create", content.to_string(), 0),
            (None, Some(content)) => ("write", content.to_string(), 0),
            (None, None) => {
                return ToolOutput::error("edit_file needs content, or oldString and newString");
            }
        };
        // An existing file keeps its permissions; a new one gets the usual 0644.
        let file_mode = existing
            .filter(|e| e.kind == braincode_sandbox::beneath::EntryKind::File)
            .map_or(0o644, |e| e.mode);
        // Through the editor when it serves files (the edit lands in its undo history); the
        // contained disk write when it does not, or could not.
        if let Some(editor) = &context.editor
            && editor
                .write(&root.join(relative), &new_content)
                .await
                .is_ok()
        {
            return edited(mode, &rel, &new_content, first_line, replaced);
        }
        let write_root = root.clone();
        let write_rel = rel.clone();
        let bytes = new_content.clone().into_bytes();
        let written = tokio::task::spawn_blocking(move || {
            braincode_sandbox::beneath::write_file(
                &write_root,
                std::path::Path::new(&write_rel),
                &bytes,
                file_mode,
            )
        })
        .await
        .unwrap_or_else(|join| Err(std::io::Error::other(join.to_string())));
        if let Err(error) = written {
            return ToolOutput::error(refusal(&rel, &error));
        }
        edited(mode, &rel, &new_content, first_line, replaced)
    }
}

/// What a made edit tells the model and the journal.
fn edited(
    mode: &str,
    rel: &str,
    new_content: &str,
    first_line: Option<usize>,
    replaced: usize,
) -> ToolOutput {
    let chars = new_content.chars().count();
    let text = match first_line {
        Some(line) => format!("{mode} {rel} at line {line} ({chars} chars)"),
        None => format!("{mode} {rel} ({chars} chars)"),
    };
    ToolOutput::ok(text).with_details(json!({
        "path": rel,
        "mode": mode,
        "chars": chars,
        "replacements": replaced,
        "line": first_line,
    }))
}
