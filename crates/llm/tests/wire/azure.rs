//! Azure OpenAI: the Responses wire at `{resource}/openai/v1/responses` with an `api-key`
//! header, Azure's error bodies, and `/openai/v1/models` discovery.

use braincode_llm::{
    ErrorKind, ModelClient, StopReason, WireClient, collect_stream, discover_models,
};
use braincode_protocol::{ModelApi, ThinkingLevel};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, ScriptedServer, definition, fast_options, hello, serve};

const API: &str = "azure-openai-responses";
const KEY: &str = "0123456789abcdef0123456789abcdef";

fn azure(server: &ScriptedServer, base: &str) -> WireClient {
    WireClient::new(
        &definition(API, &format!("{}{base}", server.url())),
        Some(KEY.into()),
        fast_options(),
    )
    .unwrap()
}

#[tokio::test]
async fn text_reply_on_the_v1_path_with_the_api_key_header() {
    let server = serve(vec![
        Canned::sse(crate::responses::TEXT_AND_REASONING),
        Canned::sse(crate::responses::TEXT_AND_REASONING),
    ])
    .await;
    for base in ["", "/openai/v1/"] {
        let client = azure(&server, base);
        assert_eq!(
            client.endpoint(),
            format!("{}/openai/v1/responses", server.url())
        );
        let mut request = hello();
        request.thinking = ThinkingLevel::Minimal;
        request.cache_key = Some("braincode-backend-7c1d".into());
        let stream = client
            .stream(request, CancellationToken::new())
            .await
            .unwrap();
        let done = collect_stream(stream, |_| {}).await.unwrap();
        assert_eq!(done.text, "Hello there!");
        assert_eq!(done.reasoning, "**Greeting** the user");
        assert_eq!(done.stop, Some(StopReason::EndTurn));
        let usage = done.usage.unwrap();
        assert_eq!(
            (usage.input, usage.cache_read, usage.output),
            (128, 1920, 35)
        );
    }
    for request in server.requests() {
        assert_eq!(request.path, "/openai/v1/responses");
        assert_eq!(request.query, "");
        assert_eq!(request.headers["api-key"], KEY);
        assert!(!request.headers.contains_key("authorization"));
        // The deployment name is the model; Azure serves OpenAI's own efforts.
        assert_eq!(request.body["model"], "test-model");
        assert_eq!(request.body["stream"], true);
        assert_eq!(request.body["reasoning"]["effort"], "minimal");
        assert_eq!(request.body["instructions"], "You are terse.");
        // OpenAI's own service caches by prefix and routes by this key.
        assert_eq!(request.body["prompt_cache_key"], "braincode-backend-7c1d");
    }
}

#[tokio::test]
async fn a_content_filter_refusal_is_clear_and_not_retried() {
    let filtered = json!({"error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766",
        "type": null, "param": "prompt", "code": "content_filter", "status": 400,
        "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
            "hate": {"filtered": false, "severity": "safe"},
            "violence": {"filtered": true, "severity": "high"}}}}});
    let server = serve(vec![
        Canned::error(400, &filtered.to_string()),
        Canned::sse(crate::responses::TEXT_AND_REASONING),
    ])
    .await;
    let err = azure(&server, "")
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!((err.kind, err.status), (ErrorKind::BadRequest, Some(400)));
    assert!(!err.kind.is_retryable());
    assert!(
        err.message.contains("content filter blocked this request"),
        "{}",
        err.message
    );
    assert!(err.message.contains("content management policy"));
    assert_eq!(
        server.requests().len(),
        1,
        "a filtered prompt is not retried"
    );
}

#[tokio::test]
async fn azure_errors_keep_their_classes() {
    let rate = r#"{"error":{"code":"429","message":"Requests to the Responses_Create Operation under Azure OpenAI API version v1 have exceeded token rate limit of your current AIServices S0 pricing tier. Please retry after 1 second."}}"#;
    let auth = r#"{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}"#;
    let missing = r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}}"#;
    let server = serve(vec![
        Canned::error(429, rate).header("retry-after", "0"),
        Canned::sse(crate::responses::TEXT_AND_REASONING),
        Canned::error(401, auth),
        Canned::error(404, missing),
    ])
    .await;
    let client = azure(&server, "");
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello there!"
    );
    for (kind, words) in [
        (ErrorKind::Auth, "Access denied"),
        (ErrorKind::BadRequest, "DeploymentNotFound"),
    ] {
        let err = client
            .stream(hello(), CancellationToken::new())
            .await
            .err()
            .unwrap();
        assert_eq!(err.kind, kind, "{err}");
        assert!(err.message.contains(words), "{}", err.message);
    }
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn discovery_uses_the_v1_models_path_and_api_key() {
    let server = serve(vec![Canned::json(
        r#"{"data":[{"id":"gpt-5-mini","object":"model","created":1754524800,"capabilities":{"chat_completion":true,"completion":false,"embeddings":false,"fine_tune":false,"inference":true},"lifecycle_status":"generally-available","status":"succeeded"}],"object":"list"}"#,
    )])
    .await;
    let models = discover_models(&server.url(), ModelApi::AzureOpenaiResponses, Some(KEY))
        .await
        .unwrap();
    assert_eq!(models[0].id, "gpt-5-mini");
    assert_eq!(models[0].context_window_guess, 128_000);
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/openai/v1/models")
    );
    assert_eq!(request.headers["api-key"], KEY);
    assert!(!request.headers.contains_key("authorization"));
}
