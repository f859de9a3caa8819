//! One broken answer does not fail a call: a cut, malformed, empty or HTML answer before any
//! content is retried (with a retry notice naming the kind); after content it is a
//! `StreamInterrupted` error. A server that answers one JSON object instead of a stream is
//! decoded into the same events, on all three wires.

use std::sync::{Arc, Mutex};

use braincode_llm::{
    ErrorKind, ModelClient, ModelEvent, RetryNotice, StopReason, ToolSpec, WireClient,
    collect_stream,
};
use braincode_protocol::Usage;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, End, ScriptedServer, definition, drain, fast_options, hello, serve};

/// One wire protocol with a good stream and the pieces faults are made of.
struct Wire {
    api: &'static str,
    /// A complete stream, and the text it carries.
    good: &'static str,
    good_text: &'static str,
    /// The opening events of a reply, before any content.
    opening: &'static str,
    /// The opening plus one text delta, "Half an".
    partial: &'static str,
}

const WIRES: [Wire; 3] = [
    Wire {
        api: "openai-completions",
        good: crate::chat::TEXT_STREAM,
        good_text: "Hello wörld ✓",
        opening: "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        partial: concat!(
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an\"},\"finish_reason\":null}]}\n\n",
        ),
    },
    Wire {
        api: "openai-responses",
        good: crate::responses::TEXT_AND_REASONING,
        good_text: "Hello there!",
        opening: "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
        partial: concat!(
            "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Half an\"}\n\n",
        ),
    },
    Wire {
        api: "anthropic-messages",
        good: crate::anthropic::TEXT_STREAM,
        good_text: "Hello! 👋",
        opening: concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        ),
        partial: concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_x\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Half an\"}}\n\n",
        ),
    },
];

fn observed(api: &str, server: &ScriptedServer) -> (WireClient, Arc<Mutex<Vec<RetryNotice>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let options = fast_options().with_retry_observer(move |n| sink.lock().unwrap().push(n.clone()));
    let client =
        WireClient::new(&definition(api, &server.url()), Some("k".into()), options).unwrap();
    (client, notices)
}

fn html_page() -> Canned {
    Canned {
        status: 200,
        headers: vec![("content-type".into(), "text/html; charset=utf-8".into())],
        chunks: vec!["<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>".into()],
        end: End::Complete,
    }
}

/// Each fault, as the first answer: (name, answer, kind of the retry notice, words of its message).
fn faults(wire: &Wire) -> Vec<(&'static str, Canned, ErrorKind, &'static str)> {
    vec![
        (
            "cut before content",
            Canned::sse(wire.opening).ending(End::Cut),
            ErrorKind::Network,
            "connection broke",
        ),
        (
            "closed before content",
            Canned::sse(wire.opening),
            ErrorKind::InvalidResponse,
            "ended before the reply was complete",
        ),
        (
            "malformed data line",
            Canned::sse("data: {\"oops\n\n"),
            ErrorKind::InvalidResponse,
            "malformed stream event",
        ),
        (
            "empty 200 stream",
            Canned::sse(""),
            ErrorKind::InvalidResponse,
            "ended before the reply was complete",
        ),
        (
            "HTML page with 200",
            html_page(),
            ErrorKind::InvalidResponse,
            "HTML page",
        ),
    ]
}

#[tokio::test]
async fn a_broken_answer_before_content_is_retried_once_on_every_wire() {
    for wire in &WIRES {
        for (name, fault, kind, words) in faults(wire) {
            let server = serve(vec![fault, Canned::sse(wire.good)]).await;
            let (client, notices) = observed(wire.api, &server);
            let stream = client
                .stream(hello(), CancellationToken::new())
                .await
                .unwrap_or_else(|e| panic!("{} / {name}: {e}", wire.api));
            let done = collect_stream(stream, |_| {}).await.unwrap();
            assert_eq!(done.text, wire.good_text, "{} / {name}", wire.api);
            assert_eq!(server.requests().len(), 2, "{} / {name}", wire.api);
            let notices = notices.lock().unwrap();
            assert_eq!(notices.len(), 1, "{} / {name}: one retry notice", wire.api);
            assert_eq!(notices[0].attempt, 1);
            assert_eq!(notices[0].kind, kind, "{} / {name}", wire.api);
            assert!(
                notices[0].message.contains(words),
                "{} / {name}: {}",
                wire.api,
                notices[0].message
            );
        }
    }
}

#[tokio::test]
async fn broken_answers_stay_within_the_retry_budget() {
    let server = serve(vec![
        Canned::sse("data: {\"oops\n\n"),
        html_page(),
        Canned::sse(""),
        Canned::sse(crate::chat::TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed("openai-completions", &server);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidResponse);
    assert!(err.message.contains("after 3 attempts"), "{}", err.message);
    assert_eq!(
        server.requests().len(),
        3,
        "first attempt + max_retries (2)"
    );
    assert_eq!(notices.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_cut_after_content_is_stream_interrupted_on_every_wire() {
    for wire in &WIRES {
        let server = serve(vec![
            Canned::sse(wire.partial).ending(End::Cut),
            Canned::sse(wire.good),
        ])
        .await;
        let (client, notices) = observed(wire.api, &server);
        let stream = client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap();
        let (events, err) = drain(stream).await;
        assert_eq!(
            events,
            vec![ModelEvent::TextDelta {
                text: "Half an".into()
            }],
            "{}",
            wire.api
        );
        let err = err.unwrap();
        assert_eq!(
            err.kind,
            ErrorKind::StreamInterrupted,
            "{}: {err}",
            wire.api
        );
        assert_eq!(err.cause, Some(ErrorKind::Network));
        assert!(err.kind.is_retryable_call());
        assert!(err.kind.allows_fallback());
        assert_eq!(
            err.model.as_deref(),
            Some(format!("test/{}", wire.api).as_str())
        );
        assert!(
            err.humanized().contains("send the call again"),
            "{}",
            err.humanized()
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{}: the client does not retry",
            wire.api
        );
        assert!(notices.lock().unwrap().is_empty());
    }
}

#[tokio::test]
async fn errors_that_are_not_glitches_are_not_interruptions() {
    // A provider error that would not have been retried keeps its kind after content.
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"This model's maximum context length is 8192 tokens\",\"code\":\"context_length_exceeded\"}}\n\n",
    );
    let server = serve(vec![Canned::sse(body)]).await;
    let (client, _) = observed("openai-completions", &server);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let (_, err) = drain(stream).await;
    let err = err.unwrap();
    assert_eq!(err.kind, ErrorKind::ContextTooLong);
    assert!(!err.kind.is_retryable_call());
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }]
}

/// Runs one JSON answer through a client of `api` and returns every event.
async fn events_of_json(api: &str, body: &str) -> Vec<ModelEvent> {
    let server = serve(vec![Canned::json(body)]).await;
    let (client, notices) = observed(api, &server);
    let mut request = hello();
    request.tools = tools();
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("{api}: {e}"));
    let (events, err) = drain(stream).await;
    assert!(err.is_none(), "{api}: {err:?}");
    assert_eq!(server.requests().len(), 1);
    assert!(notices.lock().unwrap().is_empty());
    events
}

fn text(text: &str) -> ModelEvent {
    ModelEvent::TextDelta { text: text.into() }
}

fn reasoning(text: &str) -> ModelEvent {
    ModelEvent::ReasoningDelta { text: text.into() }
}

fn stop(reason: StopReason) -> ModelEvent {
    ModelEvent::Stop { reason }
}

fn call(id: &str, name: &str, arguments: &str) -> ModelEvent {
    ModelEvent::ToolCall {
        call: braincode_llm::ToolCall::from_raw(id, name, arguments),
    }
}

#[tokio::test]
async fn chat_completion_json_with_text() {
    let events = events_of_json(
        "openai-completions",
        r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from JSON","reasoning_content":"Greet back."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":2}}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            reasoning("Greet back."),
            text("Hello from JSON"),
            ModelEvent::Usage {
                usage: Usage {
                    input: 10,
                    output: 4,
                    cache_read: 2,
                    cache_write: 0,
                    total: 16,
                    reasoning: 0,
                }
            },
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn chat_completion_json_with_tool_calls() {
    // Arguments as the documented string, and as an object (some compatible servers).
    let events = events_of_json(
        "openai-completions",
        r#"{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"}},{"id":"call_b","type":"function","function":{"name":"read_file","arguments":{"path":"b.rs"}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":20,"total_tokens":50}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            call("call_a", "read_file", r#"{"path":"a.rs"}"#),
            call("call_b", "read_file", r#"{"path":"b.rs"}"#),
            ModelEvent::Usage {
                usage: Usage::new(30, 20, 0, 0)
            },
            stop(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn responses_json_with_text() {
    let events = events_of_json(
        "openai-responses",
        r#"{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,"output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Plan"},{"type":"summary_text","text":"Answer"}]},{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hello from JSON","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":3,"total_tokens":13}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            reasoning("Plan"),
            reasoning("\n\n"),
            reasoning("Answer"),
            text("Hello from JSON"),
            ModelEvent::Usage {
                usage: Usage::new(10, 3, 0, 0)
            },
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn responses_json_with_tool_calls_and_incomplete_status() {
    let events = events_of_json(
        "openai-responses",
        r#"{"id":"resp_2","object":"response","status":"completed","output":[{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"}],"usage":{"input_tokens":40,"output_tokens":9,"total_tokens":49}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            call("call_1", "read_file", r#"{"path":"a.rs"}"#),
            ModelEvent::Usage {
                usage: Usage::new(40, 9, 0, 0)
            },
            stop(StopReason::ToolUse),
        ]
    );
    let events = events_of_json(
        "openai-responses",
        r#"{"id":"resp_3","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","content":[{"type":"output_text","text":"Cut"}]}]}"#,
    )
    .await;
    assert_eq!(events, vec![text("Cut"), stop(StopReason::MaxTokens)]);
}

#[tokio::test]
async fn anthropic_message_json_with_text() {
    let events = events_of_json(
        "anthropic-messages",
        r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"Greet back.","signature":"sig"},{"type":"text","text":"Hello from JSON"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":7}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            reasoning("Greet back."),
            text("Hello from JSON"),
            ModelEvent::Usage {
                usage: Usage::new(25, 7, 100, 0)
            },
            stop(StopReason::EndTurn),
        ]
    );
}

#[tokio::test]
async fn anthropic_message_json_with_tool_calls() {
    let events = events_of_json(
        "anthropic-messages",
        r#"{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.rs"}},{"type":"tool_use","id":"toolu_2","name":"read_file","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":50,"output_tokens":30}}"#,
    )
    .await;
    assert_eq!(
        events,
        vec![
            text("Reading."),
            call("toolu_1", "read_file", r#"{"path":"a.rs"}"#),
            call("toolu_2", "read_file", "{}"),
            ModelEvent::Usage {
                usage: Usage::new(50, 30, 0, 0)
            },
            stop(StopReason::ToolUse),
        ]
    );
}

#[tokio::test]
async fn a_json_answer_decodes_like_the_stream_it_replaces() {
    // The tool-call stream of chat.rs, and the same reply as one JSON object.
    let server = serve(vec![Canned::sse(crate::chat::TOOL_STREAM)]).await;
    let (client, _) = observed("openai-completions", &server);
    let streamed = drain(
        client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await
    .0;
    let json = events_of_json(
        "openai-completions",
        r#"{"id":"chatcmpl-9xTool","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"src/lib.rs\"}"}},{"id":"call_ABc7hJr1qK1d2wSNc0pUyQ9u","type":"function","function":{"name":"grep","arguments":"{\"pattern\": \"fn main\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":90,"completion_tokens":41,"total_tokens":131,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    )
    .await;
    assert_eq!(json, streamed);
}

#[tokio::test]
async fn an_error_object_answered_as_json_stays_an_error() {
    // Retryable (rate limit): retried, then the stream answers.
    let server = serve(vec![
        Canned::json(
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        ),
        Canned::sse(crate::chat::TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed("openai-completions", &server);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello wörld ✓"
    );
    assert_eq!(notices.lock().unwrap()[0].kind, ErrorKind::RateLimit);

    // Not retryable: one request, the provider's message.
    for (api, body, kind) in [
        (
            "openai-completions",
            r#"{"error":{"message":"Unknown parameter: 'tools[0].foo'","type":"invalid_request_error","code":"unknown_parameter"}}"#,
            ErrorKind::BadRequest,
        ),
        (
            "openai-responses",
            r#"{"id":"resp_x","object":"response","status":"failed","error":{"code":"invalid_prompt","message":"Invalid prompt: flagged."},"output":[]}"#,
            ErrorKind::BadRequest,
        ),
        (
            "anthropic-messages",
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            ErrorKind::Auth,
        ),
    ] {
        let server = serve(vec![Canned::json(body), Canned::sse("")]).await;
        let (client, _) = observed(api, &server);
        let err = client
            .stream(hello(), CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, kind, "{api}: {err}");
        assert_eq!(err.status, Some(200));
        assert_eq!(server.requests().len(), 1, "{api}");
    }
}
