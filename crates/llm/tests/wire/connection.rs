//! Connection test and `GET /models` discovery.

use std::time::Duration;

use braincode_llm::{ClientOptions, ErrorKind, WireClient, discover_models, test_connection};
use braincode_protocol::ModelApi;
use serde_json::json;

use crate::common::{Canned, End, definition, serve};

const OK_STREAM: &str = concat!(
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"OK\"},\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    "data: [DONE]\n\n",
);

#[tokio::test]
async fn connection_test_sends_the_probe_and_reports_the_reply() {
    let server = serve(vec![Canned::sse(OK_STREAM)]).await;
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        ClientOptions::for_connection_test(),
    )
    .unwrap();
    let result = test_connection(&client, Duration::from_secs(30)).await;
    assert!(result.ok, "{result:?}");
    assert_eq!(result.reply, "OK");
    assert!(result.failure.is_none());
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "Reply with exactly OK"}])
    );
    assert_eq!(body["max_tokens"], 16);
    assert!(body.get("reasoning_effort").is_none());
}

#[tokio::test]
async fn connection_test_does_not_retry_and_explains_failures() {
    let server = serve(vec![
        Canned::error(429, r#"{"error":{"message":"slow down"}}"#),
        Canned::sse(OK_STREAM),
    ])
    .await;
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        ClientOptions::for_connection_test(),
    )
    .unwrap();
    let result = test_connection(&client, Duration::from_secs(30)).await;
    assert!(!result.ok);
    let failure = result.failure.unwrap();
    assert_eq!(failure.kind, ErrorKind::RateLimit);
    assert!(failure.explanation.contains("slow down"));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connection_test_timeout() {
    let server = serve(vec![Canned::sse("").ending(End::Stall)]).await;
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        ClientOptions::for_connection_test(),
    )
    .unwrap();
    let result = test_connection(&client, Duration::from_millis(200)).await;
    assert_eq!(result.failure.unwrap().kind, ErrorKind::Timeout);
}

#[tokio::test]
async fn discovery_openai_style() {
    let server = serve(vec![Canned::error(
        200,
        r#"{"object":"list","data":[{"id":"qwen2.5-coder:7b","object":"model","created":1,"owned_by":"library"},{"id":"big","context_length":32768}]}"#,
    )])
    .await;
    let models = discover_models(&server.url(), ModelApi::OpenaiCompletions, Some("sk-d"))
        .await
        .unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0].id, "qwen2.5-coder:7b");
    assert_eq!(models[0].context_window_guess, 128_000);
    assert_eq!(models[1].context_window_guess, 32_768);
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(request.headers["authorization"], "Bearer sk-d");
}

#[tokio::test]
async fn discovery_anthropic_style() {
    let server = serve(vec![Canned::error(
        200,
        r#"{"data":[{"type":"model","id":"claude-sonnet-4-5-20250929","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-5-20250929","last_id":"claude-sonnet-4-5-20250929"}"#,
    )])
    .await;
    let models = discover_models(
        &format!("{}/v1/", server.url()),
        ModelApi::AnthropicMessages,
        Some("sk-ant"),
    )
    .await
    .unwrap();
    assert_eq!(models[0].id, "claude-sonnet-4-5-20250929");
    assert_eq!(models[0].context_window_guess, 200_000);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/models");
    assert_eq!(request.headers["x-api-key"], "sk-ant");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
}

#[tokio::test]
async fn discovery_requires_a_data_array() {
    let server = serve(vec![
        Canned::error(200, r#"{"models":[{"name":"x"}]}"#),
        Canned::error(401, r#"{"error":{"message":"bad key sk-hidden"}}"#),
    ])
    .await;
    let err = discover_models(&server.url(), ModelApi::OpenaiCompletions, None)
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidResponse);
    assert!(
        err.message.contains("without a `data` array"),
        "{}",
        err.message
    );
    let err = discover_models(
        &server.url(),
        ModelApi::OpenaiCompletions,
        Some("sk-hidden"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert!(!err.message.contains("sk-hidden"), "{}", err.message);
}
