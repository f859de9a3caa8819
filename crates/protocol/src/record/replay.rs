//! The records that make a journal replayable and resumable: each model reply, as the agent
//! loop received it, and each warning the run gave (the report's warnings are a fold of them).

use serde::{Deserialize, Serialize};

use crate::Usage;

fn is_false(value: &bool) -> bool {
    !*value
}

/// One tool call of a model reply, as the model sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedToolCall {
    /// Provider call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// The arguments exactly as sent (JSON text, possibly malformed).
    pub arguments: String,
    /// The provider's opaque token for the call (Gemini's `thoughtSignature`), kept so a
    /// resumed conversation sends it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// `model_reply`: one model call of an agent, as the agent loop received it (answer text and
/// tool calls; reasoning text is not kept). Keyed by the agent session and the call's index
/// within it, so a replay or a resume can hand the same reply to the same call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelReply {
    /// The agent session (`<taskId>-<attempt>`, or `router-<attempt>`).
    pub agent_session_id: String,
    /// 0-based index of the call within the agent session.
    pub call: u32,
    /// Catalogue id of the model that replied.
    pub model: String,
    /// Answer text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<RecordedToolCall>,
    /// Usage, if the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Whether the text had to be clipped to fit a journal line (such a reply cannot be
    /// replayed exactly).
    #[serde(default, skip_serializing_if = "is_false")]
    pub clipped: bool,
    /// The reply stopped at the call's output token limit (it may be incomplete).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cut: bool,
    /// The call failed (after the client's own retries): how. A failure is as much a reply
    /// as an answer — the run's next decision (fallback, error) depends on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RecordedModelError>,
}

/// A model call's failure, as journaled in `model_reply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedModelError {
    /// Failure class (`auth`, `rate_limit`, `server`, …).
    pub kind: String,
    /// What happened (secrets redacted).
    pub message: String,
    /// HTTP status, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Catalogue id of the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// For an interrupted stream: the class of the failure that broke it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
}

/// `warning`: something the user was told that is not an error of the run. The report's
/// warnings are exactly these, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Warning {
    /// The warning.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_signature_is_kept_and_old_lines_still_read() {
        let signed = RecordedToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{}".into(),
            signature: Some("CiQBVKhc".into()),
        };
        let line = serde_json::to_string(&signed).unwrap_or_default();
        assert!(line.contains(r#""signature":"CiQBVKhc""#), "{line}");
        assert_eq!(
            serde_json::from_str::<RecordedToolCall>(&line).ok(),
            Some(signed)
        );
        // A journal written before signatures were kept.
        let old: Result<RecordedToolCall, _> =
            serde_json::from_str(r#"{"id":"c1","name":"read_file","arguments":"{}"}"#);
        assert_eq!(old.ok().and_then(|c| c.signature), None);
        let unsigned = serde_json::to_string(&RecordedToolCall {
            id: "c".into(),
            name: "n".into(),
            arguments: String::new(),
            signature: None,
        })
        .unwrap_or_default();
        assert!(!unsigned.contains("signature"), "{unsigned}");
    }
}
