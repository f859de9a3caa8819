//! Journal records made from what calls returned (`model_reply`, tool output) and read back
//! into what calls return, the comparable form of a record (no wall-clock fields), and the
//! keys hook results are served by.

use braincode_llm::{Completion, ErrorKind, ModelError, ToolCall};
use braincode_protocol::{
    ModelReply, Record, RecordedModelError, RecordedToolCall, ToolExecutionSummary,
};
use serde_json::Value;

pub(super) fn tool_call(recorded: &RecordedToolCall) -> ToolCall {
    ToolCall::from_raw(
        recorded.id.clone(),
        recorded.name.clone(),
        recorded.arguments.clone(),
    )
    .with_signature(recorded.signature.clone())
}

/// The `model_reply` record of a completion.
pub fn reply_record(
    agent_session: &str,
    call: u32,
    model: &str,
    completion: &Completion,
    max_text_bytes: usize,
) -> ModelReply {
    let clipped = completion.text.len() > max_text_bytes;
    let text = if clipped {
        braincode_config::journal::clip_text(&completion.text, max_text_bytes).into_owned()
    } else {
        completion.text.clone()
    };
    ModelReply {
        agent_session_id: agent_session.to_string(),
        call,
        model: model.to_string(),
        text,
        tool_calls: completion
            .tool_calls
            .iter()
            .map(|c| RecordedToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.raw_arguments.clone(),
                signature: c.signature.clone(),
            })
            .collect(),
        usage: completion.usage,
        clipped,
        cut: completion.stop == Some(braincode_llm::StopReason::MaxTokens),
        error: None,
    }
}

/// The `model_reply` record of a failed call.
pub fn failure_record(
    agent_session: &str,
    call: u32,
    model: &str,
    error: &ModelError,
) -> ModelReply {
    ModelReply {
        agent_session_id: agent_session.to_string(),
        call,
        model: model.to_string(),
        text: String::new(),
        tool_calls: Vec::new(),
        usage: None,
        clipped: false,
        cut: false,
        error: Some(RecordedModelError {
            kind: error.kind.as_str().to_string(),
            message: error.message.clone(),
            status: error.status,
            model: error.model.clone(),
            cause: error.cause.map(|c| c.as_str().to_string()),
        }),
    }
}

/// The model error a journaled failure describes (an unknown kind reads as `invalid_response`).
pub(super) fn model_error(recorded: &RecordedModelError) -> ModelError {
    let kind = |name: &str| {
        serde_json::from_value::<ErrorKind>(Value::String(name.to_string()))
            .unwrap_or(ErrorKind::InvalidResponse)
    };
    let mut error = ModelError::new(kind(&recorded.kind), recorded.message.clone());
    error.status = recorded.status;
    error.model = recorded.model.clone();
    error.cause = recorded.cause.as_deref().map(kind);
    error
}

/// A tool call's output as journaled on its end record.
pub fn journaled_output(end: &ToolExecutionSummary) -> (String, bool) {
    (end.output.clone().unwrap_or_default(), end.is_error)
}

/// Fields that differ between two faithful runs (wall-clock times).
const VOLATILE_FIELDS: [&str; 3] = ["timestamp", "durationMs", "duration_ms"];

/// A record as compared by `replay --check`: its JSON without wall-clock fields.
pub fn comparable(record: &Record) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    strip_volatile(&mut value);
    value
}

fn strip_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for field in VOLATILE_FIELDS {
                map.shift_remove(field);
            }
            for child in map.values_mut() {
                strip_volatile(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_volatile),
        _ => {}
    }
}

/// The key of a hook event's journaled results.
pub(super) fn hook_key(
    event_name: &str,
    scope: &str,
    matcher: Option<&str>,
) -> (String, String, String) {
    (
        event_name.to_string(),
        scope.to_string(),
        matcher.unwrap_or("").to_string(),
    )
}

/// The tape scope of an agent's hook event: its agent session, and the tool call for tool
/// events (empty for run-level events).
pub fn hook_scope(agent_session: Option<&str>, tool_call: Option<&str>) -> String {
    match (agent_session, tool_call) {
        (None, None) => String::new(),
        (session, None) => session.unwrap_or_default().to_string(),
        (session, Some(call)) => format!("{}#{call}", session.unwrap_or_default()),
    }
}
