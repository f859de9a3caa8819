//! The tool contract.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a tool may do. Decides which tool modes expose it and whether it runs in parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolPermission {
    /// Reads the project; safe to run in parallel with other reads.
    Read,
    /// Changes files; runs alone.
    Write,
    /// Runs processes; runs alone.
    Execute,
}

/// How risky a tool is, for approval display.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRisk {
    /// Reading.
    Low,
    /// Editing.
    Medium,
    /// Executing.
    High,
}

/// A tool as offered to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Tool name (`read_file`, `mcp__server__tool`, …).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Permission class.
    pub permission: ToolPermission,
    /// Risk class.
    pub risk: ToolRisk,
}

/// The person's editor, when it offers to read and write the files it has open (an ACP
/// client's `fs/read_text_file` / `fs/write_text_file`): reads see unsaved buffers, writes
/// land in the editor's undo history. Paths are absolute and already contained in the
/// project (no link followed); a failure falls back to the file on disk.
#[async_trait]
pub trait EditorFiles: Send + Sync + std::fmt::Debug {
    /// The text the editor has for `path` (its buffer, saved or not).
    async fn read(&self, path: &std::path::Path) -> Result<String, String>;
    /// Replaces the text of `path` (creating it), through the editor.
    async fn write(&self, path: &std::path::Path, text: &str) -> Result<(), String>;
}

/// A project root whose files reach the disk on first use: a parallel writer's worktree is
/// checked out sparsely (making one is then a few milliseconds and a few files, not a copy of
/// the project). A file not yet on disk is *pending*: its content is in git. The file tools
/// write a pending file out before reading or changing it, list and search pending files as
/// if they were on disk, and a command materializes the whole tree before it runs.
#[async_trait]
pub trait LazyFiles: Send + Sync + std::fmt::Debug {
    /// The pending files (relative, `/`-separated), sorted.
    async fn pending(&self) -> Result<Arc<std::collections::BTreeSet<String>>, String>;
    /// The contents of those of `paths` that are pending (a missing key: not pending).
    async fn read_pending(
        &self,
        paths: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<u8>>, String>;
    /// Writes the pending ones of `paths` to disk (the others are left as they are).
    async fn materialize(&self, paths: &[String]) -> Result<(), String>;
    /// Writes every pending file to disk (before a command runs there).
    async fn materialize_all(&self) -> Result<(), String>;
}

/// What a tool call has access to.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Canonical project root; writes are confined to it.
    pub project_root: PathBuf,
    /// Fires when the run is cancelled; tools stop and kill their process groups.
    pub cancel: CancellationToken,
    /// The OS sandbox every command runs in; `None` when none could be set up (the gate then
    /// has a person approve each command).
    pub sandbox: Option<Arc<braincode_sandbox::Sandbox>>,
    /// The editor's files, when the person's editor serves them (reads and edits of the
    /// project's text files then go through it).
    pub editor: Option<Arc<dyn EditorFiles>>,
    /// The root's files reach the disk on first use (a writer's sparse worktree).
    pub lazy: Option<Arc<dyn LazyFiles>>,
}

/// An image a tool returned (MCP tools may), for models that read images.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolImage {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// Base64 data.
    pub data: String,
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// Text for the model.
    pub content: String,
    /// Whether the call failed (the text then explains why).
    pub is_error: bool,
    /// Structured details for the journal and UIs (never sent to the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Images the tool returned; the agent loop shows them to a model that reads images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
    /// Project files the call created at paths its arguments did not name (nothing was there
    /// before): the patch ledger journals them like the paths it snapshotted.
    #[serde(default, skip)]
    pub created_files: Vec<String>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            details: None,
            images: Vec::new(),
            created_files: Vec::new(),
        }
    }

    /// A failed result; the message goes back to the model.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: message.into(),
            is_error: true,
            details: None,
            images: Vec::new(),
            created_files: Vec::new(),
        }
    }

    /// Notes a project file (relative path) the call created where nothing was before.
    pub fn with_created_file(mut self, relative: impl Into<String>) -> Self {
        self.created_files.push(relative.into());
        self
    }

    /// Attaches structured details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// A tool an agent can call. A failure is a [`ToolOutput::error`] (the model reads it and
/// adapts); tools never panic on bad arguments.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's definition.
    fn definition(&self) -> &ToolDefinition;

    /// Runs the tool with already-approved arguments.
    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput;
}

/// A shared tool handle.
pub type SharedTool = Arc<dyn Tool>;
