use super::*;
use crate::{ErrorKind, ResponseSchema, ToolCall, ToolSpec};
use braincode_protocol::ThinkingLevel;

#[test]
fn body_merges_user_turns_and_sets_thinking() {
    let request = ChatRequest {
        system: Some("sys".into()),
        messages: vec![
            ChatMessage::user_text("read a"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::from_raw(
                    "toolu_1",
                    "read_file",
                    "{\"path\":\"a\"}",
                )],
            },
            ChatMessage::Tool {
                call_id: "toolu_1".into(),
                name: "read_file".into(),
                content: "boom".into(),
                is_error: true,
            },
            ChatMessage::user_text("and now?"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
        }],
        thinking: ThinkingLevel::High,
        max_tokens: Some(4_096),
        temperature: Some(0.2),
        response_schema: Some(ResponseSchema {
            name: "result".into(),
            schema: json!({"type": "object"}),
        }),
        cache_key: None,
    };
    let body = request_body(&request, "claude-x", uncached());
    assert_eq!(body["max_tokens"], 4_096);
    assert!(
        body["system"]
            .as_str()
            .unwrap()
            .starts_with("sys\n\nReply with only one JSON object")
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}})
    );
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": true})
    );
    assert_eq!(
        messages[2]["content"][1],
        json!({"type": "text", "text": "and now?"})
    );
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4_095})
    );
    assert!(
        body.get("temperature").is_none(),
        "temperature is dropped with thinking"
    );

    let small = ChatRequest {
        max_tokens: Some(16),
        thinking: ThinkingLevel::High,
        temperature: Some(0.0),
        ..ChatRequest::default()
    };
    let body = request_body(&small, "claude-x", uncached());
    assert!(
        body.get("thinking").is_none(),
        "no room for a 1024-token budget"
    );
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(
        request_body(&ChatRequest::default(), "c", uncached())["max_tokens"],
        DEFAULT_MAX_TOKENS
    );
}

fn uncached() -> BodyOptions {
    BodyOptions {
        prompt_cache: PromptCache::Off,
        ..BodyOptions::default()
    }
}

fn worker_request(task: &str) -> ChatRequest {
    ChatRequest {
        system: Some("You are the backend engineer.".into()),
        messages: vec![ChatMessage::user_text(task)],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            },
            ToolSpec {
                name: "edit_file".into(),
                description: "Edit".into(),
                parameters: json!({"type": "object"}),
            },
        ],
        cache_key: Some("braincode-backend-1a2b".into()),
        ..ChatRequest::default()
    }
}

#[test]
fn cache_marks_end_the_tools_the_system_prompt_and_the_conversation() {
    let body = request_body(&worker_request("fix a"), "claude-x", BodyOptions::default());
    let mark = json!({"type": "ephemeral"});
    assert_eq!(body["tools"][1]["cache_control"], mark);
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are the backend engineer.", "cache_control": mark}])
    );
    assert_eq!(body["messages"][0]["content"][0]["cache_control"], mark);
    // Anthropic has no cache key field: it caches by content.
    assert!(body.get("prompt_cache_key").is_none());

    let hour = BodyOptions {
        prompt_cache: PromptCache::OneHour,
        ..BodyOptions::default()
    };
    let body = request_body(&worker_request("fix a"), "claude-x", hour);
    assert_eq!(body["system"][0]["cache_control"]["ttl"], "1h");

    let off = request_body(&worker_request("fix a"), "claude-x", uncached());
    assert!(!off.to_string().contains("cache_control"), "{off}");
    assert_eq!(off["system"], "You are the backend engineer.");
}

#[test]
fn two_workers_of_a_role_share_a_byte_identical_prefix() {
    let one = request_body(&worker_request("fix a"), "claude-x", BodyOptions::default());
    let two = request_body(&worker_request("fix b"), "claude-x", BodyOptions::default());
    // The cached parts, tools then system, are the same bytes; the task differs.
    assert_eq!(one["tools"].to_string(), two["tools"].to_string());
    assert_eq!(one["system"].to_string(), two["system"].to_string());
    assert_ne!(one["messages"], two["messages"]);
}

#[test]
fn error_event_is_classified() {
    let mut decoder = AnthropicDecoder::new();
    let event = SseEvent {
        event: "error".into(),
        data:
            r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
                .into(),
        ..SseEvent::default()
    };
    let err = decoder.on_event(&event, &mut VecDeque::new()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Server);
    assert!(err.message.contains("Overloaded"));
}

#[test]
fn tool_use_without_deltas_keeps_its_initial_input() {
    let mut decoder = AnthropicDecoder::new();
    let mut out = VecDeque::new();
    for data in [
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"n","input":{"a":1}}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
    ] {
        let event = SseEvent {
            data: data.into(),
            ..SseEvent::default()
        };
        decoder.on_event(&event, &mut out).unwrap();
    }
    let Some(ModelEvent::ToolCall { call }) = out.pop_front() else {
        unreachable!()
    };
    assert_eq!(call.arguments, json!({"a": 1}));
}
