//! Google Gemini API (`POST {base}/models/{model}:streamGenerateContent?alt=sse`, key in
//! the `x-goog-api-key` header, never in the URL).
//!
//! Every `data:` line is a whole `GenerateContentResponse`: `candidates[0].content.parts`
//! (text, `thought: true` text, whole `functionCall`s), a `finishReason` on the last chunk,
//! and `usageMetadata`. The stream has no terminal event: a reply is complete when the body
//! ends after a chunk with a `finishReason`.

mod body;
mod schema;

use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::{Value, json};

pub use body::{SKIP_SIGNATURE, model_path, request_body};
pub use schema::sanitize_schema;

use super::{StreamDecoder, complete_object, malformed, truncated};
use crate::classify::{classify_stream_error, clip_chars, redact};
use crate::sse::SseEvent;
use crate::usage::gemini_usage;
use crate::{ErrorKind, ModelError, ModelEvent, StopReason, ToolCall};

/// Maps a Gemini `finishReason`.
pub fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<Value>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    finish_message: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Option<Vec<Part>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    function_call: Option<FunctionCall>,
    #[serde(default)]
    thought_signature: Option<String>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
    #[serde(default)]
    block_reason_message: Option<String>,
}

/// Gemini stream decoder: text and `thought` parts as they come, each `functionCall` part as
/// one tool call (with a generated id, since Gemini gives none), the last `usageMetadata`,
/// and `Stop` when the body ends after a `finishReason`. A blocked prompt
/// (`promptFeedback.blockReason`) and an `{"error": …}` chunk are classified errors.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    call_ids: Vec<String>,
    finish: Option<String>,
    finish_message: Option<String>,
    usage: Option<Value>,
    done: bool,
}

impl GeminiDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn on_chunk(&mut self, chunk: Chunk, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            self.done = true;
            return Err(classify_stream_error(&json!({ "error": error })));
        }
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage);
        }
        let Some(candidate) = chunk.candidates.and_then(|c| c.into_iter().next()) else {
            if let Some(feedback) = chunk.prompt_feedback
                && let Some(reason) = feedback.block_reason
            {
                self.done = true;
                return Err(blocked_prompt(&reason, feedback.block_reason_message));
            }
            return Ok(());
        };
        let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
        for part in parts {
            if let Some(call) = part.function_call {
                let id = self.call_id(call.id);
                let arguments = match call.args {
                    None | Some(Value::Null) => String::new(),
                    Some(args) => args.to_string(),
                };
                out.push_back(ModelEvent::ToolCall {
                    call: ToolCall::from_raw(id, call.name.unwrap_or_default(), arguments)
                        .with_signature(part.thought_signature),
                });
            } else if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                out.push_back(if part.thought == Some(true) {
                    ModelEvent::ReasoningDelta { text }
                } else {
                    ModelEvent::TextDelta { text }
                });
            }
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.finish = Some(reason);
            self.finish_message = candidate.finish_message;
        }
        Ok(())
    }

    /// The id Gemini gave, unless it is missing or already used in this reply; otherwise a
    /// fresh random one (ids must stay unique across the turns of a conversation).
    fn call_id(&mut self, given: Option<String>) -> String {
        let id = match given.filter(|id| !id.is_empty() && !self.call_ids.contains(id)) {
            Some(id) => id,
            None => format!("call_{:016x}", rand::random::<u64>()),
        };
        self.call_ids.push(id.clone());
        id
    }

    fn finish_stream(&mut self, reason: &str, out: &mut VecDeque<ModelEvent>) {
        if let Some(usage) = self.usage.as_ref().and_then(gemini_usage) {
            out.push_back(ModelEvent::Usage { usage });
        }
        let reason = match stop_reason(reason) {
            StopReason::EndTurn if !self.call_ids.is_empty() => StopReason::ToolUse,
            StopReason::Other(name) => match self.finish_message.take() {
                Some(message) => StopReason::Other(format!("{name}: {message}")),
                None => StopReason::Other(name),
            },
            reason => reason,
        };
        out.push_back(ModelEvent::Stop { reason });
        self.done = true;
    }
}

/// The error for a prompt Gemini refused to answer at all.
fn blocked_prompt(reason: &str, message: Option<String>) -> ModelError {
    let detail = message.map(|m| format!(": {m}")).unwrap_or_default();
    ModelError::new(
        ErrorKind::BadRequest,
        format!(
            "Gemini blocked the prompt ({reason}){detail}; sending it again will not help, rephrase it or use another model"
        ),
    )
}

impl StreamDecoder for GeminiDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if self.done || event.data.trim().is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(&event.data).map_err(|e| malformed(event, &e))?;
        self.on_chunk(chunk, out)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn on_eof(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        match self.finish.take() {
            Some(reason) => {
                self.finish_stream(&reason, out);
                Ok(())
            }
            None => Err(truncated("chunk with a finishReason")),
        }
    }

    /// A `GenerateContentResponse` object (`generateContent`), or the JSON array of them
    /// that `streamGenerateContent` answers without `alt=sse`. A complete reply without a
    /// `finishReason` counts as finished.
    fn on_complete(
        &mut self,
        body: &[u8],
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let values = if body.trim_ascii_start().starts_with(b"[") {
            serde_json::from_slice::<Vec<Value>>(body).map_err(|e| {
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!(
                        "the endpoint answered a JSON array instead of an event stream, and it does not parse ({e}): {:?}",
                        clip_chars(
                            &redact(&String::from_utf8_lossy(&body[..body.len().min(1_200)]), None),
                            300
                        )
                    ),
                )
            })?
        } else {
            vec![complete_object(body)?]
        };
        for value in values {
            let chunk: Chunk = serde_json::from_value(value).map_err(|e| {
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!("the endpoint answered JSON that is not a Gemini response: {e}"),
                )
            })?;
            self.on_chunk(chunk, out).map_err(|mut err| {
                err.message = err.message.replacen("mid-stream", "in a JSON reply", 1);
                err
            })?;
        }
        let reason = self.finish.take().unwrap_or_else(|| "STOP".to_string());
        self.finish_stream(&reason, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(lines: &[&str]) -> (Vec<ModelEvent>, Result<(), ModelError>) {
        let mut decoder = GeminiDecoder::new();
        let mut out = VecDeque::new();
        for data in lines {
            let event = SseEvent {
                data: (*data).into(),
                ..SseEvent::default()
            };
            if let Err(err) = decoder.on_event(&event, &mut out) {
                return (out.into(), Err(err));
            }
        }
        let end = decoder.on_eof(&mut out);
        (out.into(), end)
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        assert_eq!(stop_reason("STOP"), StopReason::EndTurn);
        assert_eq!(stop_reason("MAX_TOKENS"), StopReason::MaxTokens);
        assert_eq!(stop_reason("SAFETY"), StopReason::ContentFilter);
        assert_eq!(stop_reason("RECITATION"), StopReason::ContentFilter);
        assert_eq!(
            stop_reason("MALFORMED_FUNCTION_CALL"),
            StopReason::Other("MALFORMED_FUNCTION_CALL".into())
        );
    }

    #[test]
    fn calls_get_unique_ids_and_the_stop_says_tool_use() {
        let (events, end) = decode(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"a","args":{"x":1}}},{"functionCall":{"name":"b"}}]},"finishReason":"STOP","index":0}]}"#,
        ]);
        end.unwrap();
        let ids: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                ModelEvent::ToolCall { call } => Some(call.id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1]);
        assert!(
            ids.iter()
                .all(|id| id.starts_with("call_") && id.len() == 21)
        );
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Stop {
                reason: StopReason::ToolUse
            })
        );
    }

    #[test]
    fn a_body_without_finish_reason_is_cut_and_a_blocked_prompt_is_an_error() {
        let (_, end) = decode(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hal"}]},"index":0}]}"#,
        ]);
        assert_eq!(end.unwrap_err().kind, ErrorKind::InvalidResponse);
        let (_, end) = decode(&[
            r#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7}}"#,
        ]);
        let err = end.unwrap_err();
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(
            err.message.contains("blocked the prompt (SAFETY)"),
            "{}",
            err.message
        );
    }

    #[test]
    fn other_finish_reasons_carry_their_message() {
        let (events, end) = decode(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"x"}]},"finishReason":"MALFORMED_FUNCTION_CALL","finishMessage":"Malformed function call: print(","index":0}]}"#,
        ]);
        end.unwrap();
        assert_eq!(
            events.last(),
            Some(&ModelEvent::Stop {
                reason: StopReason::Other(
                    "MALFORMED_FUNCTION_CALL: Malformed function call: print(".into()
                )
            })
        );
    }
}
