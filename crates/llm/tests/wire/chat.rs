//! OpenAI Chat Completions streams, byte-exact in the documented chunk format.

use braincode_llm::{ModelClient, ModelEvent, StopReason, ToolSpec, collect_stream};
use braincode_protocol::Usage;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, client, hello, serve};

pub const TEXT_STREAM: &str = concat!(
    "data: {\"id\":\"chatcmpl-9xAbC\",\"object\":\"chat.completion.chunk\",\"created\":1726000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_e2bde53e6e\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xAbC\",\"object\":\"chat.completion.chunk\",\"created\":1726000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_e2bde53e6e\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xAbC\",\"object\":\"chat.completion.chunk\",\"created\":1726000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_e2bde53e6e\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" wörld ✓\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xAbC\",\"object\":\"chat.completion.chunk\",\"created\":1726000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_e2bde53e6e\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xAbC\",\"object\":\"chat.completion.chunk\",\"created\":1726000000,\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_e2bde53e6e\",\"choices\":[],\"usage\":{\"prompt_tokens\":1250,\"completion_tokens\":4,\"total_tokens\":1254,\"prompt_tokens_details\":{\"cached_tokens\":1024,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0,\"audio_tokens\":0,\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}}\n\n",
    "data: [DONE]\n\n",
);

const REASONING_STREAM: &str = concat!(
    "data: {\"id\":\"5f1c\",\"object\":\"chat.completion.chunk\",\"created\":1737000000,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1c5d8833bc\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"5f1c\",\"object\":\"chat.completion.chunk\",\"created\":1737000000,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1c5d8833bc\",\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"reasoning_content\":\"The user greets\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"5f1c\",\"object\":\"chat.completion.chunk\",\"created\":1737000000,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1c5d8833bc\",\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"reasoning_content\":\"; answer briefly.\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"5f1c\",\"object\":\"chat.completion.chunk\",\"created\":1737000000,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1c5d8833bc\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi!\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":null}]}\n\n",
    "data: {\"id\":\"5f1c\",\"object\":\"chat.completion.chunk\",\"created\":1737000000,\"model\":\"deepseek-reasoner\",\"system_fingerprint\":\"fp_1c5d8833bc\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\",\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":20,\"total_tokens\":32,\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":17},\"prompt_cache_hit_tokens\":0,\"prompt_cache_miss_tokens\":12}}\n\n",
    "data: [DONE]\n\n",
);

pub const TOOL_STREAM: &str = concat!(
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_DdmO9pD3xa9XTPNJ32zg2hcA\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}],\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_ABc7hJr1qK1d2wSNc0pUyQ9u\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"pattern\\\": \"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\": \\\"src/lib.rs\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"fn main\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
    "data: {\"id\":\"chatcmpl-9xTool\",\"object\":\"chat.completion.chunk\",\"created\":1726000001,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[],\"usage\":{\"prompt_tokens\":90,\"completion_tokens\":41,\"total_tokens\":131,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n",
    "data: [DONE]\n\n",
);

#[tokio::test]
async fn plain_text_with_usage_chunk() {
    let server = serve(vec![Canned::sse(TEXT_STREAM)]).await;
    let client = client("openai-completions", &server, Some("sk-test-key"));
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.text, "Hello wörld ✓");
    assert_eq!(done.stop, Some(StopReason::EndTurn));
    // prompt_tokens include the cached ones: input = 1250 - 1024.
    assert_eq!(
        done.usage,
        Some(Usage {
            input: 226,
            output: 4,
            cache_read: 1024,
            cache_write: 0,
            total: 1254,
            reasoning: 0,
        })
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(request.headers["authorization"], "Bearer sk-test-key");
    assert_eq!(request.headers["accept"], "text/event-stream");
    assert!(request.headers["user-agent"].starts_with("BrainCode/"));
    assert_eq!(request.body["model"], "test-model");
    assert_eq!(request.body["stream"], true);
    assert_eq!(
        request.body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(
        request.body["messages"],
        json!([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say hello"}])
    );
}

#[tokio::test]
async fn chunk_boundaries_inside_lines_and_characters() {
    for size in [1, 3, 7, 64] {
        let server = serve(vec![Canned::sse(TEXT_STREAM).rechunked(size)]).await;
        let client = client("openai-completions", &server, None);
        let stream = client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap();
        let done = collect_stream(stream, |_| {}).await.unwrap();
        assert_eq!(done.text, "Hello wörld ✓", "chunk size {size}");
    }
}

#[tokio::test]
async fn reasoning_content_is_reasoning() {
    let server = serve(vec![Canned::sse(REASONING_STREAM)]).await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let mut order = Vec::new();
    let done = collect_stream(stream, |e| order.push(std::mem::discriminant(e)))
        .await
        .unwrap();
    assert_eq!(done.reasoning, "The user greets; answer briefly.");
    assert_eq!(done.text, "Hi!");
    assert_eq!(done.usage.unwrap().total, 32);
    assert_eq!(
        order.first(),
        Some(&std::mem::discriminant(&ModelEvent::ReasoningDelta {
            text: String::new()
        }))
    );
    // No key: no auth header (local servers).
    assert!(!server.requests()[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn two_interleaved_tool_calls() {
    let server = serve(vec![Canned::sse(TOOL_STREAM)]).await;
    let client = client("openai-completions", &server, None);
    let mut request = hello();
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.stop, Some(StopReason::ToolUse));
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].id, "call_DdmO9pD3xa9XTPNJ32zg2hcA");
    assert_eq!(done.tool_calls[0].name, "read_file");
    assert_eq!(done.tool_calls[0].arguments, json!({"path": "src/lib.rs"}));
    assert_eq!(done.tool_calls[1].name, "grep");
    assert_eq!(done.tool_calls[1].arguments, json!({"pattern": "fn main"}));
    assert_eq!(done.usage.unwrap().input, 90);
    let body = &server.requests()[0].body;
    assert_eq!(
        body["tools"][0],
        json!({"type": "function", "function": {"name": "read_file", "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}})
    );
}

#[tokio::test]
async fn custom_headers_and_ollama_style_base_url() {
    let server = serve(vec![Canned::sse(TEXT_STREAM)]).await;
    let mut definition =
        crate::common::definition("openai-completions", &format!("{}/", server.url()));
    definition
        .headers
        .insert("X-Title".into(), "braincode-tests".into());
    let client =
        braincode_llm::WireClient::new(&definition, None, crate::common::fast_options()).unwrap();
    assert_eq!(
        client.endpoint(),
        format!("{}/v1/chat/completions", server.url())
    );
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(server.requests()[0].headers["x-title"], "braincode-tests");
}
