//! OpenAI Responses API (`POST {base}/responses`, `stream: true`): typed semantic events.

use std::collections::VecDeque;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::chat::{raw_arguments, tool_output};
use super::{
    LenientText, PartialCall, StreamDecoder, complete_object, is_strict_compatible, malformed,
    pending_argument_bytes, take_arguments, take_string, truncated,
};
use crate::classify::classify_stream_error;
use crate::sse::SseEvent;
use crate::thinking::openai_reasoning_effort;
use crate::usage::openai_usage;
use crate::wire::chat::BodyOptions;
use crate::{ChatMessage, ChatRequest, ContentPart, ModelError, ModelEvent, StopReason};

/// The JSON body of a streaming Responses request. `store: false` keeps nothing on the
/// provider side; the system prompt goes to `instructions`.
pub fn request_body(request: &ChatRequest, model: &str, options: BodyOptions) -> Value {
    let mut input = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        match message {
            ChatMessage::User { content } => {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
                        ContentPart::Image { mime_type, data } => json!({"type": "input_image",
                            "image_url": format!("data:{mime_type};base64,{data}")}),
                    })
                    .collect();
                input.push(json!({"role": "user", "content": parts}));
            }
            ChatMessage::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    input.push(json!({"role": "assistant", "content": text}));
                }
                for call in tool_calls {
                    input.push(json!({"type": "function_call", "call_id": call.id,
                        "name": call.name, "arguments": raw_arguments(call)}));
                }
            }
            ChatMessage::Tool {
                call_id,
                content,
                is_error,
                ..
            } => input.push(json!({"type": "function_call_output", "call_id": call_id,
                "output": tool_output(content, *is_error)})),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("input".into(), Value::Array(input));
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        body.insert("instructions".into(), json!(system));
    }
    body.insert("stream".into(), json!(true));
    body.insert("store".into(), json!(false));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.parameters})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_tokens.or(options.default_max_tokens) {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        body.insert(
            "temperature".into(),
            crate::wire::temperature_json(temperature),
        );
    }
    if let Some(effort) = openai_reasoning_effort(request.thinking, options.official) {
        body.insert(
            "reasoning".into(),
            json!({"effort": effort, "summary": "auto"}),
        );
    }
    if let Some(key) = options.cache_key(request) {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if let Some(schema) = &request.response_schema {
        body.insert(
            "text".into(),
            json!({"format": {"type": "json_schema", "name": schema.name,
                "schema": schema.schema, "strict": is_strict_compatible(&schema.schema)}}),
        );
    }
    Value::Object(body)
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default, borrow)]
    delta: Option<LenientText<'a>>,
    #[serde(default)]
    item: Option<Item>,
    #[serde(default)]
    item_id: Option<String>,
    #[serde(default)]
    output_index: Option<usize>,
    #[serde(default)]
    summary_index: Option<usize>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    response: Option<Value>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Responses stream decoder.
///
/// Text from `response.output_text.delta`; reasoning from
/// `response.reasoning_summary_text.delta` and `response.reasoning_text.delta` (summary parts
/// separated by a blank line); function calls registered by `response.output_item.added`,
/// filled by `response.function_call_arguments.delta` and emitted at `.done` (or at
/// `response.output_item.done`); `response.completed` / `response.incomplete` end the stream
/// with usage; `response.failed` and `error` are classified errors.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    calls: Vec<PartialCall>,
    refused: bool,
    done: bool,
}

impl ResponsesDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn call_mut(
        &mut self,
        item_id: Option<&str>,
        output_index: Option<usize>,
    ) -> Option<&mut PartialCall> {
        let position = self.calls.iter().position(|c| {
            item_id.is_some_and(|id| c.key == id)
                || (item_id.is_none() && output_index.is_some_and(|i| c.index == i))
        })?;
        self.calls.get_mut(position)
    }

    fn finish(
        &mut self,
        response: Option<&Value>,
        incomplete: bool,
        out: &mut VecDeque<ModelEvent>,
    ) {
        for call in &mut self.calls {
            if let Some(event) = call.finish() {
                out.push_back(event);
            }
        }
        if let Some(usage) = response.and_then(|r| r.get("usage")).and_then(openai_usage) {
            out.push_back(ModelEvent::Usage { usage });
        }
        let reason = if incomplete {
            match response
                .and_then(|r| r.pointer("/incomplete_details/reason"))
                .and_then(Value::as_str)
            {
                Some("content_filter") => StopReason::ContentFilter,
                Some("max_output_tokens") | None => StopReason::MaxTokens,
                Some(other) => StopReason::Other(other.to_string()),
            }
        } else if !self.calls.is_empty() {
            StopReason::ToolUse
        } else if self.refused {
            StopReason::ContentFilter
        } else {
            StopReason::EndTurn
        };
        out.push_back(ModelEvent::Stop { reason });
        self.done = true;
    }
}

impl StreamDecoder for ResponsesDecoder {
    fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        if self.done || event.data.trim().is_empty() {
            return Ok(());
        }
        let parsed: Event<'_> =
            serde_json::from_str(&event.data).map_err(|e| malformed(event, &e))?;
        let kind = parsed.kind.as_deref().unwrap_or(event.event.as_str());
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                if kind == "response.refusal.delta" {
                    self.refused = true;
                }
                if let Some(text) = parsed.delta.and_then(LenientText::into_text) {
                    out.push_back(ModelEvent::TextDelta { text });
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(text) = parsed.delta.and_then(LenientText::into_text) {
                    out.push_back(ModelEvent::ReasoningDelta { text });
                }
            }
            "response.reasoning_summary_part.added" if parsed.summary_index.unwrap_or(0) > 0 => {
                out.push_back(ModelEvent::ReasoningDelta {
                    text: "\n\n".to_string(),
                });
            }
            "response.output_item.added" => {
                if let Some(item) = parsed.item.filter(|i| i.kind == "function_call") {
                    self.calls.push(PartialCall {
                        key: item.id.clone().unwrap_or_default(),
                        index: parsed.output_index.unwrap_or(self.calls.len()),
                        id: item.call_id.or(item.id).unwrap_or_default(),
                        name: item.name.unwrap_or_default(),
                        arguments: item.arguments.unwrap_or_default(),
                        emitted: false,
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                if let (Some(call), Some(text)) = (
                    self.call_mut(parsed.item_id.as_deref(), parsed.output_index),
                    parsed.delta.as_ref().and_then(LenientText::as_str),
                ) {
                    call.arguments.push_str(text);
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(call) = self.call_mut(parsed.item_id.as_deref(), parsed.output_index) {
                    if let Some(arguments) = parsed.arguments {
                        call.arguments = arguments;
                    }
                    if let Some(event) = call.finish() {
                        out.push_back(event);
                    }
                }
            }
            "response.output_item.done" => {
                if let Some(item) = parsed.item.filter(|i| i.kind == "function_call") {
                    let key = item.id.clone();
                    match self.call_mut(key.as_deref(), parsed.output_index) {
                        Some(call) => {
                            if let Some(arguments) = item.arguments.filter(|_| !call.emitted) {
                                call.arguments = arguments;
                            }
                            if let Some(event) = call.finish() {
                                out.push_back(event);
                            }
                        }
                        None => {
                            let mut call = PartialCall {
                                key: key.unwrap_or_default(),
                                index: parsed.output_index.unwrap_or(self.calls.len()),
                                id: item.call_id.or(item.id).unwrap_or_default(),
                                name: item.name.unwrap_or_default(),
                                arguments: item.arguments.unwrap_or_default(),
                                emitted: false,
                            };
                            out.extend(call.finish());
                            self.calls.push(call);
                        }
                    }
                }
            }
            "response.completed" => self.finish(parsed.response.as_ref(), false, out),
            "response.incomplete" => self.finish(parsed.response.as_ref(), true, out),
            "response.failed" => {
                let error = parsed
                    .response
                    .as_ref()
                    .and_then(|r| r.get("error"))
                    .filter(|e| !e.is_null())
                    .cloned()
                    .unwrap_or_else(|| json!({"message": "the response failed without details"}));
                self.done = true;
                return Err(classify_stream_error(&json!({ "error": error })));
            }
            "error" => {
                self.done = true;
                let payload: Value =
                    serde_json::from_str(&event.data).map_err(|e| malformed(event, &e))?;
                return Err(classify_stream_error(&payload));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn on_eof(&mut self, _out: &mut VecDeque<ModelEvent>) -> Result<(), ModelError> {
        if self.done {
            Ok(())
        } else {
            Err(truncated("response.completed event"))
        }
    }

    fn pending_bytes(&self) -> usize {
        pending_argument_bytes(&self.calls)
    }

    /// A `response` object: `output` items in order (`reasoning` summaries or reasoning
    /// text, `message` output text and refusals, `function_call`s), then usage and the stop
    /// reason from `status` (`incomplete` → its `incomplete_details.reason`). A `failed`
    /// response is a classified error.
    fn on_complete(
        &mut self,
        body: &[u8],
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let mut value = complete_object(body)?;
        let status = value
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if status == "failed" {
            let error = value
                .get("error")
                .filter(|e| !e.is_null())
                .cloned()
                .unwrap_or_else(|| json!({"message": "the response failed without details"}));
            return Err(classify_stream_error(&json!({ "error": error })));
        }
        let mut items = super::take_array(&mut value, "output")?;
        for item in &mut items {
            let kind = super::item_type(item);
            match kind.as_str() {
                "reasoning" => {
                    let mut first = true;
                    for key in ["summary", "content"] {
                        let Some(parts) = item.get_mut(key).and_then(Value::as_array_mut) else {
                            continue;
                        };
                        for part in parts.iter_mut() {
                            if let Some(text) = take_string(part, "text") {
                                if !first {
                                    out.push_back(ModelEvent::ReasoningDelta {
                                        text: "\n\n".to_string(),
                                    });
                                }
                                first = false;
                                out.push_back(ModelEvent::ReasoningDelta { text });
                            }
                        }
                        if !first {
                            // A summary was given; the raw reasoning would repeat it.
                            break;
                        }
                    }
                }
                "message" => {
                    let Some(parts) = item.get_mut("content").and_then(Value::as_array_mut) else {
                        continue;
                    };
                    for part in parts.iter_mut() {
                        let text = match part.get("type").and_then(Value::as_str) {
                            Some("refusal") => {
                                self.refused = true;
                                take_string(part, "refusal")
                            }
                            _ => take_string(part, "text"),
                        };
                        if let Some(text) = text {
                            out.push_back(ModelEvent::TextDelta { text });
                        }
                    }
                }
                "function_call" => {
                    let key = take_string(item, "id").unwrap_or_default();
                    let id = take_string(item, "call_id").unwrap_or_else(|| key.clone());
                    self.calls.push(PartialCall {
                        key,
                        index: self.calls.len(),
                        id,
                        name: take_string(item, "name").unwrap_or_default(),
                        arguments: take_arguments(item, "arguments"),
                        emitted: false,
                    });
                }
                _ => {}
            }
        }
        self.finish(Some(&value), status == "incomplete", out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, ResponseSchema, ToolCall, ToolSpec};
    use braincode_protocol::ThinkingLevel;

    #[test]
    fn body_uses_input_items_instructions_and_text_format() {
        let request = ChatRequest {
            system: Some("sys".into()),
            messages: vec![
                ChatMessage::user_text("hi"),
                ChatMessage::Assistant {
                    text: "calling".into(),
                    tool_calls: vec![ToolCall::from_raw("call_1", "grep", "{}")],
                },
                ChatMessage::Tool {
                    call_id: "call_1".into(),
                    name: "grep".into(),
                    content: "found".into(),
                    is_error: false,
                },
            ],
            tools: vec![ToolSpec {
                name: "grep".into(),
                description: "search".into(),
                parameters: json!({"type": "object"}),
            }],
            thinking: ThinkingLevel::Xhigh,
            max_tokens: Some(64),
            temperature: None,
            response_schema: Some(ResponseSchema {
                name: "r".into(),
                schema: json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            }),
            cache_key: None,
        };
        let body = request_body(&request, "gpt-5", BodyOptions::default());
        assert_eq!(body["instructions"], "sys");
        assert_eq!(
            body["input"][0]["content"][0],
            json!({"type": "input_text", "text": "hi"})
        );
        assert_eq!(
            body["input"][1],
            json!({"role": "assistant", "content": "calling"})
        );
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call", "call_id": "call_1", "name": "grep", "arguments": "{}"})
        );
        assert_eq!(
            body["input"][3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "found"})
        );
        assert_eq!(body["tools"][0]["name"], "grep");
        assert_eq!(body["max_output_tokens"], 64);
        assert_eq!(body["reasoning"]["effort"], "high");
        assert_eq!(body["text"]["format"]["type"], "json_schema");
        assert_eq!(body["text"]["format"]["strict"], true);
    }

    #[test]
    fn failed_and_error_events_are_classified() {
        let mut decoder = ResponsesDecoder::new();
        let failed = SseEvent {
            event: "response.failed".into(),
            data: r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed"}}}"#.into(),
            ..SseEvent::default()
        };
        let err = decoder.on_event(&failed, &mut VecDeque::new()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::Server);
        assert!(err.message.contains("The model failed"));

        let mut decoder = ResponsesDecoder::new();
        let error = SseEvent {
            data: r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":null,"sequence_number":2}"#.into(),
            ..SseEvent::default()
        };
        let err = decoder.on_event(&error, &mut VecDeque::new()).unwrap_err();
        assert_eq!(err.kind, ErrorKind::ContextTooLong);
    }

    #[test]
    fn incomplete_maps_to_max_tokens() {
        let mut decoder = ResponsesDecoder::new();
        let mut out = VecDeque::new();
        let event = SseEvent {
            data: r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":16,"total_tokens":19}}}"#.into(),
            ..SseEvent::default()
        };
        decoder.on_event(&event, &mut out).unwrap();
        assert_eq!(
            out.pop_back(),
            Some(ModelEvent::Stop {
                reason: StopReason::MaxTokens
            })
        );
        assert!(decoder.is_done());
    }
}
