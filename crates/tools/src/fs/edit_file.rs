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

/// Writes or edits a file inside the project.
#[derive(Debug, Clone)]
pub struct EditFile {
    definition: ToolDefinition,
}

impl Default for EditFile {
    fn default() -> Self {
        Self {
            definition: builtin_definition(
                "edit_file",
                "Create or change a file inside the project: either write the whole `content`, or replace `oldString` with `newString` (first occurrence, or all with replaceAll). Parent directories are created.",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "File path relative to the project root. Alias: file, filePath."},
                        "content": {"type": "string", "description": "The whole new file content. Alias: text."},
                        "oldString": {"type": "string", "description": "Exact text to replace (must exist in the file). Alias: old_string, old."},
                        "newString": {"type": "string", "description": "Replacement text. Alias: new_string, new."},
                        "replaceAll": {"type": "boolean", "description": "Replace every occurrence (default: the first). Alias: replace_all."}
                    },
                    "required": ["path"]
                }),
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
        if rel.is_empty() || resolved.absolute.is_dir() {
            return ToolOutput::error(format!("edit_file: {raw} is a directory"));
        }
        let old = args.old_string.as_deref();
        let content = args.content.as_deref();
        let (mode, new_content, replaced) = match (old, content) {
            (Some(old), _) => {
                if old.is_empty() {
                    return ToolOutput::error(
                        "edit_file: oldString is empty; use content to write a whole file",
                    );
                }
                let new = args.new_string.as_deref().unwrap_or("");
                let replace_all = args.replace_all.unwrap_or(false);
                let Ok(meta) = tokio::fs::metadata(&resolved.absolute).await else {
                    return ToolOutput::error(format!(
                        "edit_file: {rel} not found; use content to create it"
                    ));
                };
                if meta.len() > MAX_REPLACE_FILE_BYTES {
                    return ToolOutput::error(format!(
                        "edit_file: {rel} is larger than {MAX_REPLACE_FILE_BYTES} bytes; replace mode is not available"
                    ));
                }
                let current = match tokio::fs::read(&resolved.absolute).await {
                    Ok(bytes) => match String::from_utf8(bytes) {
                        Ok(text) => text,
                        Err(_) => {
                            return ToolOutput::error(format!(
                                "edit_file: {rel} is not UTF-8 text"
                            ));
                        }
                    },
                    Err(error) => {
                        return ToolOutput::error(format!("edit_file: cannot read {rel}: {error}"));
                    }
                };
                let count = current.matches(old).count();
                if count == 0 {
                    return ToolOutput::error(format!("edit_file: oldString not found in {rel}"));
                }
                let updated = if replace_all {
                    current.replace(old, new)
                } else {
                    current.replacen(old, new, 1)
                };
                ("replace", updated, if replace_all { count } else { 1 })
            }
            (None, Some(content)) => ("write", content.to_string(), 0),
            (None, None) => {
                return ToolOutput::error("edit_file needs content, or oldString and newString");
            }
        };
        if let Some(parent) = resolved.absolute.parent()
            && let Err(error) = tokio::fs::create_dir_all(parent).await
        {
            return ToolOutput::error(format!(
                "edit_file: cannot create the directory of {rel}: {error}"
            ));
        }
        if let Err(error) = tokio::fs::write(&resolved.absolute, &new_content).await {
            return ToolOutput::error(format!("edit_file: cannot write {rel}: {error}"));
        }
        let chars = new_content.chars().count();
        ToolOutput::ok(format!("{mode} {rel} ({chars} chars)")).with_details(json!({
            "path": rel,
            "mode": mode,
            "chars": chars,
            "replacements": replaced,
        }))
    }
}
