//! `compaction`: an agent's conversation was compacted (or could not be), and what went.

use serde::{Deserialize, Serialize};

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// The estimated input reached the policy's share of the model's window.
    Auto,
    /// The provider said the request did not fit its context.
    Overflow,
}

/// `compaction`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionRecord {
    /// The agent session whose conversation it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_session_id: Option<String>,
    /// The index of the model call it came before (a replay compacts at the same call).
    #[serde(default)]
    pub call: u32,
    /// Why.
    pub trigger: CompactionTrigger,
    /// Whether it was applied (`false`: it could not make the conversation smaller).
    pub applied: bool,
    /// Estimated input tokens before and after.
    pub tokens_before: u64,
    /// After (equal to before when not applied).
    pub tokens_after: u64,
    /// Assistant turns (with their tool results) summarised away.
    #[serde(default)]
    pub turns_summarized: u64,
    /// Summary lines dropped (oldest first) to keep the block bounded.
    #[serde(default)]
    pub lines_dropped: u64,
    /// What the summary block says now (bounded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// Why it was not applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
