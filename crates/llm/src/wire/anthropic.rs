//! Anthropic Messages (`POST {base}/v1/messages`, `stream: true`).
//!
//! Structured output uses an instruction appended to the system prompt, not a forced tool:
//! forcing a tool is refused when extended thinking is on, and it would stop a worker from
//! calling its real tools in the same turn. Callers already parse JSON replies tolerantly.

use std::borrow::Cow;
use std::collections::VecDeque;

use braincode_protocol::{PromptCache, Usage};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::chat::{BodyOptions, arguments_object};
use super::{
    PartialCall, StreamDecoder, complete_object, malformed, pending_argument_bytes,
    schema_instruction, take_string, truncated,
};
use crate::classify::classify_stream_error;
use crate::sse::SseEvent;
use crate::thinking::anthropic_thinking_budget;
use crate::usage::anthropic_usage;
use crate::{ChatMessage, ChatRequest, ContentPart, ModelError, ModelEvent, StopReason};

/// `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output cap when neither the request nor the catalogue gives one (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The JSON body of a streaming Messages request.
///
/// The system prompt is top-level; consecutive user-side messages (tool results followed by
/// user text) are merged into one user turn as the API expects; empty text blocks are left
/// out (the API rejects them). With thinking on, `temperature` is omitted (the API only
/// accepts the default then).
///
/// With prompt caching on, three `cache_control` marks end the stable parts, in the order
/// the API caches them: the last tool (the tool schemas), the system prompt, and the last
/// block of the conversation (so an agent's next turn reads everything before it from the
/// cache). A prefix shorter than the model's minimum is simply not cached.
pub fn request_body(request: &ChatRequest, model: &str, options: BodyOptions) -> Value {
    let max_tokens = request
        .max_tokens
        .or(options.default_max_tokens)
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let mark = cache_control(options.prompt_cache);
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    for message in &request.messages {
        let (role, blocks) = blocks_for(message);
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    let mut system = request.system.clone().unwrap_or_default();
    if let Some(schema) = &request.response_schema {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&schema_instruction(schema));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(mark) = &mark
        && let Some(Value::Array(blocks)) = messages.last_mut().and_then(|m| m.get_mut("content"))
        && let Some(Value::Object(block)) = blocks.last_mut()
    {
        block.insert("cache_control".into(), mark.clone());
    }
    if !system.is_empty() {
        match &mark {
            Some(mark) => body.insert(
                "system".into(),
                json!([{"type": "text", "text": system, "cache_control": mark}]),
            ),
            None => body.insert("system".into(), json!(system)),
        };
    }
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if let (Some(mark), Some(Value::Object(last))) = (&mark, tools.last_mut()) {
            last.insert("cache_control".into(), mark.clone());
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    let budget = anthropic_thinking_budget(request.thinking, max_tokens);
    if let Some(budget) = budget {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else if let Some(temperature) = request.temperature {
        body.insert(
            "temperature".into(),
            crate::wire::temperature_json(temperature),
        );
    }
    Value::Object(body)
}

/// The `cache_control` mark of a prompt-cache setting (`None`: caching off).
fn cache_control(cache: PromptCache) -> Option<Value> {
    match cache {
        PromptCache::Off => None,
        PromptCache::FiveMinutes => Some(json!({"type": "ephemeral"})),
        PromptCache::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
    }
}

fn blocks_for(message: &ChatMessage) -> (&'static str, Vec<Value>) {
    match message {
        ChatMessage::User { content } => (
            "user",
            content
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text } if text.is_empty() => None,
                    ContentPart::Text { text } => Some(json!({"type": "text", "text": text})),
                    ContentPart::Image { mime_type, data } => Some(json!({"type": "image",
                        "source": {"type": "base64", "media_type": mime_type, "data": data}})),
                })
                .collect(),
        ),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut blocks = Vec::with_capacity(tool_calls.len() + 1);
            if !text.is_empty() {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for call in tool_calls {
                let input = arguments_object(call);
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
            ("assistant", blocks)
        }
        ChatMessage::Tool {
            call_id,
            content,
            is_error,
            ..
        } => {
            let mut block =
                json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
            if *is_error {
                block["is_error"] = json!(true);
            }
            ("user", vec![block])
        }
    }
}

/// Maps an Anthropic `stop_reason`.
pub fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::ContentFilter,
        other => StopReason::Other(other.to_string()),
    }
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    content_block: Option<Block>,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    usage: Option<Value>,
}

/// Messages stream decoder: `message_start` (usage), content blocks (`text_delta`,
/// `thinking_delta`, `tool_use` + `input_json_delta` assembled and emitted at
/// `content_block_stop`), `message_delta` (stop reason, cumulative usage), `message_stop`,
/// `ping`, and `error` events.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    calls: Vec<PartialCall>,
    start_usage: Option<Value>,
    delta_usage: Option<Value>,
    stop: Option<String>,
    done: bool,
}

impl AnthropicDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn usage(&self) -> Option<Usage> {
        anthropic_usage(self.start_usage.as_ref(), self.delta_usage.as_ref())
    }
}

impl StreamDecoder for AnthropicDecoder {
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
        match parsed.kind.as_ref() {
            "message_start" => {
                self.start_usage = parsed.message.and_then(|m| m.usage);
            }
            "content_block_start" => {
                let Some(block) = parsed.content_block else {
                    return Ok(());
                };
                match block.kind.as_str() {
                    "tool_use" | "server_tool_use" => {
                        // `input` starts as `{}` and is then streamed; keep a non-empty
                        // initial object only when no deltas follow (set at stop).
                        let initial = block
                            .input
                            .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                            .map(|v| v.to_string())
                            .unwrap_or_default();
                        self.calls.push(PartialCall {
                            key: initial,
                            index: parsed.index.unwrap_or(self.calls.len()),
                            id: block.id.unwrap_or_default(),
                            name: block.name.unwrap_or_default(),
                            arguments: String::new(),
                            emitted: false,
                        });
                    }
                    "text" => {
                        if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                            out.push_back(ModelEvent::TextDelta { text });
                        }
                    }
                    "thinking" => {
                        if let Some(text) = block.thinking.filter(|t| !t.is_empty()) {
                            out.push_back(ModelEvent::ReasoningDelta { text });
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let Some(delta) = parsed.delta else {
                    return Ok(());
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => {
                        if let Some(text) = delta.text.filter(|t| !t.is_empty()) {
                            out.push_back(ModelEvent::TextDelta {
                                text: text.into_owned(),
                            });
                        }
                    }
                    Some("thinking_delta") => {
                        if let Some(text) = delta.thinking.filter(|t| !t.is_empty()) {
                            out.push_back(ModelEvent::ReasoningDelta {
                                text: text.into_owned(),
                            });
                        }
                    }
                    Some("input_json_delta") => {
                        let index = parsed.index;
                        if let (Some(call), Some(json)) = (
                            self.calls
                                .iter_mut()
                                .find(|c| Some(c.index) == index && !c.emitted),
                            delta.partial_json,
                        ) {
                            call.arguments.push_str(&json);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = parsed.index;
                if let Some(call) = self
                    .calls
                    .iter_mut()
                    .find(|c| Some(c.index) == index && !c.emitted)
                {
                    if call.arguments.trim().is_empty() {
                        call.arguments = std::mem::take(&mut call.key);
                    }
                    out.extend(call.finish());
                }
            }
            "message_delta" => {
                if let Some(reason) = parsed.delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(reason);
                }
                if parsed.usage.is_some() {
                    self.delta_usage = parsed.usage;
                }
            }
            "message_stop" => {
                for call in &mut self.calls {
                    out.extend(call.finish());
                }
                if let Some(usage) = self.usage() {
                    out.push_back(ModelEvent::Usage { usage });
                }
                let reason = match self.stop.as_deref() {
                    Some(reason) => stop_reason(reason),
                    None if !self.calls.is_empty() => StopReason::ToolUse,
                    None => StopReason::EndTurn,
                };
                out.push_back(ModelEvent::Stop { reason });
                self.done = true;
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
            Err(truncated("message_stop event"))
        }
    }

    fn pending_bytes(&self) -> usize {
        pending_argument_bytes(&self.calls)
    }

    /// A `message` object: its `content` blocks in order (`thinking`, `text`, `tool_use` with
    /// its `input` object), then `usage` and the `stop_reason`.
    fn on_complete(
        &mut self,
        body: &[u8],
        out: &mut VecDeque<ModelEvent>,
    ) -> Result<(), ModelError> {
        let mut value = complete_object(body)?;
        let mut blocks = super::take_array(&mut value, "content")?;
        for block in &mut blocks {
            let kind = super::item_type(block);
            match kind.as_str() {
                "text" => {
                    if let Some(text) = take_string(block, "text") {
                        out.push_back(ModelEvent::TextDelta { text });
                    }
                }
                "thinking" => {
                    if let Some(text) = take_string(block, "thinking") {
                        out.push_back(ModelEvent::ReasoningDelta { text });
                    }
                }
                "tool_use" | "server_tool_use" => {
                    let arguments = match block.get("input") {
                        Some(input) if !input.is_null() => input.to_string(),
                        _ => String::new(),
                    };
                    let mut call = PartialCall {
                        index: self.calls.len(),
                        id: take_string(block, "id").unwrap_or_default(),
                        name: take_string(block, "name").unwrap_or_default(),
                        arguments,
                        ..PartialCall::default()
                    };
                    out.extend(call.finish());
                    self.calls.push(call);
                }
                _ => {}
            }
        }
        if let Some(usage) = anthropic_usage(value.get("usage"), None) {
            out.push_back(ModelEvent::Usage { usage });
        }
        let reason = match value.get("stop_reason").and_then(Value::as_str) {
            Some(reason) => stop_reason(reason),
            None if !self.calls.is_empty() => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        out.push_back(ModelEvent::Stop { reason });
        self.done = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
