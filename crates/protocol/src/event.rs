//! Run events: the one stream that flows out of a run.
//!
//! The journal writer, the CLI printer, the TUI and the server's SSE stream are all sinks of
//! this stream. Only [`RunEvent::Record`] is durable; the journal sink persists exactly those.

use serde::{Deserialize, Serialize};

use crate::{FinalReport, JournalEntry, Phase, Role};

/// Which agent an event comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRef {
    /// Role.
    pub role: Role,
    /// Phase.
    pub phase: Phase,
    /// Task context id (empty for the router).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    /// Model id running the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Something that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// A durable journal record.
    Record {
        /// The session the record belongs to.
        session_id: String,
        /// The record with its timestamp.
        entry: Box<JournalEntry>,
    },
    /// A one-line status for live progress ("routing with routeBrain on local/smollm2").
    Status {
        /// The status text.
        message: String,
    },
    /// Streamed answer text.
    TextDelta {
        /// Who is speaking.
        agent: AgentRef,
        /// The new text.
        text: String,
    },
    /// Streamed reasoning text.
    ReasoningDelta {
        /// Who is thinking.
        agent: AgentRef,
        /// The new text.
        text: String,
    },
    /// A tool call starts.
    ToolStarted {
        /// Who called.
        agent: AgentRef,
        /// Provider call id.
        call_id: String,
        /// Tool name.
        tool_name: String,
        /// One-line summary of the arguments.
        summary: String,
    },
    /// A tool call finished.
    ToolFinished {
        /// Who called.
        agent: AgentRef,
        /// Provider call id.
        call_id: String,
        /// Tool name.
        tool_name: String,
        /// Whether it failed.
        is_error: bool,
        /// Wall time.
        duration_ms: u64,
    },
    /// Something the user should know that is not an error of the run.
    Warning {
        /// The warning.
        message: String,
    },
    /// The one final answer of the run. Emitted exactly once, last.
    Final {
        /// The report.
        report: Box<FinalReport>,
    },
}

impl RunEvent {
    /// The durable record carried by this event, if any.
    pub fn journal_entry(&self) -> Option<&JournalEntry> {
        match self {
            RunEvent::Record { entry, .. } => Some(entry),
            RunEvent::Status { .. }
            | RunEvent::TextDelta { .. }
            | RunEvent::ReasoningDelta { .. }
            | RunEvent::ToolStarted { .. }
            | RunEvent::ToolFinished { .. }
            | RunEvent::Warning { .. }
            | RunEvent::Final { .. } => None,
        }
    }
}
