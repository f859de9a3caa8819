//! The shared scripted server speaks every wire: one scripted reply, rendered in each wire's
//! format, reaches the caller through our own client as the same events, and the request
//! each client sends reads the same to the script's matchers.

use braincode_llm::{
    ChatMessage, ChatRequest, ModelClient, StopReason, ToolCall, ToolSpec, collect_stream,
};
use braincode_protocol::Usage;
use braincode_test_support::{Matcher, Reply, Script};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{ScriptedServer, client};

const APIS: [&str; 5] = [
    "openai-completions",
    "openai-responses",
    "azure-openai-responses",
    "anthropic-messages",
    "google-generative-ai",
];

/// A tool turn: the model asked for `read_file`, and its result is the last message.
fn tool_turn() -> ChatRequest {
    ChatRequest {
        system: Some("You are terse.".into()),
        messages: vec![
            ChatMessage::user_text("Read a.rs"),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall::from_raw(
                    "call_1",
                    "read_file",
                    r#"{"path":"a.rs"}"#,
                )],
            },
            ChatMessage::Tool {
                call_id: "call_1".into(),
                name: "read_file".into(),
                content: "fn main() {}".into(),
                is_error: false,
            },
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        ..ChatRequest::default()
    }
}

fn script() -> Script {
    Script::new().when_fn(Matcher::system_contains("terse"), |request| {
        if !request.is_tool_turn() {
            return Reply::text("no tool result yet");
        }
        Reply::default()
            .with_reasoning("Reading it.")
            .with_text(format!("saw {}", request.tool_results().join(",")))
            .with_text(format!(" after {:?}", request.first_user_text()))
            .with_tool_call("grep", json!({"pattern": "main"}))
            .with_call_id("call_grep")
            .with_usage(Usage::new(40, 12, 8, 0))
    })
}

#[tokio::test]
async fn one_scripted_reply_reads_the_same_on_every_wire() {
    for api in APIS {
        let server = ScriptedServer::start(script()).await;
        let client = client(api, &server, Some("k"));
        let stream = client
            .stream(tool_turn(), CancellationToken::new())
            .await
            .unwrap_or_else(|err| panic!("{api}: {err:?}"));
        let done = collect_stream(stream, |_| {})
            .await
            .unwrap_or_else(|err| panic!("{api}: {err:?}"));
        assert_eq!(done.text, "saw fn main() {} after \"Read a.rs\"", "{api}");
        assert_eq!(done.reasoning, "Reading it.", "{api}");
        assert_eq!(done.stop, Some(StopReason::ToolUse), "{api}");
        let calls: Vec<_> = (done.tool_calls.iter())
            .map(|c| (c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(calls, vec![("grep", json!({"pattern": "main"}))], "{api}");
        let usage = done.usage.unwrap_or_else(|| panic!("{api}: no usage"));
        assert_eq!(
            (usage.input, usage.output, usage.cache_read),
            (40, 12, 8),
            "{api}"
        );
        let requests = server.chat_requests();
        assert_eq!(requests.len(), 1, "{api}");
        assert_eq!(requests[0].summary().tools, vec!["read_file"], "{api}");
        assert_eq!(server.unmatched(), 0, "{api}");
    }
}

#[tokio::test]
async fn a_plain_text_reply_ends_the_turn_on_every_wire() {
    for api in APIS {
        let server =
            ScriptedServer::start(Script::replies([Reply::text_chunks(["Hel", "lo"])])).await;
        let client = client(api, &server, Some("k"));
        let stream = client
            .stream(crate::common::hello(), CancellationToken::new())
            .await
            .unwrap_or_else(|err| panic!("{api}: {err:?}"));
        let done = collect_stream(stream, |_| {})
            .await
            .unwrap_or_else(|err| panic!("{api}: {err:?}"));
        assert_eq!(done.text, "Hello", "{api}");
        assert_eq!(done.stop, Some(StopReason::EndTurn), "{api}");
        let summary = server.chat_requests()[0].summary();
        assert_eq!(summary.system, "You are terse.", "{api}");
        assert_eq!(summary.first_user, "Say hello", "{api}");
    }
}
