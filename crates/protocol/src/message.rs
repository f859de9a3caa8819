//! Progress, context references and the agent message envelope.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Lifecycle state of a task or todo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Not started yet.
    #[default]
    Pending,
    /// In progress.
    Running,
    /// Done successfully.
    Completed,
    /// Could not run (a dependency failed, a gate stopped it, or it needs input).
    Blocked,
    /// Ran and failed.
    Failed,
}

impl TaskStatus {
    /// The JSON name of the status.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Failed => "failed",
        }
    }

    /// Whether the task will not change state any more.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Blocked | TaskStatus::Failed
        )
    }
}

/// Progress of one task context.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskProgress {
    /// Current state.
    pub status: TaskStatus,
    /// One-line summary of where the task stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// What is being done right now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_step: Option<String>,
    /// Steps already done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_steps: Option<Vec<String>>,
    /// Completion estimate, 0..=100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<f64>,
}

/// What a [`ContextRef`] points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextRefKind {
    /// A file in the project or the user's home.
    File,
    /// An earlier session or conversation.
    Thread,
    /// A summary produced by an agent.
    Summary,
    /// Anything else an agent produced (image, report, patch).
    Artifact,
}

/// A reference to context that lives outside the packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextRef {
    /// What is referenced.
    pub kind: ContextRefKind,
    /// Where it is (path, `session:<id>`, URL).
    pub uri: String,
    /// Short human label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// Kind of an [`AgentMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    /// Brain → agent task handoff.
    Handoff,
    /// Agent → brain result.
    Result,
    /// Reserved: a question back to the brain.
    Question,
    /// Reserved: a shared fact.
    Fact,
    /// Reserved: an artifact announcement.
    Artifact,
    /// Agent → brain failure.
    Error,
}

/// The envelope every brain/agent packet travels in (as journaled in `agent_message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessage {
    /// Message id.
    pub id: String,
    /// The message or context this one answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Sender (`brain` or `agent:<role>`).
    pub from: String,
    /// Recipient (`brain` or `agent:<role>`).
    pub to: String,
    /// What the payload is.
    pub kind: MessageKind,
    /// The packet itself (a HandoffPacket or WorkerResult, typed by the `context` crate).
    pub payload: Value,
    /// References carried alongside the payload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_refs: Vec<ContextRef>,
}
