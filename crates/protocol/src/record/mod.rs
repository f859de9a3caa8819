//! Session journal records (one JSON object per line of `<home>/sessions/<id>.jsonl`).
//!
//! Every line is `{"timestamp": <epoch ms>, "type": "<record type>", ...fields}`. A line whose
//! `type` this version does not know is kept verbatim as [`Record::Unknown`], so older binaries
//! can read newer journals without losing anything. Every payload is typed, packets included
//! ([`crate::HandoffPacket`], [`crate::WorkerResult`], [`crate::BrainTaskContext`]).
//!
//! The record types are declared once, in the `records!` list below: the enum's variants and
//! their `type` names, [`Record::KNOWN_TYPES`] and [`Record::type_name`] are all generated
//! from it, so a type cannot be added to one and forgotten in another.

mod audit;
mod compaction;
mod ledger;
mod mcp;
mod payloads;
mod replay;
mod run;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use audit::*;
pub use compaction::*;
pub use ledger::*;
pub use mcp::*;
pub use payloads::*;
pub use replay::*;
pub use run::*;

/// Declares [`Record`] (one variant per `"type" => Variant(Payload)` line, plus
/// `Unknown`), [`Record::KNOWN_TYPES`], [`Record::type_name`] and the strict twin used to
/// explain why a known record did not parse.
macro_rules! records {
    ($( $(#[$doc:meta])* $name:literal => $variant:ident($payload:ty), )*) => {
        /// One journal record. Unknown types are kept verbatim.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        #[allow(clippy::large_enum_variant)]
        pub enum Record {
            $( $(#[$doc])* #[serde(rename = $name)] $variant($payload), )*
            /// A record type this version does not know (or a known type whose fields did
            /// not parse), kept verbatim including its `type`.
            #[serde(untagged)]
            Unknown(Map<String, Value>),
        }

        /// [`Record`] without the `Unknown` fallback: parsing a known type into it yields
        /// the typed payload's own error.
        #[derive(Deserialize)]
        #[serde(tag = "type")]
        #[allow(clippy::large_enum_variant, dead_code)]
        enum StrictRecord {
            $( #[serde(rename = $name)] $variant($payload), )*
        }

        impl Record {
            /// Every record type this version knows, in declaration order.
            pub const KNOWN_TYPES: &'static [&'static str] = &[$($name),*];

            /// The record's `type` value (`""` for an unknown record without one).
            pub fn type_name(&self) -> &str {
                match self {
                    $( Record::$variant(_) => $name, )*
                    Record::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
                }
            }
        }
    };
}

records! {
    /// The run begins (its first record, with the prompt).
    "run_start" => RunStart(RunStart),
    /// The run answered.
    "run_end" => RunEnd(RunEnd),
    /// An attempt or the run failed.
    "run_error" => RunError(RunError),
    /// A worker starts.
    "worker_start" => WorkerStart(WorkerStart),
    /// A worker finished.
    "worker_end" => WorkerEnd(WorkerEnd),
    /// A worker attempt failed.
    "worker_error" => WorkerError(WorkerError),
    /// A packet crossed the brain/agent boundary.
    "agent_message" => AgentMessage(AgentMessageRecord),
    /// The plan's todos.
    "todo_plan" => TodoPlan(TodoPlan),
    /// Todos changed state.
    "todo_update" => TodoUpdate(TodoUpdate),
    /// The BrainTaskContext.
    "context_plan" => ContextPlan(ContextPlan),
    /// How the plan was made, and its workers.
    "routing" => Routing(RoutingRecord),
    /// The run stopped to ask.
    "clarification_request" => ClarificationRequest(ClarificationRequest),
    /// Checks gate.
    "check_summary" => CheckSummary(CheckSummaryRecord),
    /// Review gate.
    "review_decision" => ReviewDecision(ReviewDecisionRecord),
    /// What the reviewer saw.
    "review_artifacts_summary" => ReviewArtifactsSummary(ReviewArtifactsSummary),
    /// A fix pass starts.
    "fix_iteration" => FixIteration(FixIteration),
    /// What changed.
    "patch_summary" => PatchSummary(PatchSummaryRecord),
    /// The final report.
    "final_report" => FinalReport(FinalReportRecord),
    /// MCP connection report.
    "mcp_connect" => McpConnect(McpConnect),
    /// Tool-call counts.
    "tool_call_count" => ToolCallCount(ToolCallCount),
    /// A model call retried on the same model.
    "model_retry" => ModelRetry(ModelRetry),
    /// A sandboxed command's connection, as the network allowlist decided it.
    "network_access" => NetworkAccess(NetworkAccess),
    /// Facts read from the repository without a model.
    "repo_facts" => RepoFacts(RepoFacts),
    /// One model reply, as the agent loop received it.
    "model_reply" => ModelReply(ModelReply),
    /// A warning the user was given.
    "warning" => Warning(Warning),
    /// A handoff summary.
    "handoff" => Handoff(Handoff),
    /// A specialist dispatch.
    "dynamic_dispatch" => DynamicDispatch(DynamicDispatch),
    /// The pre-execution plan review.
    "execution_plan_review" => ExecutionPlanReview(ExecutionPlanReview),
    /// A tool call's approval.
    "tool_approval_decision" => ToolApprovalDecision(ToolApprovalDecision),
    /// A tool call's start or end.
    "tool_execution_summary" => ToolExecutionSummary(ToolExecutionSummary),
    /// SessionStart hooks.
    "hook_session_start" => HookSessionStart(HookRecord),
    /// UserPromptSubmit hooks.
    "hook_user_prompt_submit" => HookUserPromptSubmit(HookRecord),
    /// SubagentStart hooks.
    "hook_subagent_start" => HookSubagentStart(HookRecord),
    /// SubagentStop hooks.
    "hook_subagent_stop" => HookSubagentStop(HookRecord),
    /// Stop hooks.
    "hook_stop" => HookStop(HookRecord),
    /// PreToolUse hooks (one tool call).
    "hook_pre_tool_use" => HookPreToolUse(HookRecord),
    /// PermissionRequest hooks (a call about to ask a person).
    "hook_permission_request" => HookPermissionRequest(HookRecord),
    /// PostToolUse hooks (one tool call that ran).
    "hook_post_tool_use" => HookPostToolUse(HookRecord),
    /// PreCompact hooks (an agent's conversation is about to be compacted).
    "hook_pre_compact" => HookPreCompact(HookRecord),
    /// PostCompact hooks (an agent's conversation was compacted).
    "hook_post_compact" => HookPostCompact(HookRecord),
    /// One assistant message's token usage.
    "token_usage" => TokenUsage(TokenUsage),
    /// A file a write changed (the patch ledger).
    "file_change" => FileChange(FileChange),
    /// The dirty working tree the run started from.
    "patch_baseline" => PatchBaseline(PatchBaselineRecord),
    /// A run's changes were taken back.
    "undo" => Undo(UndoRecord),
    /// A parallel writer's change, merged back into the project (or why not).
    "writer_merge" => WriterMerge(WriterMerge),
    /// An agent's conversation was compacted.
    "compaction" => Compaction(CompactionRecord),
}

impl Record {
    /// Whether this record must reach the disk before the writer goes on (fsync): the end of
    /// a run and handoffs are what later runs depend on.
    pub fn is_durability_point(&self) -> bool {
        matches!(
            self,
            Record::RunEnd(_) | Record::RunError(_) | Record::Handoff(_)
        )
    }

    /// For an [`Record::Unknown`] whose `type` is one this version knows: the fields did not
    /// match the expected shape.
    pub fn is_malformed_known(&self) -> bool {
        match self {
            Record::Unknown(map) => map
                .get("type")
                .and_then(Value::as_str)
                .is_some_and(|ty| Self::KNOWN_TYPES.contains(&ty)),
            _ => false,
        }
    }

    /// For a malformed known record (see [`Record::is_malformed_known`]): why its fields did
    /// not take the typed shape, as serde words it. `None` for any other record.
    pub fn parse_error(&self) -> Option<String> {
        if !self.is_malformed_known() {
            return None;
        }
        let Record::Unknown(map) = self else {
            return None;
        };
        serde_json::from_value::<StrictRecord>(Value::Object(map.clone()))
            .err()
            .map(|err| err.to_string())
    }
}

/// One line of a session journal.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The record.
    pub record: Record,
}

impl JournalEntry {
    /// Wraps a record with a timestamp.
    pub fn new(timestamp: i64, record: Record) -> Self {
        Self { timestamp, record }
    }
}

impl Serialize for JournalEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `timestamp` first, then the record's own fields (`type` leads for known records).
        let body = serde_json::to_value(&self.record).map_err(serde::ser::Error::custom)?;
        let mut map = Map::new();
        map.insert("timestamp".into(), Value::from(self.timestamp));
        if let Value::Object(fields) = body {
            for (key, value) in fields {
                if key != "timestamp" {
                    map.insert(key, value);
                }
            }
        }
        map.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JournalEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::<String, Value>::deserialize(deserializer)?;
        let timestamp = match map.shift_remove("timestamp") {
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .ok_or_else(|| serde::de::Error::custom("timestamp is not an integer"))?,
            Some(other) => {
                return Err(serde::de::Error::custom(format!(
                    "timestamp must be epoch milliseconds, found {other}"
                )));
            }
            None => 0,
        };
        if !map.get("type").is_some_and(Value::is_string) {
            return Err(serde::de::Error::custom(
                "record has no string \"type\" field",
            ));
        }
        let record = serde_json::from_value::<Record>(Value::Object(map))
            .map_err(serde::de::Error::custom)?;
        Ok(JournalEntry { timestamp, record })
    }
}

#[cfg(test)]
mod tests;
