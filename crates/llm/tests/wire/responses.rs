//! OpenAI Responses API streams, byte-exact in the documented semantic-event format.

use braincode_llm::{ErrorKind, ModelClient, StopReason, collect_stream};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, client, hello, serve};

pub const TEXT_AND_REASONING: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_68af01\",\"object\":\"response\",\"created_at\":1756000000,\"status\":\"in_progress\",\"error\":null,\"incomplete_details\":null,\"instructions\":\"You are terse.\",\"model\":\"gpt-5-mini-2025-08-07\",\"output\":[],\"usage\":null}}\n\n",
    "event: response.in_progress\n",
    "data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_68af01\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"id\":\"rs_68af02\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
    "event: response.reasoning_summary_part.added\n",
    "data: {\"type\":\"response.reasoning_summary_part.added\",\"sequence_number\":3,\"item_id\":\"rs_68af02\",\"output_index\":0,\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":\"\"}}\n\n",
    "event: response.reasoning_summary_text.delta\n",
    "data: {\"type\":\"response.reasoning_summary_text.delta\",\"sequence_number\":4,\"item_id\":\"rs_68af02\",\"output_index\":0,\"summary_index\":0,\"delta\":\"**Greeting** the user\",\"obfuscation\":\"x1\"}\n\n",
    "event: response.reasoning_summary_text.done\n",
    "data: {\"type\":\"response.reasoning_summary_text.done\",\"sequence_number\":5,\"item_id\":\"rs_68af02\",\"output_index\":0,\"summary_index\":0,\"text\":\"**Greeting** the user\"}\n\n",
    "event: response.output_item.done\n",
    "data: {\"type\":\"response.output_item.done\",\"sequence_number\":6,\"output_index\":0,\"item\":{\"id\":\"rs_68af02\",\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"**Greeting** the user\"}]}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":7,\"output_index\":1,\"item\":{\"id\":\"msg_68af03\",\"type\":\"message\",\"status\":\"in_progress\",\"content\":[],\"role\":\"assistant\"}}\n\n",
    "event: response.content_part.added\n",
    "data: {\"type\":\"response.content_part.added\",\"sequence_number\":8,\"item_id\":\"msg_68af03\",\"output_index\":1,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"\"}}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":9,\"item_id\":\"msg_68af03\",\"output_index\":1,\"content_index\":0,\"delta\":\"Hello\",\"logprobs\":[],\"obfuscation\":\"ab\"}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":10,\"item_id\":\"msg_68af03\",\"output_index\":1,\"content_index\":0,\"delta\":\" there!\",\"logprobs\":[],\"obfuscation\":\"cd\"}\n\n",
    "event: response.output_text.done\n",
    "data: {\"type\":\"response.output_text.done\",\"sequence_number\":11,\"item_id\":\"msg_68af03\",\"output_index\":1,\"content_index\":0,\"text\":\"Hello there!\",\"logprobs\":[]}\n\n",
    "event: response.content_part.done\n",
    "data: {\"type\":\"response.content_part.done\",\"sequence_number\":12,\"item_id\":\"msg_68af03\",\"output_index\":1,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"Hello there!\"}}\n\n",
    "event: response.output_item.done\n",
    "data: {\"type\":\"response.output_item.done\",\"sequence_number\":13,\"output_index\":1,\"item\":{\"id\":\"msg_68af03\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"Hello there!\"}],\"role\":\"assistant\"}}\n\n",
    "event: response.completed\n",
    "data: {\"type\":\"response.completed\",\"sequence_number\":14,\"response\":{\"id\":\"resp_68af01\",\"object\":\"response\",\"status\":\"completed\",\"error\":null,\"incomplete_details\":null,\"output\":[],\"usage\":{\"input_tokens\":2048,\"input_tokens_details\":{\"cached_tokens\":1920},\"output_tokens\":35,\"output_tokens_details\":{\"reasoning_tokens\":28},\"total_tokens\":2083}}}\n\n",
);

const TWO_CALLS: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[],\"usage\":null}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"id\":\"fc_01\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_read\",\"name\":\"read_file\"}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":1,\"item\":{\"id\":\"fc_02\",\"type\":\"function_call\",\"status\":\"in_progress\",\"arguments\":\"\",\"call_id\":\"call_grep\",\"name\":\"grep\"}}\n\n",
    "event: response.function_call_arguments.delta\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":3,\"item_id\":\"fc_01\",\"output_index\":0,\"delta\":\"{\\\"path\\\":\",\"obfuscation\":\"q\"}\n\n",
    "event: response.function_call_arguments.delta\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":4,\"item_id\":\"fc_02\",\"output_index\":1,\"delta\":\"{\\\"pattern\\\":\\\"todo\\\"}\",\"obfuscation\":\"r\"}\n\n",
    "event: response.function_call_arguments.delta\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":5,\"item_id\":\"fc_01\",\"output_index\":0,\"delta\":\"\\\"a.rs\\\"}\",\"obfuscation\":\"s\"}\n\n",
    "event: response.function_call_arguments.done\n",
    "data: {\"type\":\"response.function_call_arguments.done\",\"sequence_number\":6,\"item_id\":\"fc_01\",\"output_index\":0,\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\"}\n\n",
    "event: response.output_item.done\n",
    "data: {\"type\":\"response.output_item.done\",\"sequence_number\":7,\"output_index\":0,\"item\":{\"id\":\"fc_01\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\",\"call_id\":\"call_read\",\"name\":\"read_file\"}}\n\n",
    "event: response.function_call_arguments.done\n",
    "data: {\"type\":\"response.function_call_arguments.done\",\"sequence_number\":8,\"item_id\":\"fc_02\",\"output_index\":1,\"arguments\":\"{\\\"pattern\\\":\\\"todo\\\"}\"}\n\n",
    "event: response.completed\n",
    "data: {\"type\":\"response.completed\",\"sequence_number\":9,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":80,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":30,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":110}}}\n\n",
);

#[tokio::test]
async fn text_reasoning_and_cached_usage() {
    let server = serve(vec![Canned::sse(TEXT_AND_REASONING)]).await;
    let client = client("openai-responses", &server, Some("sk-r"));
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.text, "Hello there!");
    assert_eq!(done.reasoning, "**Greeting** the user");
    assert_eq!(done.stop, Some(StopReason::EndTurn));
    let usage = done.usage.unwrap();
    assert_eq!(
        (usage.input, usage.cache_read, usage.output, usage.total),
        (128, 1920, 35, 2083)
    );

    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.headers["authorization"], "Bearer sk-r");
    assert_eq!(request.body["instructions"], "You are terse.");
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["input"],
        json!([{"role": "user", "content": [{"type": "input_text", "text": "Say hello"}]}])
    );
}

#[tokio::test]
async fn two_interleaved_function_calls() {
    let server = serve(vec![Canned::sse(TWO_CALLS).rechunked(5)]).await;
    let client = client("openai-responses", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.stop, Some(StopReason::ToolUse));
    let calls: Vec<_> = done
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("call_read", "read_file", json!({"path": "a.rs"})),
            ("call_grep", "grep", json!({"pattern": "todo"})),
        ]
    );
}

#[tokio::test]
async fn failed_response_is_a_classified_error() {
    let failed = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_2\",\"status\":\"in_progress\"}}\n\n",
        "event: response.failed\n",
        "data: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_2\",\"status\":\"failed\",\"error\":{\"code\":\"invalid_prompt\",\"message\":\"Invalid prompt: flagged.\"}}}\n\n",
    );
    let server = serve(vec![Canned::sse(failed)]).await;
    let client = client("openai-responses", &server, None);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(
        err.message.contains("Invalid prompt: flagged."),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 1, "a bad request is not retried");
}
