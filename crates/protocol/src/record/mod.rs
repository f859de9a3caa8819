//! Session journal records (one JSON object per line of `<home>/sessions/<id>.jsonl`).
//!
//! Every line is `{"timestamp": <epoch ms>, "type": "<record type>", ...fields}`. A line whose
//! `type` this version does not know is kept verbatim as [`Record::Unknown`], so older binaries
//! can read newer journals without losing anything. Payloads owned by other crates (plans,
//! handoff packets, worker results, the BrainTaskContext) are carried as opaque JSON and typed
//! by the crate that owns them.

mod audit;
mod payloads;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use audit::*;
pub use payloads::*;

/// One journal record. Unknown types are kept verbatim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// The run begins (its first record, with the prompt).
    RunStart(RunStart),
    /// The run answered.
    RunEnd(RunEnd),
    /// An attempt or the run failed.
    RunError(RunError),
    /// A worker starts.
    WorkerStart(WorkerStart),
    /// A worker finished.
    WorkerEnd(WorkerEnd),
    /// A worker attempt failed.
    WorkerError(WorkerError),
    /// A packet crossed the brain/agent boundary.
    AgentMessage(AgentMessageRecord),
    /// The plan's todos.
    TodoPlan(TodoPlan),
    /// Todos changed state.
    TodoUpdate(TodoUpdate),
    /// The BrainTaskContext.
    ContextPlan(ContextPlan),
    /// How the plan was made.
    Routing(RoutingRecord),
    /// The run stopped to ask.
    ClarificationRequest(ClarificationRequest),
    /// Checks gate.
    CheckSummary(CheckSummaryRecord),
    /// Review gate.
    ReviewDecision(ReviewDecisionRecord),
    /// What the reviewer saw.
    ReviewArtifactsSummary(ReviewArtifactsSummary),
    /// A fix pass starts.
    FixIteration(FixIteration),
    /// What changed.
    PatchSummary(PatchSummaryRecord),
    /// The final report.
    FinalReport(FinalReportRecord),
    /// MCP connection report.
    McpConnect(McpConnect),
    /// Tool-call counts.
    ToolCallCount(ToolCallCount),
    /// A model call retried on the same model.
    ModelRetry(ModelRetry),
    /// A handoff summary.
    Handoff(Handoff),
    /// A specialist dispatch.
    DynamicDispatch(DynamicDispatch),
    /// The pre-execution plan review.
    ExecutionPlanReview(ExecutionPlanReview),
    /// A tool call's approval.
    ToolApprovalDecision(ToolApprovalDecision),
    /// A tool call's start or end.
    ToolExecutionSummary(ToolExecutionSummary),
    /// SessionStart hooks.
    HookSessionStart(HookRecord),
    /// UserPromptSubmit hooks.
    HookUserPromptSubmit(HookRecord),
    /// SubagentStart hooks.
    HookSubagentStart(HookRecord),
    /// SubagentStop hooks.
    HookSubagentStop(HookRecord),
    /// Stop hooks.
    HookStop(HookRecord),
    /// One assistant message's token usage.
    TokenUsage(TokenUsage),
    /// A record type this version does not know (or a known type whose fields did not
    /// parse), kept verbatim including its `type`.
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

impl Record {
    /// Every record type this version knows.
    pub const KNOWN_TYPES: [&'static str; 31] = [
        "run_start",
        "run_end",
        "run_error",
        "worker_start",
        "worker_end",
        "worker_error",
        "agent_message",
        "todo_plan",
        "todo_update",
        "context_plan",
        "routing",
        "clarification_request",
        "check_summary",
        "review_decision",
        "review_artifacts_summary",
        "fix_iteration",
        "patch_summary",
        "final_report",
        "mcp_connect",
        "tool_call_count",
        "handoff",
        "dynamic_dispatch",
        "execution_plan_review",
        "tool_approval_decision",
        "tool_execution_summary",
        "hook_session_start",
        "hook_user_prompt_submit",
        "hook_subagent_start",
        "hook_subagent_stop",
        "hook_stop",
        "token_usage",
    ];

    /// The record's `type` value (`""` for an unknown record without one).
    pub fn type_name(&self) -> &str {
        match self {
            Record::RunStart(_) => "run_start",
            Record::RunEnd(_) => "run_end",
            Record::RunError(_) => "run_error",
            Record::WorkerStart(_) => "worker_start",
            Record::WorkerEnd(_) => "worker_end",
            Record::WorkerError(_) => "worker_error",
            Record::AgentMessage(_) => "agent_message",
            Record::TodoPlan(_) => "todo_plan",
            Record::TodoUpdate(_) => "todo_update",
            Record::ContextPlan(_) => "context_plan",
            Record::Routing(_) => "routing",
            Record::ClarificationRequest(_) => "clarification_request",
            Record::CheckSummary(_) => "check_summary",
            Record::ReviewDecision(_) => "review_decision",
            Record::ReviewArtifactsSummary(_) => "review_artifacts_summary",
            Record::FixIteration(_) => "fix_iteration",
            Record::PatchSummary(_) => "patch_summary",
            Record::FinalReport(_) => "final_report",
            Record::McpConnect(_) => "mcp_connect",
            Record::ToolCallCount(_) => "tool_call_count",
            Record::ModelRetry(_) => "model_retry",
            Record::Handoff(_) => "handoff",
            Record::DynamicDispatch(_) => "dynamic_dispatch",
            Record::ExecutionPlanReview(_) => "execution_plan_review",
            Record::ToolApprovalDecision(_) => "tool_approval_decision",
            Record::ToolExecutionSummary(_) => "tool_execution_summary",
            Record::HookSessionStart(_) => "hook_session_start",
            Record::HookUserPromptSubmit(_) => "hook_user_prompt_submit",
            Record::HookSubagentStart(_) => "hook_subagent_start",
            Record::HookSubagentStop(_) => "hook_subagent_stop",
            Record::HookStop(_) => "hook_stop",
            Record::TokenUsage(_) => "token_usage",
            Record::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

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
mod tests {
    use super::*;
    use crate::{Phase, Role, Usage};
    use serde_json::json;

    fn sample_records() -> Vec<Record> {
        vec![
            Record::RunStart(RunStart {
                prompt: "hello".into(),
                plan: Some(json!({"primary": "rush"})),
                project_support: Some(ProjectSupportSummary {
                    root: "/p".into(),
                    ..Default::default()
                }),
                model: None,
                attempt: Some(1),
            }),
            Record::RunError(RunError {
                error: "boom".into(),
                kind: Some("aborted".into()),
                attempt: None,
                will_fallback: Some(false),
            }),
            Record::TokenUsage(TokenUsage {
                role: Some(Role::Backend),
                phase: Some(Phase::Support),
                brain_id: Some("brain".into()),
                model_id: Some("local/smollm2".into()),
                provider: Some("local".into()),
                agent_session_id: None,
                task_id: None,
                parent_id: None,
                turn_id: Some("t:0:0".into()),
                attempt: Some(1),
                usage: Usage::new(1, 2, 3, 4),
            }),
            Record::HookStop(HookRecord {
                event_name: "Stop".into(),
                matcher: None,
                records: vec![],
                additional_context: vec!["ctx".into()],
                blocked_reason: None,
            }),
            Record::Handoff(Handoff {
                summary: "s".into(),
                focus: None,
                trigger: Some(HandoffTrigger::Manual),
                estimated_bytes: None,
                limit_bytes: None,
            }),
        ]
    }

    #[test]
    fn entries_round_trip_with_timestamp_and_type_first() {
        for record in sample_records() {
            let entry = JournalEntry::new(1_700_000_000_000, record.clone());
            let line = serde_json::to_string(&entry).unwrap();
            assert!(
                line.starts_with(&format!(
                    "{{\"timestamp\":1700000000000,\"type\":\"{}\"",
                    record.type_name()
                )),
                "{line}"
            );
            let back: JournalEntry = serde_json::from_str(&line).unwrap();
            assert_eq!(back, entry);
            assert!(!back.record.is_malformed_known());
        }
    }

    #[test]
    fn unknown_types_are_kept_verbatim() {
        let line = r#"{"timestamp":5,"type":"future_thing","nested":{"a":[1,2]},"x":"y"}"#;
        let entry: JournalEntry = serde_json::from_str(line).unwrap();
        assert_eq!(entry.record.type_name(), "future_thing");
        assert!(matches!(entry.record, Record::Unknown(_)));
        assert!(!entry.record.is_malformed_known());
        assert_eq!(serde_json::to_string(&entry).unwrap(), line);
    }

    #[test]
    fn known_type_with_bad_fields_is_kept_and_flagged() {
        let line = r#"{"timestamp":5,"type":"run_start","prompt":42}"#;
        let entry: JournalEntry = serde_json::from_str(line).unwrap();
        assert!(entry.record.is_malformed_known());
        assert_eq!(entry.record.type_name(), "run_start");
    }

    #[test]
    fn lines_without_a_type_are_errors() {
        assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":5}"#).is_err());
        assert!(serde_json::from_str::<JournalEntry>(r#"{"timestamp":"x","type":"a"}"#).is_err());
        assert!(serde_json::from_str::<JournalEntry>("[1]").is_err());
    }

    #[test]
    fn every_known_type_name_is_listed() {
        for record in sample_records() {
            assert!(Record::KNOWN_TYPES.contains(&record.type_name()));
        }
        let mut sorted = Record::KNOWN_TYPES.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), Record::KNOWN_TYPES.len());
    }

    #[test]
    fn durability_points_are_run_end_error_and_handoff() {
        let records = sample_records();
        assert!(!records[0].is_durability_point());
        assert!(records[1].is_durability_point());
        assert!(records[4].is_durability_point());
    }
}
