//! `read_file`: a UTF-8-aligned byte window of a text file.

use std::io::{Read, Seek, SeekFrom};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::root_of;
use crate::paths::resolve_inside;
use crate::registry::builtin_definition;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{ReadFileArgs, ToolArgs};

/// Largest window (bytes).
pub const MAX_READ_BYTES: u64 = 128_000;
/// Files at least this large get a window of at least [`MIN_LARGE_FILE_WINDOW`].
pub const LARGE_FILE_THRESHOLD: u64 = 24_000;
/// Smallest window on a large file (bytes).
pub const MIN_LARGE_FILE_WINDOW: u64 = 32_000;
/// Bytes probed for NUL to detect binary files.
pub const BINARY_PROBE_BYTES: usize = 4_096;
/// How far a window edge moves to reach a UTF-8 boundary.
const UTF8_OVERLAP: usize = 3;

/// Reads a text file, or a window of it.
#[derive(Debug, Clone)]
pub struct ReadFile {
    definition: ToolDefinition,
}

impl Default for ReadFile {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<ReadFileArgs>(&format!(
                "Read a project text file, up to {MAX_READ_BYTES} bytes a call; the header gives the next offset."
            )),
        }
    }
}

/// A window read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub text: String,
    pub start: u64,
    pub end: u64,
    pub total: u64,
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// Reads `[offset, offset + limit)` moved to UTF-8 boundaries (a few bytes forward at the
/// start, backward at the end).
pub(crate) fn read_window(
    file: &mut (impl Read + Seek),
    total: u64,
    offset: u64,
    limit: u64,
) -> std::io::Result<Window> {
    let start = offset.min(total);
    let end = (start + limit).min(total);
    let pad_end = (end + UTF8_OVERLAP as u64).min(total);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = vec![0u8; (pad_end - start) as usize];
    file.read_exact(&mut bytes)?;
    let mut from = 0;
    while from < UTF8_OVERLAP && from < bytes.len() && is_continuation(bytes[from]) {
        from += 1;
    }
    let mut to = (end - start) as usize;
    if end < total {
        let mut moved = 0;
        while to > from && moved < UTF8_OVERLAP && to < bytes.len() && is_continuation(bytes[to]) {
            to -= 1;
            moved += 1;
        }
    }
    let text = String::from_utf8_lossy(&bytes[from..to.max(from)]).into_owned();
    Ok(Window {
        text,
        start: start + from as u64,
        end: start + to.max(from) as u64,
        total,
    })
}

/// The window `[offset, offset + requested)` of a text of `total` bytes (a file or an editor
/// buffer): refused when binary or when the offset is past the end; a small window on a
/// large text is widened. Returns the window, whether it was widened, and the limit used.
fn window_of(
    reader: &mut (impl Read + Seek),
    total: u64,
    rel: &str,
    offset: u64,
    requested: Option<u64>,
) -> Result<(Window, bool, u64), String> {
    let mut probe = vec![0u8; BINARY_PROBE_BYTES.min(total as usize)];
    reader
        .read_exact(&mut probe)
        .map_err(|e| format!("cannot read {rel}: {e}"))?;
    if probe.contains(&0) {
        return Err(format!(
            "{rel} appears to be binary; read_file only reads text"
        ));
    }
    if offset > total || (offset == total && total > 0) {
        return Err(format!(
            "offset {offset} is past the end of {rel} ({total} bytes)"
        ));
    }
    let mut limit = requested.unwrap_or(MAX_READ_BYTES).clamp(1, MAX_READ_BYTES);
    let mut expanded = false;
    if total >= LARGE_FILE_THRESHOLD && limit < MIN_LARGE_FILE_WINDOW {
        limit = MIN_LARGE_FILE_WINDOW;
        expanded = true;
    }
    let window =
        read_window(reader, total, offset, limit).map_err(|e| format!("cannot read {rel}: {e}"))?;
    Ok((window, expanded, limit))
}

#[async_trait]
impl Tool for ReadFile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match ReadFileArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let raw = args.path.as_str();
        if raw.trim().is_empty() {
            return ToolOutput::error("read_file needs a path");
        }
        let root = root_of(context);
        let resolved = match resolve_inside(&root, raw) {
            Ok(resolved) => resolved,
            Err(error) => return ToolOutput::error(format!("read_file: {error}")),
        };
        let rel = resolved.relative.clone();
        // A sparse worktree's file reaches the disk before it is read or changed.
        if let Err(error) = super::materialize(context, std::slice::from_ref(&rel)).await {
            return ToolOutput::error(format!("read_file: {error}"));
        }
        let offset = args.offset.unwrap_or(0);
        let requested = args.limit;
        let root_again = root.clone();
        let editor = context.editor.clone();
        let absolute = root.join(&rel);
        let result = tokio::task::spawn_blocking(move || -> Result<Option<std::fs::File>, String> {
            // Opened beneath the root with no symlink followed: a link swapped in since the
            // path was resolved is refused, not read through (nor asked of the editor).
            let relative = std::path::Path::new(&rel);
            match braincode_sandbox::beneath::stat(&root, relative) {
                Ok(Some(entry)) if entry.kind == braincode_sandbox::beneath::EntryKind::Dir => {
                    return Err(format!("{rel} is a directory; use list_files"));
                }
                Ok(Some(_)) => {}
                Ok(None) => return Err(format!("{rel} not found")),
                Err(e) if braincode_sandbox::beneath::is_link_refusal(&e) => {
                    return Err(format!(
                        "{rel} is reached through a symbolic link that changed since it was checked; not read"
                    ));
                }
                Err(e) => return Err(format!("cannot open {rel}: {e}")),
            }
            if editor.is_some() {
                return Ok(None);
            }
            braincode_sandbox::beneath::open_file(&root, relative)
                .map(Some)
                .map_err(|e| format!("cannot open {rel}: {e}"))
        })
        .await;
        let rel = resolved.relative.clone();
        let opened = match result {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => return ToolOutput::error(format!("read_file: {error}")),
            Err(error) => return ToolOutput::error(format!("read_file failed: {error}")),
        };
        // The editor's text (an unsaved buffer) when it serves the file; else the disk's.
        let buffered = match (&opened, &context.editor) {
            (None, Some(editor)) => editor.read(&absolute).await.ok(),
            _ => None,
        };
        let result = tokio::task::spawn_blocking(move || -> Result<(Window, bool, u64), String> {
            match (buffered, opened) {
                (Some(text), _) => {
                    let total = text.len() as u64;
                    window_of(
                        &mut std::io::Cursor::new(text.into_bytes()),
                        total,
                        &rel,
                        offset,
                        requested,
                    )
                }
                (None, Some(mut file)) => {
                    let total = file
                        .metadata()
                        .map_err(|e| format!("cannot open {rel}: {e}"))?
                        .len();
                    window_of(&mut file, total, &rel, offset, requested)
                }
                (None, None) => {
                    // The editor could not serve it: the file on disk, contained as always.
                    let mut file = braincode_sandbox::beneath::open_file(
                        &root_again,
                        std::path::Path::new(&rel),
                    )
                    .map_err(|e| format!("cannot open {rel}: {e}"))?;
                    let total = file
                        .metadata()
                        .map_err(|e| format!("cannot open {rel}: {e}"))?
                        .len();
                    window_of(&mut file, total, &rel, offset, requested)
                }
            }
        })
        .await;
        let (window, expanded, limit) = match result {
            Ok(Ok(value)) => value,
            Ok(Err(error)) => return ToolOutput::error(format!("read_file: {error}")),
            Err(error) => return ToolOutput::error(format!("read_file failed: {error}")),
        };
        let truncated = window.end < window.total;
        let mut header = format!(
            "# {} (chars {}-{}/{}",
            resolved.relative, window.start, window.end, window.total
        );
        if truncated {
            header.push_str(&format!("; truncated; next offset {}", window.end));
        }
        if expanded {
            header.push_str(&format!("; limit expanded to {limit}"));
        }
        header.push(')');
        ToolOutput::ok(format!("{header}\n{}", window.text)).with_details(json!({
            "path": resolved.relative,
            "offset": window.start,
            "end": window.end,
            "total": window.total,
            "nextOffset": truncated.then_some(window.end),
            "truncated": truncated,
            "limitExpanded": expanded,
        }))
    }
}
