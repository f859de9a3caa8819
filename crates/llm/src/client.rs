//! The model client contract: a streaming chat request in, typed events out.

use std::pin::Pin;

use async_trait::async_trait;
use braincode_protocol::{ThinkingLevel, Usage};
use futures::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{ErrorKind, ModelError};

/// One piece of user content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime_type: String,
        /// Base64 data (no `data:` prefix).
        data: String,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider call id (every call gets an answer with this id).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Parsed arguments; `Value::Null` when they did not parse (see `argument_error`).
    pub arguments: Value,
    /// The raw argument text, kept for error messages and replay.
    pub raw_arguments: String,
    /// Why the arguments did not parse as a JSON object, if they did not.
    pub argument_error: Option<String>,
    /// An opaque token the provider wants back with this call when the conversation is sent
    /// again (Gemini's `thoughtSignature`, which carries its reasoning across tool turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

impl ToolCall {
    /// Builds a call from raw argument text, parsing it as a JSON object. Empty text means
    /// `{}`.
    pub fn from_raw(
        id: impl Into<String>,
        name: impl Into<String>,
        raw: impl Into<String>,
    ) -> Self {
        let raw = raw.into();
        let trimmed = raw.trim();
        let (arguments, argument_error) = if trimmed.is_empty() {
            (Value::Object(Default::default()), None)
        } else {
            match serde_json::from_str::<Value>(trimmed) {
                Ok(value @ Value::Object(_)) => (value, None),
                Ok(other) => (
                    Value::Null,
                    Some(format!("arguments must be a JSON object, got {other}")),
                ),
                Err(err) => (
                    Value::Null,
                    Some(format!("arguments are not valid JSON: {err}")),
                ),
            }
        };
        Self {
            id: id.into(),
            name: name.into(),
            arguments,
            raw_arguments: raw,
            argument_error,
            signature: None,
        }
    }

    /// The same call with the provider's `signature` (see [`ToolCall::signature`]).
    pub fn with_signature(mut self, signature: Option<String>) -> Self {
        self.signature = signature.filter(|s| !s.is_empty());
        self
    }
}

/// A message in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum ChatMessage {
    /// The user (or the orchestrator speaking as the user).
    User {
        /// Text and images.
        content: Vec<ContentPart>,
    },
    /// A previous assistant turn.
    Assistant {
        /// Answer text.
        text: String,
        /// Tool calls it made.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to one tool call.
    Tool {
        /// The call being answered.
        call_id: String,
        /// Tool name.
        name: String,
        /// Output text.
        content: String,
        /// Whether the tool failed.
        #[serde(default)]
        is_error: bool,
    },
}

impl ChatMessage {
    /// A user message with one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        ChatMessage::User {
            content: vec![ContentPart::Text { text: text.into() }],
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

/// Structured-output request: the reply must be JSON matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// Schema name (`router_decision`, `worker_result`, …).
    pub name: String,
    /// JSON Schema of the reply.
    pub schema: Value,
}

/// One streaming chat request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// System prompt.
    pub system: Option<String>,
    /// Conversation so far.
    pub messages: Vec<ChatMessage>,
    /// Tools offered.
    pub tools: Vec<ToolSpec>,
    /// Reasoning effort.
    pub thinking: ThinkingLevel,
    /// Output token cap.
    pub max_tokens: Option<u32>,
    /// Sampling temperature (`None` = provider default; the local model is greedy then).
    pub temperature: Option<f32>,
    /// Structured output, if wanted.
    pub response_schema: Option<ResponseSchema>,
    /// The provider prompt-cache key of the requests that share this one's stable start
    /// (one per role and project, so every worker of a role hits the same cache): sent as
    /// OpenAI's `prompt_cache_key`; Anthropic caches by content at `cache_control` marks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The answer is complete.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output token cap was hit.
    MaxTokens,
    /// The provider filtered the output.
    ContentFilter,
    /// Anything else the provider reported.
    Other(String),
}

/// One event of a model stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    /// Answer text.
    TextDelta {
        /// New text.
        text: String,
    },
    /// Reasoning text.
    ReasoningDelta {
        /// New text.
        text: String,
    },
    /// A complete tool call (arguments fully assembled).
    ToolCall {
        /// The call.
        call: ToolCall,
    },
    /// Token usage of this call.
    Usage {
        /// Counts.
        usage: Usage,
    },
    /// End of the stream. Always the last event of a successful stream.
    Stop {
        /// Why.
        reason: StopReason,
    },
}

/// A stream of model events. Ends after [`ModelEvent::Stop`] or after the first error.
pub type ModelStream = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send>>;

/// A model endpoint. Implementations must stop promptly when `cancel` fires (yielding an
/// error of kind [`ErrorKind::Cancelled`]) and must never end a stream early without either a
/// `Stop` event or an error.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Starts one streaming chat call.
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError>;
}

/// A whole model reply, collected from a stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// Answer text.
    pub text: String,
    /// Reasoning text.
    pub reasoning: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Usage, if reported.
    pub usage: Option<Usage>,
    /// Why it stopped.
    pub stop: Option<StopReason>,
}

/// Drains a stream into a [`Completion`], calling `on_event` for each event (for live
/// output). A stream that ends without `Stop` is an [`ErrorKind::InvalidResponse`] error:
/// a truncated answer is never returned as if it were whole.
pub async fn collect_stream(
    mut stream: ModelStream,
    mut on_event: impl FnMut(&ModelEvent) + Send,
) -> Result<Completion, ModelError> {
    let mut completion = Completion::default();
    while let Some(event) = stream.next().await {
        let event = event?;
        on_event(&event);
        match event {
            ModelEvent::TextDelta { text } => completion.text.push_str(&text),
            ModelEvent::ReasoningDelta { text } => completion.reasoning.push_str(&text),
            ModelEvent::ToolCall { call } => completion.tool_calls.push(call),
            ModelEvent::Usage { usage } => match completion.usage.as_mut() {
                Some(total) => total.add(&usage),
                None => completion.usage = Some(usage),
            },
            ModelEvent::Stop { reason } => {
                completion.stop = Some(reason);
                return Ok(completion);
            }
        }
    }
    Err(ModelError::new(
        ErrorKind::InvalidResponse,
        "the model stream ended before the reply was complete",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;

    #[test]
    fn tool_call_arguments_parse_or_explain() {
        let ok = ToolCall::from_raw("1", "read_file", r#"{"path":"a"}"#);
        assert_eq!(ok.arguments["path"], "a");
        assert!(ok.argument_error.is_none());
        let empty = ToolCall::from_raw("2", "list_files", "  ");
        assert_eq!(empty.arguments, serde_json::json!({}));
        let bad = ToolCall::from_raw("3", "x", "{\"path\":");
        assert!(bad.argument_error.unwrap().contains("not valid JSON"));
        let array = ToolCall::from_raw("4", "x", "[1]");
        assert!(array.argument_error.unwrap().contains("JSON object"));
    }

    #[tokio::test]
    async fn collect_requires_a_stop_event() {
        let events: Vec<Result<ModelEvent, ModelError>> = vec![Ok(ModelEvent::TextDelta {
            text: "half".into(),
        })];
        let err = collect_stream(Box::pin(stream::iter(events)), |_| {})
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::InvalidResponse);

        let events: Vec<Result<ModelEvent, ModelError>> = vec![
            Ok(ModelEvent::TextDelta { text: "he".into() }),
            Ok(ModelEvent::TextDelta { text: "llo".into() }),
            Ok(ModelEvent::Usage {
                usage: Usage::new(1, 2, 0, 0),
            }),
            Ok(ModelEvent::Stop {
                reason: StopReason::EndTurn,
            }),
        ];
        let mut seen = 0;
        let done = collect_stream(Box::pin(stream::iter(events)), |_| seen += 1)
            .await
            .unwrap();
        assert_eq!(done.text, "hello");
        assert_eq!(done.usage.unwrap().total, 3);
        assert_eq!(seen, 4);
    }
}
