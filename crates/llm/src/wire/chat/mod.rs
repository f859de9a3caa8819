//! OpenAI Chat Completions (`POST {base}/chat/completions`, `stream: true`), spoken by OpenAI
//! and every compatible server (Ollama, LM Studio, vLLM, llama.cpp, OpenRouter).

mod body;

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::{Value, json};

pub use body::{BodyOptions, request_body};
pub(crate) use body::{arguments_object, raw_arguments, tool_output};

use super::{
    LenientText, PartialCall, StreamDecoder, complete_object, malformed, pending_argument_bytes,
    take_arguments, take_string, truncated,
};
use crate::classify::classify_stream_error;
use crate::sse::SseEvent;
use crate::usage::openai_usage;
use crate::{ModelError, ModelEvent, StopReason};

/// Maps a Chat Completions `finish_reason`.
pub fn stop_reason(finish_reason: &str) -> StopReason {
    match finish_reason {
        "stop" | "end_turn" | "eos" => StopReason::EndTurn,
        "tool_calls" | "function_call" | "tool_use" => StopReason::ToolUse,
        "length" | "max_tokens" => StopReason::MaxTokens,
        "content_filter" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<LenientText<'a>>,
    #[serde(default, borrow)]
    reasoning_content: Option<LenientText<'a>>,
    #[serde(default, borrow)]
    reasoning: Option<LenientText<'a>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// Chat Completions stream decoder: text, reasoning (`reasoning_content` or `reasoning`),
/// tool calls assembled by `index` across chunks (several in parallel), the usage chunk, and
/// `[DONE]`. Tool calls are emitted when the `finish_reason` arrives; usage and `Stop` at
/// `[DONE]`. A stream that closes after a `finish_reason` but without `[DONE]` is accepted;
/// one that closes before any `finish_reason` is an error.
#[derive(Debug, Default)]
pub struct ChatDecoder {
    calls: Vec<PartialCall>,
    finish: Option<String>,
    usage: Option<braincode_protocol::Usage>,
    done: bool,
}

impl ChatDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn flush_calls(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.calls.sort_by_key(|c| c.index);
        for call in &mut self.calls {
            if let Some(event) = call.finish() {
                out.push_back(event);
            }
        }
    }

    fn finish_stream(&mut self, out: &mut VecDeque<ModelEvent>) {
        self.flush_calls(out);
        if let Some(usage) = self.usage.take() {
            out.push_back(ModelEvent::Usage { usage });
        }
        let mut reason = self
            .finish
            .as_deref()
            .map_or(StopReason::EndTurn, stop_reason);
        if reason == StopReason::EndTurn && !self.calls.is_empty() {
            reason = StopReason::ToolUse;
        }
        out.push_back(ModelEvent::Stop { reason });
        self.done = true;
    }

    fn on_tool_delta(&mut self, delta: ToolCallDelta<'_>) {
        let index = match delta.index {
            Some(index) => index,
            // Servers that omit `index`: a new id starts a new call, otherwise the text
            // continues the last one.
            None => match (&delta.id, self.calls.last()) {
                (Some(id), Some(last)) if last.id != id.as_ref() => self.calls.len(),
                (_, Some(last)) => last.index,
                (_, None) => 0,
            },
        };
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position];
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id.into_owned();
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                call.name = name.into_owned();
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }
}

impl StreamDecoder for ChatDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish_stream(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|e| malformed(event, &e))?;
        if let Some(error) = chunk.error {
            return Err(classify_stream_error(&json!({ "error": error })));
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                // Servers send one of the two names; if both come, they carry the same text.
                let reasoning = delta
                    .reasoning_content
                    .and_then(LenientText::into_text)
                    .or_else(|| delta.reasoning.and_then(LenientText::into_text));
                if let Some(text) = reasoning {
                    out.push_back(ModelEvent::ReasoningDelta { text });
                }
                if let Some(text) = delta.content.and_then(LenientText::into_text) {
                    out.push_back(ModelEvent::TextDelta { text });
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.on_tool_delta(call);
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish = Some(reason.into_owned());
                self.flush_calls(out);
            }
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(openai_usage) {
            self.usage = Some(usage);
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn on_eof(&mut self, out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            return Ok(());
        }
        if self.finish.is_some() {
            self.finish_stream(out);
            return Ok(());
        }
        Err(truncated("finish_reason or [DONE]"))
    }

    fn pending_bytes(&self) -> usize {
        pending_argument_bytes(&self.calls)
    }

    /// A `chat.completion` object: per choice, `message.reasoning_content` (or `reasoning`),
    /// `message.content` (a string, or an array of text parts), `message.tool_calls` (with
    /// arguments as a string or an object), then `usage` and the `finish_reason`.
    fn on_complete(
        &mut self,
        body: &[u8],
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let mut value = complete_object(body)?;
        let mut choices = super::take_array(&mut value, "choices")?;
        for choice in choices.iter_mut() {
            if let Some(reason) = choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .filter(|r| !r.is_empty())
            {
                self.finish = Some(reason.to_string());
            }
            let Some(message) = choice.get_mut("message") else {
                continue;
            };
            let reasoning = take_string(message, "reasoning_content")
                .or_else(|| take_string(message, "reasoning"));
            if let Some(text) = reasoning {
                out.push_back(ModelEvent::ReasoningDelta { text });
            }
            match message.get_mut("content").map(Value::take) {
                Some(Value::String(text)) if !text.is_empty() => {
                    out.push_back(ModelEvent::TextDelta { text });
                }
                Some(Value::Array(parts)) => {
                    for mut part in parts {
                        if let Some(text) = take_string(&mut part, "text") {
                            out.push_back(ModelEvent::TextDelta { text });
                        }
                    }
                }
                _ => {}
            }
            if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
                for call in calls.iter_mut() {
                    let index = self.calls.len();
                    let mut function = call
                        .get_mut("function")
                        .map(Value::take)
                        .unwrap_or_default();
                    self.calls.push(PartialCall {
                        index,
                        id: take_string(call, "id").unwrap_or_default(),
                        name: take_string(&mut function, "name").unwrap_or_default(),
                        arguments: take_arguments(&mut function, "arguments"),
                        ..PartialCall::default()
                    });
                }
            }
        }
        if let Some(usage) = value.get("usage").and_then(openai_usage) {
            self.usage = Some(usage);
        }
        self.finish_stream(out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut ChatDecoder, lines: &[&str]) -> Vec<ModelEvent> {
        let mut out = VecDeque::new();
        for line in lines {
            let event = SseEvent {
                data: (*line).to_string(),
                ..SseEvent::default()
            };
            decoder.on_event(&event, &mut out).unwrap();
        }
        out.into_iter().collect()
    }

    #[test]
    fn assembles_parallel_tool_calls_by_index() {
        let mut decoder = ChatDecoder::new();
        let events = feed(
            &mut decoder,
            &[
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"list_files","arguments":"{\"di"}}]},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\": \"a.rs\"}"}}]},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"r\":\".\"}"}}]},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#,
                "[DONE]",
            ],
        );
        assert_eq!(events.len(), 4);
        let ModelEvent::ToolCall { call } = &events[0] else {
            unreachable!("{events:?}")
        };
        assert_eq!(
            (call.id.as_str(), call.name.as_str()),
            ("call_a", "read_file")
        );
        assert_eq!(call.arguments, json!({"path": "a.rs"}));
        let ModelEvent::ToolCall { call } = &events[1] else {
            unreachable!("{events:?}")
        };
        assert_eq!(call.arguments, json!({"dir": "."}));
        assert!(matches!(events[2], ModelEvent::Usage { .. }));
        assert_eq!(
            events[3],
            ModelEvent::Stop {
                reason: StopReason::ToolUse
            }
        );
        assert!(decoder.is_done());
    }

    #[test]
    fn reasoning_fields_and_lenient_shapes() {
        let mut decoder = ChatDecoder::new();
        let events = feed(
            &mut decoder,
            &[
                r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":"more","reasoning_details":[{"type":"x"}]}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":"same","reasoning_content":"same"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning":{"unexpected":"object"},"content":"hi"}}]}"#,
                r#"{"choices":null,"usage":null}"#,
            ],
        );
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta {
                    text: "think".into()
                },
                ModelEvent::ReasoningDelta {
                    text: "more".into()
                },
                ModelEvent::ReasoningDelta {
                    text: "same".into()
                },
                ModelEvent::TextDelta { text: "hi".into() },
            ]
        );
    }

    #[test]
    fn eof_rules() {
        let mut cut = ChatDecoder::new();
        feed(&mut cut, &[r#"{"choices":[{"delta":{"content":"hal"}}]}"#]);
        let err = cut.on_eof(&mut VecDeque::new()).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::InvalidResponse);

        let mut finished = ChatDecoder::new();
        feed(
            &mut finished,
            &[r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]}"#],
        );
        let mut out = VecDeque::new();
        finished.on_eof(&mut out).unwrap();
        assert_eq!(
            out.pop_back(),
            Some(ModelEvent::Stop {
                reason: StopReason::MaxTokens
            })
        );
    }

    #[test]
    fn error_chunks_and_malformed_lines() {
        let mut decoder = ChatDecoder::new();
        let event = SseEvent {
            data: r#"{"error":{"message":"Rate limit exceeded","code":429}}"#.into(),
            ..SseEvent::default()
        };
        let err = decoder.on_event(&event, &mut VecDeque::new()).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::RateLimit);
        let bad = SseEvent {
            data: "{\"choices\": [oops".into(),
            ..SseEvent::default()
        };
        let err = decoder.on_event(&bad, &mut VecDeque::new()).unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::InvalidResponse);
        assert!(
            err.message.contains("{\\\"choices\\\": [oops"),
            "{}",
            err.message
        );
    }
}
