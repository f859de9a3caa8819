//! Google Gemini (`streamGenerateContent?alt=sse`) streams, byte-exact in the documented
//! format (CRLF-framed `data:` lines, each a whole `GenerateContentResponse`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_llm::{
    ChatMessage, ClientOptions, ErrorKind, ModelClient, ModelEvent, RetryNotice, StopReason,
    ToolCall, ToolSpec, WireClient, collect_stream, discover_models, test_connection,
};
use braincode_protocol::{ModelApi, ThinkingLevel, Usage};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, End, ScriptedServer, definition, drain, fast_options, hello, serve};

const API: &str = "google-generative-ai";
const KEY: &str = "AIzaSyD-test-key-0123456789";

pub const TEXT_STREAM: &str = concat!(
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hello\"}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 1200,\"totalTokenCount\": 1200,\"cachedContentTokenCount\": 1000,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 1200}]},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"5jnPaKmVL6-Tz7IPjqrJwAw\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" wörld ✓\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 1200,\"candidatesTokenCount\": 3,\"totalTokenCount\": 1232,\"cachedContentTokenCount\": 1000,\"promptTokensDetails\": [{\"modality\": \"TEXT\",\"tokenCount\": 1200}],\"thoughtsTokenCount\": 29},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"5jnPaKmVL6-Tz7IPjqrJwAw\"}\r\n\r\n",
);

const THOUGHT_AND_CALLS: &str = concat!(
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"**Finding the file**\\nI should read it first.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 96,\"totalTokenCount\": 96},\"modelVersion\": \"gemini-2.5-pro\",\"responseId\": \"r1\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"read_file\",\"args\": {\"path\": \"src/main.rs\"}},\"thoughtSignature\": \"CiQBVKhc7ySVFx0Wk2z4Gk8BfhYc\"},{\"functionCall\": {\"name\": \"grep\",\"args\": {\"pattern\": \"fn main\"}}}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 96,\"candidatesTokenCount\": 31,\"totalTokenCount\": 311,\"thoughtsTokenCount\": 184},\"modelVersion\": \"gemini-2.5-pro\",\"responseId\": \"r1\"}\r\n\r\n",
);

const PARTIAL: &str = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Half an\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n";

fn gemini(server: &ScriptedServer, base: &str, options: ClientOptions) -> WireClient {
    WireClient::new(
        &definition(API, &format!("{}{base}", server.url())),
        Some(KEY.into()),
        options,
    )
    .unwrap()
}

fn observed(server: &ScriptedServer) -> (WireClient, Arc<Mutex<Vec<RetryNotice>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let options = fast_options().with_retry_observer(move |n| sink.lock().unwrap().push(n.clone()));
    (gemini(server, "", options), notices)
}

fn stop(reason: StopReason) -> ModelEvent {
    ModelEvent::Stop { reason }
}

#[tokio::test]
async fn text_reply_with_usage_url_and_key_header() {
    let server = serve(vec![Canned::sse(TEXT_STREAM), Canned::sse(TEXT_STREAM)]).await;
    for base in ["", "/v1beta/"] {
        let client = gemini(&server, base, fast_options());
        assert_eq!(
            client.endpoint(),
            format!(
                "{}/v1beta/models/test-model:streamGenerateContent?alt=sse",
                server.url()
            )
        );
        let stream = client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap();
        let done = collect_stream(stream, |_| {}).await.unwrap();
        assert_eq!(done.text, "Hello wörld ✓");
        assert_eq!(done.stop, Some(StopReason::EndTurn));
        let mut usage = Usage::new(200, 32, 1000, 0);
        usage.reasoning = 29;
        assert_eq!(done.usage, Some(usage));
    }
    for request in server.requests() {
        assert_eq!(request.method, "POST");
        assert_eq!(
            request.path,
            "/v1beta/models/test-model:streamGenerateContent"
        );
        assert_eq!(request.query, "alt=sse");
        assert_eq!(request.headers["x-goog-api-key"], KEY);
        assert!(!request.headers.contains_key("authorization"));
        assert!(!request.query.contains(KEY) && !request.path.contains(KEY));
        assert_eq!(
            request.body,
            json!({"contents": [{"role": "user", "parts": [{"text": "Say hello"}]}],
                "systemInstruction": {"parts": [{"text": "You are terse."}]}})
        );
    }
}

#[tokio::test]
async fn function_call_round_trip_with_thoughts() {
    let server = serve(vec![
        Canned::sse(THOUGHT_AND_CALLS).rechunked(7),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = gemini(&server, "", fast_options());
    let mut request = hello();
    request.thinking = ThinkingLevel::High;
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": {"path": {"type": "string", "description": "Relative path"}},
            "required": ["path"], "additionalProperties": false}),
    }];
    let stream = client
        .stream(request.clone(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(
        done.reasoning,
        "**Finding the file**\nI should read it first."
    );
    assert_eq!(done.text, "");
    assert_eq!(done.stop, Some(StopReason::ToolUse));
    let calls: Vec<_> = done
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read_file", json!({"path": "src/main.rs"})),
            ("grep", json!({"pattern": "fn main"})),
        ]
    );
    assert!(done.tool_calls.iter().all(|c| !c.id.is_empty()));
    assert_eq!(
        done.tool_calls[0].signature.as_deref(),
        Some("CiQBVKhc7ySVFx0Wk2z4Gk8BfhYc")
    );
    assert_eq!(done.tool_calls[1].signature, None);
    assert_ne!(done.tool_calls[0].id, done.tool_calls[1].id);
    let mut usage = Usage::new(96, 215, 0, 0);
    usage.reasoning = 184;
    usage.total = 311;
    assert_eq!(done.usage, Some(usage));

    // Second turn: the calls and their answers go back in Gemini's shapes.
    request.messages.push(ChatMessage::Assistant {
        text: String::new(),
        tool_calls: done.tool_calls.clone(),
    });
    for (call, output, is_error) in [
        (&done.tool_calls[0], "fn main() {}", false),
        (&done.tool_calls[1], "grep: bad pattern", true),
    ] {
        request.messages.push(ChatMessage::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: output.into(),
            is_error,
        });
    }
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello wörld ✓"
    );
    let body = &server.requests()[1].body;
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Say hello"}]},
            // The signature Gemini gave the first call goes back with it, as Google asks.
            {"role": "model", "parts": [
                {"functionCall": {"name": "read_file", "args": {"path": "src/main.rs"}},
                 "thoughtSignature": "CiQBVKhc7ySVFx0Wk2z4Gk8BfhYc"},
                {"functionCall": {"name": "grep", "args": {"pattern": "fn main"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "fn main() {}"}}},
                {"functionResponse": {"name": "grep", "response": {"error": "grep: bad pattern"}}}
            ]}
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"functionDeclarations": [{"name": "read_file", "description": "Read a file",
            "parameters": {"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string", "description": "Relative path"}}}}]}])
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 24_576, "includeThoughts": true})
    );
}

#[tokio::test]
async fn max_tokens_and_safety_stops() {
    let max_tokens = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"The first part of a long\"}],\"role\": \"model\"},\"finishReason\": \"MAX_TOKENS\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 5,\"candidatesTokenCount\": 16,\"totalTokenCount\": 21},\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n";
    let safety = concat!(
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Here is how\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"role\": \"model\"},\"finishReason\": \"SAFETY\",\"index\": 0,\"safetyRatings\": [{\"category\": \"HARM_CATEGORY_DANGEROUS_CONTENT\",\"probability\": \"HIGH\",\"blocked\": true}]}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 3,\"totalTokenCount\": 12},\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n",
    );
    let blocked_prompt = "data: {\"promptFeedback\": {\"blockReason\": \"PROHIBITED_CONTENT\"},\"usageMetadata\": {\"promptTokenCount\": 9,\"totalTokenCount\": 9},\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n";
    let server = serve(vec![
        Canned::sse(max_tokens),
        Canned::sse(safety),
        Canned::sse(blocked_prompt),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = gemini(&server, "", fast_options());
    let run = || client.stream(hello(), CancellationToken::new());
    let done = collect_stream(run().await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(
        (done.text.as_str(), done.stop),
        ("The first part of a long", Some(StopReason::MaxTokens))
    );
    let done = collect_stream(run().await.unwrap(), |_| {}).await.unwrap();
    assert_eq!(
        (done.text.as_str(), done.stop),
        ("Here is how", Some(StopReason::ContentFilter))
    );
    let err = run().await.err().unwrap();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(
        err.message
            .contains("blocked the prompt (PROHIBITED_CONTENT)"),
        "{}",
        err.message
    );
    assert_eq!(
        server.requests().len(),
        3,
        "a blocked prompt is not retried"
    );
}

/// The documented error bodies: (status, status name, message, kind, retried).
const ERRORS: [(u16, &str, &str, ErrorKind, bool); 6] = [
    (
        400,
        "INVALID_ARGUMENT",
        "Invalid JSON payload received. Unknown name \\\"additionalProperties\\\" at 'tools[0].function_declarations[0].parameters': Cannot find field.",
        ErrorKind::BadRequest,
        false,
    ),
    (
        403,
        "PERMISSION_DENIED",
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
        ErrorKind::Auth,
        false,
    ),
    (
        404,
        "NOT_FOUND",
        "models/test-model is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
        ErrorKind::BadRequest,
        false,
    ),
    (
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details.",
        ErrorKind::RateLimit,
        true,
    ),
    (
        500,
        "INTERNAL",
        "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
        ErrorKind::Server,
        true,
    ),
    (
        503,
        "UNAVAILABLE",
        "The model is overloaded. Please try again later.",
        ErrorKind::Server,
        true,
    ),
];

#[tokio::test]
async fn documented_errors_are_classified_and_retried_only_when_transient() {
    for (status, name, message, kind, retried) in ERRORS {
        let body = format!(
            "{{\n  \"error\": {{\n    \"code\": {status},\n    \"message\": \"{message}\",\n    \"status\": \"{name}\"\n  }}\n}}\n"
        );
        let server = serve(vec![Canned::error(status, &body), Canned::sse(TEXT_STREAM)]).await;
        let (client, notices) = observed(&server);
        let result = client.stream(hello(), CancellationToken::new()).await;
        if retried {
            let done = collect_stream(result.unwrap(), |_| {}).await.unwrap();
            assert_eq!(done.text, "Hello wörld ✓", "{status}");
            let notices = notices.lock().unwrap();
            assert_eq!((notices[0].kind, notices[0].status), (kind, Some(status)));
            assert_eq!(server.requests().len(), 2, "{status}");
        } else {
            let err = result.err().unwrap();
            assert_eq!((err.kind, err.status), (kind, Some(status)), "{err}");
            assert!(err.message.contains(name), "{}", err.message);
            assert_eq!(server.requests().len(), 1, "{status} is not retried");
        }
    }
}

#[tokio::test]
async fn an_invalid_key_is_an_auth_error_and_a_quota_wait_is_honoured() {
    let invalid_key = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "API_KEY_INVALID", "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"}}]}});
    let quota = json!({"error": {"code": 429, "message": "You exceeded your current quota.",
        "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                 "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}]}});
    let server = serve(vec![
        Canned::error(400, &invalid_key.to_string()),
        Canned::error(429, &quota.to_string()),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed(&server);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!((err.kind, err.status), (ErrorKind::Auth, Some(400)));
    assert!(!err.message.contains(KEY));
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    collect_stream(stream, |_| {}).await.unwrap();
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, ErrorKind::RateLimit);
    assert_eq!(notices[0].delay, Duration::from_millis(50));
    assert!(notices[0].from_retry_after);
}

#[tokio::test]
async fn cut_streams_and_error_chunks() {
    let error_chunk = "data: {\"error\": {\"code\": 503, \"message\": \"The model is overloaded. Please try again later.\", \"status\": \"UNAVAILABLE\"}}\r\n\r\n";
    let server = serve(vec![
        // Before any content: retried.
        Canned::sse("").ending(End::Cut),
        Canned::sse(error_chunk),
        Canned::sse(TEXT_STREAM),
        // After content: the caller learns the reply broke.
        Canned::sse(PARTIAL).ending(End::Cut),
        // Closed cleanly but without a finishReason: cut short, not a complete reply.
        Canned::sse(PARTIAL),
    ])
    .await;
    let (client, notices) = observed(&server);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello wörld ✓"
    );
    let kinds: Vec<_> = notices.lock().unwrap().iter().map(|n| n.kind).collect();
    assert_eq!(kinds, vec![ErrorKind::Network, ErrorKind::Server]);
    for cause in [ErrorKind::Network, ErrorKind::InvalidResponse] {
        let stream = client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap();
        let (events, err) = drain(stream).await;
        assert_eq!(
            events,
            vec![ModelEvent::TextDelta {
                text: "Half an".into()
            }]
        );
        let err = err.unwrap();
        assert_eq!(
            (err.kind, err.cause),
            (ErrorKind::StreamInterrupted, Some(cause))
        );
    }
    assert_eq!(server.requests().len(), 5);
}

#[tokio::test]
async fn a_json_reply_decodes_like_a_stream() {
    let object = r#"{"candidates": [{"content": {"parts": [{"text": "Let me think.", "thought": true}, {"text": "Reading."}, {"functionCall": {"name": "read_file", "args": {"path": "a.rs"}}}], "role": "model"}, "finishReason": "STOP", "index": 0}], "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 9, "totalTokenCount": 61, "thoughtsTokenCount": 12}, "modelVersion": "gemini-2.5-flash", "responseId": "j1"}"#;
    // `streamGenerateContent` without `alt=sse` answers a JSON array of the same objects.
    let array = r#"[{"candidates": [{"content": {"parts": [{"text": "Hello"}], "role": "model"}, "index": 0}]},
{"candidates": [{"content": {"parts": [{"text": " there"}], "role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}], "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "totalTokenCount": 6}}]"#;
    let error = r#"{"error": {"code": 400, "message": "Request contains an invalid argument.", "status": "INVALID_ARGUMENT"}}"#;
    let server = serve(vec![
        Canned::json(object),
        Canned::json(array),
        Canned::json(error),
    ])
    .await;
    let client = gemini(&server, "", fast_options());
    let (events, err) = drain(
        client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap(),
    )
    .await;
    assert!(err.is_none());
    let ModelEvent::ToolCall { call } = &events[2] else {
        panic!("{events:?}")
    };
    let mut usage = Usage::new(40, 21, 0, 0);
    usage.reasoning = 12;
    usage.total = 61;
    assert_eq!(
        events,
        vec![
            ModelEvent::ReasoningDelta {
                text: "Let me think.".into()
            },
            ModelEvent::TextDelta {
                text: "Reading.".into()
            },
            ModelEvent::ToolCall {
                call: ToolCall::from_raw(call.id.clone(), "read_file", r#"{"path":"a.rs"}"#)
            },
            ModelEvent::Usage { usage },
            stop(StopReason::ToolUse),
        ]
    );
    let done = collect_stream(
        client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (done.text.as_str(), done.stop),
        ("Hello there", Some(StopReason::MaxTokens))
    );
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!((err.kind, err.status), (ErrorKind::BadRequest, Some(200)));
    assert!(err.message.contains("in a JSON reply"), "{}", err.message);
}

#[tokio::test]
async fn connection_test_goes_through_the_same_client() {
    let ok = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"OK\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 5,\"candidatesTokenCount\": 1,\"totalTokenCount\": 6}}\r\n\r\n";
    let server = serve(vec![Canned::sse(ok)]).await;
    let client = gemini(&server, "", ClientOptions::for_connection_test());
    let result = test_connection(&client, Duration::from_secs(30)).await;
    assert!(result.ok, "{result:?}");
    assert_eq!(result.reply, "OK");
    let request = &server.requests()[0];
    assert_eq!(request.headers["x-goog-api-key"], KEY);
    assert_eq!(
        request.body["generationConfig"],
        json!({"maxOutputTokens": 16})
    );
}

#[tokio::test]
async fn discovery_reads_every_page_of_models() {
    let page_one = r#"{"models": [{"name": "models/gemini-2.5-flash", "version": "001", "displayName": "Gemini 2.5 Flash", "inputTokenLimit": 1048576, "outputTokenLimit": 65536, "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent", "batchGenerateContent"], "thinking": true},
{"name": "models/gemini-embedding-001", "version": "001", "inputTokenLimit": 2048, "supportedGenerationMethods": ["embedContent", "countTextTokens", "countTokens"]}], "nextPageToken": "Ch1tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA=="}"#;
    let page_two = r#"{"models": [{"name": "models/gemma-3-27b-it", "inputTokenLimit": 131072, "supportedGenerationMethods": ["generateContent", "countTokens"]}]}"#;
    let server = serve(vec![
        Canned::json(page_one),
        Canned::json(page_two),
        Canned::error(
            400,
            r#"{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT"}}"#,
        ),
    ])
    .await;
    let models = discover_models(
        &format!("{}/v1beta", server.url()),
        ModelApi::GoogleGenerativeAi,
        Some(KEY),
    )
    .await
    .unwrap();
    let found: Vec<_> = models
        .iter()
        .map(|m| (m.id.as_str(), m.context_window_guess))
        .collect();
    assert_eq!(
        found,
        vec![("gemini-2.5-flash", 1_048_576), ("gemma-3-27b-it", 131_072)]
    );
    let requests = server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/v1beta/models")
    );
    assert_eq!(requests[0].query, "pageSize=1000");
    assert_eq!(
        requests[1].query,
        "pageSize=1000&pageToken=Ch1tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA%3D%3D"
    );
    assert_eq!(requests[1].headers["x-goog-api-key"], KEY);
    assert!(requests.iter().all(|r| !r.query.contains(KEY)));
    let err = discover_models(&server.url(), ModelApi::GoogleGenerativeAi, Some(KEY))
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(server.requests()[2].path, "/v1beta/models");
}
