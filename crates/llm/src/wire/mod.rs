//! The wire protocols (OpenAI Chat Completions, OpenAI Responses — also behind Azure —,
//! Anthropic Messages, Google Gemini): request bodies and stream decoders.
//!
//! A [`StreamDecoder`] turns one provider's server-sent events into [`ModelEvent`]s. Decoders
//! are pure (no I/O), so they are unit-tested and benchmarked on recorded bytes. Each one also
//! decodes the complete JSON object a server sends when it ignores `stream: true`
//! ([`StreamDecoder::on_complete`]) into the events the stream would have produced.
//!
//! Decoders append argument pieces in place and move strings into events; they never copy an
//! accumulated reply.

pub mod anthropic;
pub mod chat;
pub mod gemini;
pub mod responses;

use std::borrow::Cow;
use std::collections::VecDeque;

use braincode_protocol::ModelApi;
use serde::Deserialize;
use serde_json::Value;

use crate::classify::clip_chars;
use crate::sse::SseEvent;
use crate::{ErrorKind, ModelError, ModelEvent, ToolCall};

/// Decodes one provider's event stream into model events.
pub trait StreamDecoder: Send {
    /// Decodes one event, appending the model events it completes to `out`.
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError>;

    /// Whether the terminal event was seen (`[DONE]`, `message_stop`, `response.completed`).
    fn is_done(&self) -> bool;

    /// The byte stream ended. Appends the final events when the reply is complete without an
    /// explicit terminal event, or fails when the reply was cut short.
    fn on_eof(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError>;

    /// Bytes of tool-call arguments assembled but not emitted yet (counted against the reply
    /// cap before the call is complete).
    fn pending_bytes(&self) -> usize {
        0
    }

    /// Decodes a complete, non-streamed reply object (a server that answered
    /// `application/json` to a streaming request) into the events its stream would have
    /// produced, ending with `Stop`. An error object is a classified error.
    fn on_complete(
        &mut self,
        body: &[u8],
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let _ = (body, out);
        Err(ModelError::new(
            ErrorKind::InvalidResponse,
            "this protocol has no decoder for a non-streamed JSON reply",
        ))
    }
}

/// A fresh decoder for `api` (`None` for the embedded model, which does not stream SSE).
pub fn decoder_for(api: ModelApi) -> Option<Box<dyn StreamDecoder>> {
    match api {
        ModelApi::OpenaiCompletions => Some(Box::new(chat::ChatDecoder::new())),
        ModelApi::OpenaiResponses | ModelApi::AzureOpenaiResponses => {
            Some(Box::new(responses::ResponsesDecoder::new()))
        }
        ModelApi::AnthropicMessages => Some(Box::new(anthropic::AnthropicDecoder::new())),
        ModelApi::GoogleGenerativeAi => Some(Box::new(gemini::GeminiDecoder::new())),
        ModelApi::Local | ModelApi::OpenaiImages => None,
    }
}

/// Longest `data:` excerpt quoted in a malformed-event error.
const QUOTE_LIMIT: usize = 300;

/// The error for a `data:` payload that is not the JSON the protocol promises.
pub(crate) fn malformed(event: &SseEvent, err: &serde_json::Error) -> ModelError {
    let name = if event.event.is_empty() {
        String::new()
    } else {
        format!(" (event {:?})", event.event)
    };
    ModelError::new(
        ErrorKind::InvalidResponse,
        format!(
            "malformed stream event{name}: {err}; data line: {:?}",
            clip_chars(&crate::classify::redact(&event.data, None), QUOTE_LIMIT)
        ),
    )
}

/// The error for a stream that ended before its terminal event.
pub(crate) fn truncated(what: &str) -> ModelError {
    ModelError::new(
        ErrorKind::InvalidResponse,
        format!("the stream ended before the reply was complete (no {what})"),
    )
}

/// Text that some compatible servers send as an object or array instead of a string:
/// accepted and ignored rather than failing the whole reply.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum LenientText<'a> {
    /// The documented shape.
    Text(#[serde(borrow)] Cow<'a, str>),
    /// Anything else.
    Other(serde::de::IgnoredAny),
}

impl LenientText<'_> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            LenientText::Text(text) if !text.is_empty() => Some(text),
            _ => None,
        }
    }

    /// The text, moved out when it was already unescaped into an owned string.
    pub(crate) fn into_text(self) -> Option<String> {
        match self {
            LenientText::Text(text) if !text.is_empty() => Some(text.into_owned()),
            _ => None,
        }
    }
}

/// Parses a complete JSON reply object; an `{"error": …}` object (or Anthropic's
/// `{"type": "error", …}`) is returned as a classified error.
/// Takes the array `key` out of a complete JSON answer, or says that the answer lacks it.
pub(crate) fn take_array(value: &mut Value, key: &str) -> Result<Vec<Value>, ModelError> {
    match value.get_mut(key).and_then(Value::as_array_mut) {
        Some(items) => Ok(std::mem::take(items)),
        None => Err(ModelError::new(
            ErrorKind::InvalidResponse,
            format!(
                "the endpoint answered JSON without a `{key}` array instead of an event stream"
            ),
        )),
    }
}

/// The `type` field of an answer's item (empty when absent).
pub(crate) fn item_type(item: &Value) -> String {
    item.get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn complete_object(body: &[u8]) -> Result<serde_json::Value, ModelError> {
    let value: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(&body[..body.len().min(4 * QUOTE_LIMIT)]);
        ModelError::new(
            ErrorKind::InvalidResponse,
            format!(
                "the endpoint answered JSON instead of an event stream, and it does not parse ({e}): {:?}",
                clip_chars(&crate::classify::redact(&text, None), QUOTE_LIMIT)
            ),
        )
    })?;
    if !value.is_object() {
        return Err(ModelError::new(
            ErrorKind::InvalidResponse,
            format!(
                "the endpoint answered JSON instead of an event stream, and it is not an object: {}",
                clip_chars(&value.to_string(), QUOTE_LIMIT)
            ),
        ));
    }
    let is_error = value.get("error").is_some_and(|e| !e.is_null())
        || value.get("type").and_then(serde_json::Value::as_str) == Some("error");
    if is_error {
        let mut err = crate::classify::classify_stream_error(&value);
        err.message = err.message.replacen("mid-stream", "in a JSON reply", 1);
        return Err(err);
    }
    Ok(value)
}

/// Moves the string at `key` out of `value` (leaving null), if it is a non-empty string.
pub(crate) fn take_string(value: &mut serde_json::Value, key: &str) -> Option<String> {
    match value.get_mut(key).map(serde_json::Value::take) {
        Some(serde_json::Value::String(text)) if !text.is_empty() => Some(text),
        _ => None,
    }
}

/// Tool arguments that arrive as a JSON string (the documented shape) or as an object (some
/// compatible servers): the raw argument text.
pub(crate) fn take_arguments(value: &mut serde_json::Value, key: &str) -> String {
    match value.get_mut(key).map(serde_json::Value::take) {
        Some(serde_json::Value::String(text)) => text,
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The bytes of argument text held by calls not emitted yet.
pub(crate) fn pending_argument_bytes(calls: &[PartialCall]) -> usize {
    calls
        .iter()
        .filter(|c| !c.emitted)
        .map(|c| c.arguments.len() + c.key.len())
        .sum()
}

/// A tool call whose arguments arrive in pieces.
#[derive(Debug, Default, Clone)]
pub(crate) struct PartialCall {
    pub key: String,
    pub index: usize,
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub emitted: bool,
}

impl PartialCall {
    pub(crate) fn finish(&mut self) -> Option<ModelEvent> {
        if self.emitted {
            return None;
        }
        self.emitted = true;
        Some(ModelEvent::ToolCall {
            call: ToolCall::from_raw(
                std::mem::take(&mut self.id),
                std::mem::take(&mut self.name),
                std::mem::take(&mut self.arguments),
            ),
        })
    }
}

/// JSON schemas usable in OpenAI strict mode: every object lists all its properties as
/// required and sets `additionalProperties: false`. Others are sent with `strict: false`
/// so the request is not rejected.
pub fn is_strict_compatible(schema: &serde_json::Value) -> bool {
    use serde_json::Value;
    match schema {
        Value::Object(map) => {
            let is_object =
                map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties");
            if is_object {
                if map.get("additionalProperties") != Some(&Value::Bool(false)) {
                    return false;
                }
                let props = map.get("properties").and_then(Value::as_object);
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(props) = props
                    && props.keys().any(|k| !required.contains(&k.as_str()))
                {
                    return false;
                }
            }
            map.values().all(is_strict_compatible)
        }
        Value::Array(items) => items.iter().all(is_strict_compatible),
        _ => true,
    }
}

/// The instruction used where a protocol has no native structured output (Anthropic, Gemini
/// with tools).
pub(crate) fn schema_instruction(schema: &crate::ResponseSchema) -> String {
    format!(
        "Reply with only one JSON object (no prose, no code fence) named `{}` that matches this JSON Schema:\n{}",
        schema.name, schema.schema
    )
}

/// A temperature as JSON with the digits it was written with: `0.2f32` widened to `f64` is
/// `0.20000000298023224`, which providers accept but logs and users should not have to read.
pub(crate) fn temperature_json(temperature: f32) -> serde_json::Value {
    let shortest: f64 = temperature
        .to_string()
        .parse()
        .unwrap_or(f64::from(temperature));
    serde_json::json!(shortest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_compatibility() {
        let strict = json!({"type":"object","properties":{"a":{"type":"string"},
            "b":{"type":"object","properties":{"c":{"type":"number"}},"required":["c"],"additionalProperties":false}},
            "required":["a","b"],"additionalProperties":false});
        assert!(is_strict_compatible(&strict));
        let loose = json!({"type":"object","properties":{"a":{"type":"string"}},"required":[]});
        assert!(!is_strict_compatible(&loose));
        let nested = json!({"type":"object","properties":{"a":{"type":"object","properties":{}}},"required":["a"],"additionalProperties":false});
        assert!(!is_strict_compatible(&nested));
    }

    #[test]
    fn temperatures_keep_the_digits_they_were_written_with() {
        assert_eq!(super::temperature_json(0.2).to_string(), "0.2");
        assert_eq!(super::temperature_json(1.0).to_string(), "1.0");
        assert_eq!(super::temperature_json(0.0).to_string(), "0.0");
    }
}
