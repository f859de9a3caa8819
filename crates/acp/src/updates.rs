//! A run's events as ACP `session/update`s.
//!
//! One [`Translator`] per prompt turn (and one per run when a session is loaded back). The
//! journal's records carry everything an editor shows, so live turns and loaded sessions go
//! through the same [`Translator::record`]: the plan's todos become `plan` entries (the whole
//! list each time one moves, as the protocol asks), each support or review worker and each tool
//! call a `tool_call` then `tool_call_update`s (kind, status, locations, the diff of an edit,
//! a command's output), and a file change its diff with the content before and after. Only
//! the primary's streamed text (`agent_message_chunk`), its reasoning and the run's status
//! lines (`agent_thought_chunk`) are live-only events. A loaded session tells its prompts
//! again (`user_message_chunk`); a live turn does not echo the prompt the editor sent.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use braincode_protocol::{
    ApprovalDecision, FileChange, Phase, Record, RunEvent, TaskStatus, Todo, ToolExecutionSummary,
    ToolStage, WorkerPhase,
};
use braincode_runtime::BlobStore;
use braincode_tools::ToolPermission;
use serde_json::Value;

/// Longest command output or worker summary put into one update (the journal keeps it all).
pub const MAX_UPDATE_TEXT: usize = 16 * 1024;
/// Largest file shown whole in a diff (before and after); a larger one shows the journal's
/// unified diff.
pub const MAX_DIFF_FILE_BYTES: usize = 1024 * 1024;

/// The text of project file `path` (relative, or absolute inside `project_root`) read through
/// the contained reader: a regular file inside the project, no link out of it, never a FIFO or
/// a device, at most [`MAX_DIFF_FILE_BYTES`], valid UTF-8 — else `None`.
pub fn project_text(project_root: &Path, path: &Path) -> Option<String> {
    let read = braincode_config::ReadScope::new(project_root)
        .ok()?
        .read_to_string(path, MAX_DIFF_FILE_BYTES)
        .ok()?;
    (!read.clipped && !read.lossy).then_some(read.text)
}

/// Whether the editor saw the turn happen or is told it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Telling {
    /// A live prompt turn: the editor already shows the prompt it sent.
    Live,
    /// `session/load`: the prompts are told too.
    Again,
}

/// Turns one run's events into session updates.
pub struct Translator {
    telling: Telling,
    project_root: PathBuf,
    blobs: BlobStore,
    todos: Vec<Todo>,
    /// The primary's text streamed this turn.
    streamed: String,
    /// A primary tool call came since the last text: the next text starts a paragraph.
    paragraph: bool,
    /// Tool calls started and not yet ended, by id (a file change may name one).
    open_tools: HashMap<String, String>,
}

impl Translator {
    /// A translator for a run in `project_root` of session `session_id` under `home_root`.
    pub fn new(telling: Telling, home_root: &Path, session_id: &str, project_root: &Path) -> Self {
        Self {
            telling,
            project_root: project_root.to_path_buf(),
            blobs: BlobStore::new(home_root, session_id),
            todos: Vec::new(),
            streamed: String::new(),
            paragraph: false,
            open_tools: HashMap::new(),
        }
    }

    /// What the editor is told of one live event.
    pub fn event(&mut self, event: &RunEvent) -> Vec<SessionUpdate> {
        match event {
            RunEvent::Record { entry, .. } => self.record(&entry.record),
            RunEvent::TextDelta { agent, text } if agent.phase == Phase::Primary => {
                let mut text = text.clone();
                if std::mem::take(&mut self.paragraph) && !self.streamed.trim_end().is_empty() {
                    text.insert_str(0, "\n\n");
                }
                self.streamed.push_str(&text);
                vec![message(text)]
            }
            RunEvent::ReasoningDelta { agent, text } if agent.phase == Phase::Primary => {
                vec![SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                    text_block(text.clone()),
                ))]
            }
            RunEvent::ToolStarted { agent, .. } => {
                if agent.phase == Phase::Primary {
                    self.paragraph = true;
                }
                Vec::new()
            }
            // What the run is doing now ("routing with routeBrain on …", "check: test"), one
            // line of the agent's thoughts each.
            RunEvent::Status { message } => {
                vec![SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                    text_block(format!("{message}\n")),
                ))]
            }
            // Streams of other agents are theirs: their results arrive as tool calls.
            RunEvent::TextDelta { .. }
            | RunEvent::ReasoningDelta { .. }
            | RunEvent::ToolFinished { .. }
            | RunEvent::Warning { .. } => Vec::new(),
            RunEvent::Final { report } => self.answer(&report.model_summary),
        }
    }

    /// The one final answer, as far as the streamed text has not said it already.
    pub fn answer(&mut self, answer: &str) -> Vec<SessionUpdate> {
        let answer = answer.trim();
        if answer.is_empty() || self.streamed.trim_end().ends_with(answer) {
            return Vec::new();
        }
        let text = if self.streamed.trim().is_empty() {
            answer.to_string()
        } else {
            format!("\n\n{answer}")
        };
        self.streamed.push_str(&text);
        vec![message(text)]
    }

    /// What the editor is told of one journal record.
    pub fn record(&mut self, record: &Record) -> Vec<SessionUpdate> {
        match record {
            Record::TodoPlan(plan) => {
                self.todos = plan.todos.clone();
                vec![self.plan()]
            }
            Record::TodoUpdate(update) => {
                for todo in &update.todos {
                    match self.todos.iter_mut().find(|known| known.id == todo.id) {
                        Some(known) => *known = todo.clone(),
                        None => self.todos.push(todo.clone()),
                    }
                }
                for id in &update.todo_ids {
                    if let Some(known) = self.todos.iter_mut().find(|known| &known.id == id) {
                        known.status = update.status;
                    }
                }
                vec![self.plan()]
            }
            Record::WorkerStart(start) if start.phase != WorkerPhase::Primary => {
                let id = worker_call_id(start.phase, start.worker.as_str(), start.attempt);
                let title = match start.phase {
                    WorkerPhase::Review => format!("review: {}", first_line(&start.goal)),
                    WorkerPhase::Support | WorkerPhase::Primary => format!(
                        "{} worker: {}",
                        start.worker.as_str(),
                        first_line(&start.goal)
                    ),
                };
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(id, title)
                        .kind(ToolKind::Think)
                        .status(ToolCallStatus::InProgress),
                )]
            }
            Record::WorkerEnd(end) if end.phase != WorkerPhase::Primary => {
                let id = worker_call_id(end.phase, end.worker.as_str(), end.attempt);
                let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
                if let Some(result) = &end.result {
                    fields = fields.content(vec![text_content(clip(&result.summary))]);
                }
                vec![update(id, fields)]
            }
            Record::WorkerError(error) if error.phase != WorkerPhase::Primary => {
                let id = worker_call_id(error.phase, error.worker.as_str(), error.attempt);
                let reason = error.error.clone().unwrap_or_else(|| "it failed".into());
                vec![update(
                    id,
                    ToolCallUpdateFields::new()
                        .status(ToolCallStatus::Failed)
                        .content(vec![text_content(clip(&reason))]),
                )]
            }
            Record::ToolExecutionSummary(summary) => self.tool(summary),
            // A call that was not let through never starts: it is shown failed, with why.
            Record::ToolApprovalDecision(decision)
                if matches!(
                    decision.decision,
                    ApprovalDecision::Blocked | ApprovalDecision::Denied
                ) =>
            {
                let args = Some(&decision.args_summary);
                let reason = decision
                    .reason
                    .clone()
                    .unwrap_or_else(|| "it was not allowed".into());
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(
                        decision.tool_call_id.clone(),
                        tool_title(&decision.tool_name, args),
                    )
                    .kind(tool_kind(&decision.tool_name))
                    .status(ToolCallStatus::Failed)
                    .raw_input(decision.args_summary.clone())
                    .content(vec![text_content(format!("Not run: {reason}"))]),
                )]
            }
            Record::FileChange(change) => self.file_change(change),
            Record::RunStart(start) if self.telling == Telling::Again => {
                vec![SessionUpdate::UserMessageChunk(ContentChunk::new(
                    text_block(start.prompt.clone()),
                ))]
            }
            _ => Vec::new(),
        }
    }

    fn plan(&self) -> SessionUpdate {
        let entries = self
            .todos
            .iter()
            .map(|todo| {
                let status = match todo.status {
                    TaskStatus::Pending => PlanEntryStatus::Pending,
                    TaskStatus::Running => PlanEntryStatus::InProgress,
                    // A blocked or failed todo is over: the plan shows it done, its reason
                    // in the title.
                    TaskStatus::Completed | TaskStatus::Blocked | TaskStatus::Failed => {
                        PlanEntryStatus::Completed
                    }
                };
                let title = match (todo.status, &todo.reason) {
                    (TaskStatus::Blocked | TaskStatus::Failed, Some(reason)) => {
                        format!("{} ({}: {reason})", todo.title, todo.status.as_str())
                    }
                    (TaskStatus::Blocked | TaskStatus::Failed, None) => {
                        format!("{} ({})", todo.title, todo.status.as_str())
                    }
                    _ => todo.title.clone(),
                };
                PlanEntry::new(title, PlanEntryPriority::Medium, status)
            })
            .collect();
        SessionUpdate::Plan(Plan::new(entries))
    }

    fn tool(&mut self, summary: &ToolExecutionSummary) -> Vec<SessionUpdate> {
        let id = summary.tool_call_id.clone();
        let args = summary.args_summary.as_ref();
        match summary.stage {
            ToolStage::Start => {
                self.open_tools
                    .insert(id.clone(), summary.tool_name.clone());
                let mut call = ToolCall::new(id, tool_title(&summary.tool_name, args))
                    .kind(tool_kind(&summary.tool_name))
                    .status(ToolCallStatus::InProgress);
                if let Some(args) = args {
                    call = call.raw_input(args.clone());
                    let locations = self.locations(args);
                    if !locations.is_empty() {
                        call = call.locations(locations);
                    }
                    if let Some(command) = command_of(args) {
                        call = call.content(vec![text_content(format!("```sh\n{command}\n```"))]);
                    }
                }
                vec![SessionUpdate::ToolCall(call)]
            }
            ToolStage::End => {
                self.open_tools.remove(&id);
                let status = if summary.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let mut fields = ToolCallUpdateFields::new().status(status);
                if let Some(output) = summary.output.as_deref().filter(|o| !o.trim().is_empty()) {
                    let shown = match tool_kind(&summary.tool_name) {
                        ToolKind::Execute => format!("```\n{}\n```", clip(output.trim_end())),
                        _ => clip(output),
                    };
                    fields = fields.content(vec![text_content(shown)]);
                }
                if let Some(result) = &summary.result_summary {
                    fields = fields.raw_output(result.clone());
                }
                vec![update(id, fields)]
            }
        }
    }

    fn file_change(&self, change: &FileChange) -> Vec<SessionUpdate> {
        let Some(id) = change.tool_call_id.clone() else {
            return Vec::new();
        };
        let path = self.project_root.join(&change.path);
        let content = match self.diff(change, &path) {
            Some(diff) => ToolCallContent::Diff(diff),
            None => text_content(match &change.diff {
                Some(diff) => format!("```diff\n{}\n```", clip(diff)),
                None => format!("{} changed (binary or unreadable)", change.path),
            }),
        };
        vec![update(
            id,
            ToolCallUpdateFields::new()
                .content(vec![content])
                .locations(vec![ToolCallLocation::new(path)]),
        )]
    }

    /// The change's whole before and after, when both can still be read as they were: the
    /// before from the session's blob store, the after from the file while it still has the
    /// content the change left.
    fn diff(&self, change: &FileChange, path: &Path) -> Option<Diff> {
        let old = match &change.before_hash {
            Some(hash) => Some(String::from_utf8(self.blobs.load(hash).ok()?).ok()?),
            None => None,
        };
        let new = match &change.after_hash {
            Some(hash) => {
                let text = project_text(&self.project_root, path)?;
                if braincode_runtime::sha256_hex(text.as_bytes()) != *hash {
                    return None;
                }
                text
            }
            None => String::new(),
        };
        Some(Diff::new(path.to_path_buf(), new).old_text(old))
    }

    fn locations(&self, args: &Value) -> Vec<ToolCallLocation> {
        path_of(args)
            .map(|path| {
                let line = ["offset", "line", "startLine"]
                    .iter()
                    .find_map(|key| args.get(key).and_then(Value::as_u64))
                    .and_then(|line| u32::try_from(line).ok());
                vec![ToolCallLocation::new(self.project_root.join(path)).line(line)]
            })
            .unwrap_or_default()
    }
}

/// The tool call id of one worker attempt (stable, so its end finds its start).
fn worker_call_id(phase: WorkerPhase, role: &str, attempt: Option<u32>) -> String {
    format!("worker-{}-{role}-{}", phase.as_str(), attempt.unwrap_or(1))
}

/// The ACP kind of a tool: from the built-in tools' own permission class (a read, an edit,
/// a command), searches named as such; the checks run commands; MCP tools and unknown names
/// are `other`.
pub fn tool_kind(tool: &str) -> ToolKind {
    if tool == braincode_runtime::CHECK_TOOL {
        return ToolKind::Execute;
    }
    if tool == "search_files" || tool == "mcp_search" {
        return ToolKind::Search;
    }
    match braincode_tools::BUILTIN_TOOLS
        .iter()
        .find(|spec| spec.name == tool)
        .map(|spec| spec.permission)
    {
        Some(ToolPermission::Read) => ToolKind::Read,
        Some(ToolPermission::Write) => ToolKind::Edit,
        Some(ToolPermission::Execute) => ToolKind::Execute,
        None => ToolKind::Other,
    }
}

/// A title an editor can show in one line: the tool and what it acts on.
pub fn tool_title(tool: &str, args: Option<&Value>) -> String {
    let Some(args) = args else {
        return tool.to_string();
    };
    if let Some(command) = command_of(args) {
        return format!("{tool}: {}", first_line(command));
    }
    if let Some(path) = path_of(args) {
        return format!("{tool} {path}");
    }
    for key in ["pattern", "query", "url"] {
        if let Some(text) = args.get(key).and_then(Value::as_str) {
            return format!("{tool}: {}", first_line(text));
        }
    }
    tool.to_string()
}

/// The command a call runs, if it runs one.
pub fn command_of(args: &Value) -> Option<&str> {
    ["command", "cmd"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
}

/// The file a call acts on, if it names one.
pub fn path_of(args: &Value) -> Option<&str> {
    ["path", "file_path", "filePath"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str))
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    braincode_protocol::clip_chars(line, 120)
}

fn clip(text: &str) -> String {
    braincode_protocol::clip_chars(text, MAX_UPDATE_TEXT)
}

fn text_block(text: String) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::from(text_block(text))
}

/// An `agent_message_chunk` of `text`.
pub fn message(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text_block(text)))
}

fn update(id: String, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id, fields))
}

#[cfg(test)]
mod tests;
