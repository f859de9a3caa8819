//! The JSON body of a streaming Chat Completions request, and the helpers that put earlier
//! tool calls and their outputs back on the wire (shared with the other protocols).

use braincode_protocol::PromptCache;
use serde_json::{Map, Value, json};

use crate::thinking::openai_reasoning_effort;
use crate::wire::is_strict_compatible;
use crate::{ChatMessage, ChatRequest, ContentPart};

/// Facts about the endpoint that change the request body.
#[derive(Debug, Clone, Copy, Default)]
pub struct BodyOptions {
    /// The official OpenAI API (`max_completion_tokens`, `minimal` effort).
    pub official: bool,
    /// Output cap when the request has none (the catalogue's `maxTokens`).
    pub default_max_tokens: Option<u32>,
    /// Provider prompt caching (cache marks on Anthropic, a cache key on OpenAI).
    pub prompt_cache: PromptCache,
}

impl BodyOptions {
    /// The `prompt_cache_key` to send: the request's key, when caching is on and the
    /// endpoint is OpenAI's own (a compatible server may refuse a field it does not know).
    pub(crate) fn cache_key<'a>(&self, request: &'a ChatRequest) -> Option<&'a str> {
        request
            .cache_key
            .as_deref()
            .filter(|_| self.official && self.prompt_cache.is_on())
    }
}

/// The JSON body of a streaming Chat Completions request.
///
/// `max_tokens` is sent as `max_completion_tokens` to the official API (its reasoning models
/// reject `max_tokens`) and as `max_tokens` elsewhere (what compatible servers understand).
pub fn request_body(request: &ChatRequest, model: &str, options: BodyOptions) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in &request.messages {
        messages.push(message_json(message));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(max) = request.max_tokens.or(options.default_max_tokens) {
        let key = if options.official {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(max));
    }
    if let Some(temperature) = request.temperature {
        body.insert(
            "temperature".into(),
            crate::wire::temperature_json(temperature),
        );
    }
    if let Some(effort) = openai_reasoning_effort(request.thinking, options.official) {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if let Some(key) = options.cache_key(request) {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if let Some(schema) = &request.response_schema {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema,
                "strict": is_strict_compatible(&schema.schema)}}),
        );
    }
    Value::Object(body)
}

fn message_json(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { content } => {
            let only_text = content
                .iter()
                .all(|p| matches!(p, ContentPart::Text { .. }));
            if only_text {
                let text: String = content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::Image { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                json!({"role": "user", "content": text})
            } else {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|p| match p {
                        ContentPart::Text { text } => json!({"type": "text", "text": text}),
                        ContentPart::Image { mime_type, data } => json!({"type": "image_url",
                            "image_url": {"url": format!("data:{mime_type};base64,{data}")}}),
                    })
                    .collect();
                json!({"role": "user", "content": parts})
            }
        }
        ChatMessage::Assistant { text, tool_calls } => {
            let mut object = Map::new();
            object.insert("role".into(), json!("assistant"));
            object.insert(
                "content".into(),
                if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!(text)
                },
            );
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": raw_arguments(c)}})
                    })
                    .collect();
                object.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(object)
        }
        ChatMessage::Tool {
            call_id,
            content,
            is_error,
            ..
        } => json!({"role": "tool", "tool_call_id": call_id,
            "content": tool_output(content, *is_error)}),
    }
}

/// The argument text to send back for an earlier call: the raw text as the model wrote it,
/// or the parsed object when there is no raw text.
pub(crate) fn raw_arguments(call: &crate::ToolCall) -> String {
    if !call.raw_arguments.trim().is_empty() {
        call.raw_arguments.clone()
    } else if call.arguments.is_null() {
        "{}".to_string()
    } else {
        call.arguments.to_string()
    }
}

/// The arguments of an earlier call as a JSON object, for protocols that send them as one
/// (Anthropic `input`, Gemini `args`): the parsed object, else the raw text if it parses to
/// an object, else `{}`.
pub(crate) fn arguments_object(call: &crate::ToolCall) -> Value {
    match &call.arguments {
        Value::Object(_) => call.arguments.clone(),
        _ => serde_json::from_str::<Value>(&raw_arguments(call))
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({})),
    }
}

/// Tool output text; failures are marked because the wire format has no error flag.
pub(crate) fn tool_output(content: &str, is_error: bool) -> String {
    if is_error {
        format!("Error: {content}")
    } else {
        content.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResponseSchema, ToolCall, ToolSpec};
    use braincode_protocol::ThinkingLevel;

    #[test]
    fn body_has_every_documented_field() {
        let request = ChatRequest {
            system: Some("be brief".into()),
            messages: vec![
                ChatMessage::User {
                    content: vec![
                        ContentPart::Text {
                            text: "look".into(),
                        },
                        ContentPart::Image {
                            mime_type: "image/png".into(),
                            data: "AAAA".into(),
                        },
                    ],
                },
                ChatMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall::from_raw("c1", "read_file", "{\"path\":\"a\"}")],
                },
                ChatMessage::Tool {
                    call_id: "c1".into(),
                    name: "read_file".into(),
                    content: "nope".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            }],
            thinking: ThinkingLevel::Minimal,
            max_tokens: Some(100),
            temperature: Some(0.5),
            response_schema: Some(ResponseSchema {
                name: "answer".into(),
                schema: json!({"type": "object"}),
            }),
            cache_key: None,
        };
        let body = request_body(&request, "gpt-x", BodyOptions::default());
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"], json!({"include_usage": true}));
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            body["messages"][1]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0],
            json!({"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}})
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: nope"})
        );
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "read_file");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["temperature"], 0.5);
        assert_eq!(
            body["reasoning_effort"], "low",
            "minimal → low on custom endpoints"
        );
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["strict"], false);

        let official = request_body(
            &request,
            "gpt-x",
            BodyOptions {
                official: true,
                default_max_tokens: None,
                prompt_cache: PromptCache::default(),
            },
        );
        assert_eq!(official["max_completion_tokens"], 100);
        assert!(official.get("max_tokens").is_none());
        assert_eq!(official["reasoning_effort"], "minimal");

        let plain = request_body(&ChatRequest::default(), "m", BodyOptions::default());
        assert!(plain.get("reasoning_effort").is_none(), "off → omitted");

        // The cache key goes to OpenAI itself, not to a compatible server (which may refuse
        // a field it does not know), and not when caching is off.
        let keyed = ChatRequest {
            cache_key: Some("braincode-qa-9f".into()),
            ..ChatRequest::default()
        };
        let openai = BodyOptions {
            official: true,
            ..BodyOptions::default()
        };
        assert_eq!(
            request_body(&keyed, "gpt-x", openai)["prompt_cache_key"],
            "braincode-qa-9f"
        );
        assert_eq!(
            crate::wire::responses::request_body(&keyed, "gpt-x", openai)["prompt_cache_key"],
            "braincode-qa-9f"
        );
        assert!(
            request_body(&keyed, "m", BodyOptions::default())
                .get("prompt_cache_key")
                .is_none()
        );
        let off = BodyOptions {
            prompt_cache: PromptCache::Off,
            ..openai
        };
        assert!(
            request_body(&keyed, "gpt-x", off)
                .get("prompt_cache_key")
                .is_none()
        );
        assert!(plain.get("tools").is_none());
    }
}
