//! Anthropic Messages streams, byte-exact in the documented event format.

use braincode_llm::{ErrorKind, ModelClient, StopReason, collect_stream};
use braincode_protocol::{ThinkingLevel, Usage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, client, hello, serve};

pub const TEXT_STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":120,\"cache_read_input_tokens\":2048,\"cache_creation\":{\"ephemeral_5m_input_tokens\":120,\"ephemeral_1h_input_tokens\":0},\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: ping\n",
    "data: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"! 👋\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

const THINKING_AND_TOOLS: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01Aq9w938a90dw8q\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":472,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":2}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"I need to read the file\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\" and search it.\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me look.\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":\"read_file\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"sr\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"c/main.rs\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_02Bq3kLdd9aQ1\",\"name\":\"grep\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pattern\\\": \\\"fn \"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"main\\\"}\"}}\n\n",
    "event: content_block_stop\n",
    "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":89}}\n\n",
    "event: message_stop\n",
    "data: {\"type\":\"message_stop\"}\n\n",
);

#[tokio::test]
async fn text_with_cache_usage_and_headers() {
    let server = serve(vec![Canned::sse(TEXT_STREAM)]).await;
    // A base URL ending in /v1 is stripped; the client adds /v1/messages itself.
    let definition =
        crate::common::definition("anthropic-messages", &format!("{}/v1", server.url()));
    let client = braincode_llm::WireClient::new(
        &definition,
        Some("sk-ant-test".into()),
        crate::common::fast_options(),
    )
    .unwrap();
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.text, "Hello! 👋");
    assert_eq!(done.stop, Some(StopReason::EndTurn));
    assert_eq!(done.usage, Some(Usage::new(25, 15, 2048, 120)));

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.headers["x-api-key"], "sk-ant-test");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert!(!request.headers.contains_key("authorization"));
    // Prompt caching is on by default: the system prompt and the conversation end on a mark.
    let mark = json!({"type": "ephemeral"});
    assert_eq!(
        request.body["system"],
        json!([{"type": "text", "text": "You are terse.", "cache_control": mark}])
    );
    assert_eq!(request.body["max_tokens"], 8192);
    assert_eq!(
        request.body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Say hello", "cache_control": mark}]}])
    );
}

#[tokio::test]
async fn prompt_cache_follows_the_model_entry() {
    let server = serve(vec![Canned::sse(TEXT_STREAM), Canned::sse(TEXT_STREAM)]).await;
    for (setting, system) in [
        ("off", json!("You are terse.")),
        (
            "1h",
            json!([{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]),
        ),
    ] {
        let mut definition =
            crate::common::definition("anthropic-messages", &format!("{}/v1", server.url()));
        definition.prompt_cache = serde_json::from_value(json!(setting)).unwrap();
        let client = braincode_llm::WireClient::new(
            &definition,
            Some("k".into()),
            crate::common::fast_options(),
        )
        .unwrap();
        let stream = client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap();
        collect_stream(stream, |_| {}).await.unwrap();
        let sent = server.requests().last().unwrap().body.clone();
        assert_eq!(sent["system"], system, "{setting}");
    }
    let off = &server.requests()[0].body;
    assert!(!off.to_string().contains("cache_control"), "{off}");
}

#[tokio::test]
async fn thinking_then_two_tool_calls() {
    let server = serve(vec![Canned::sse(THINKING_AND_TOOLS).rechunked(11)]).await;
    let client = client("anthropic-messages", &server, Some("k"));
    let mut request = hello();
    request.thinking = ThinkingLevel::Medium;
    request.max_tokens = Some(16_000);
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.reasoning, "I need to read the file and search it.");
    assert_eq!(done.text, "Let me look.");
    assert_eq!(done.stop, Some(StopReason::ToolUse));
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].id, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
    assert_eq!(done.tool_calls[0].arguments, json!({"path": "src/main.rs"}));
    assert_eq!(done.tool_calls[1].arguments, json!({"pattern": "fn main"}));
    assert_eq!(done.usage, Some(Usage::new(472, 89, 0, 0)));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 10_240})
    );
}

#[tokio::test]
async fn overloaded_error_event_before_any_text_is_retried() {
    let overloaded = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: error\n",
        "data: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n",
    );
    let server = serve(vec![Canned::sse(overloaded), Canned::sse(TEXT_STREAM)]).await;
    let client = client("anthropic-messages", &server, Some("k"));
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.text, "Hello! 👋");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn error_event_after_text_ends_the_stream_with_an_error() {
    let broken = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half an\"}}\n\n",
        "event: error\n",
        "data: {\"type\": \"error\", \"error\": {\"type\": \"api_error\", \"message\": \"Internal server error\"}}\n\n",
    );
    let server = serve(vec![Canned::sse(broken), Canned::sse(TEXT_STREAM)]).await;
    let client = client("anthropic-messages", &server, Some("k"));
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let err = collect_stream(stream, |_| {}).await.unwrap_err();
    // Changed deliberately: after delivered text the error is `StreamInterrupted` (was
    // `Server`), with the provider's class as its cause.
    assert_eq!(err.kind, ErrorKind::StreamInterrupted);
    assert_eq!(err.cause, Some(ErrorKind::Server));
    assert!(err.message.contains("Internal server error"));
    assert_eq!(
        server.requests().len(),
        1,
        "no retry once text reached the caller"
    );
}
