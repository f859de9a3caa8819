//! SSE framing + delta assembly per chunk, for realistic Chat Completions and Anthropic
//! streams (text deltas and tool-call argument deltas). Goal: ≤ 5 µs per chunk.
//!
//! Each stream is fed one SSE event per network read, the way providers flush. Criterion's
//! throughput line reads as chunks per second; per-chunk time is its inverse.

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::collections::VecDeque;
use std::hint::black_box;

use braincode_llm::sse::SseParser;
use braincode_llm::wire::decoder_for;
use braincode_protocol::ModelApi;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

const WORDS: &[&str] = &[
    "The",
    " function",
    " `parse_config`",
    " reads",
    " the",
    " file,",
    " then",
    " validates",
    " each",
    " field",
    " and",
    " returns",
    " a",
    " typed",
    " value.",
    "\n\n",
    "Next",
    ",",
    " I'll",
    " update",
    " the",
    " tests",
    " to",
    " cover",
    " the",
    " empty",
    " case",
    ".",
];

const ARG_PIECES: &[&str] = &[
    "{\"",
    "path",
    "\":\"",
    "src/",
    "config",
    ".rs",
    "\",\"",
    "old",
    "_string",
    "\":\"",
    "fn parse",
    "(input: &str)",
    " -> Result<",
    "Config",
    ">",
    "\\n",
    "    let",
    " value",
    " = ",
    "serde_json",
    "::from_str",
    "(input)?;",
    "\",\"",
    "new",
    "_string",
    "\":\"",
    "fn parse",
    "(input: &str)",
    " -> Result<",
    "Config, Error",
    ">",
    "\"}",
];

fn chat_stream() -> Vec<Vec<u8>> {
    let head = r#"{"id":"chatcmpl-AZ9xQ2lT7","object":"chat.completion.chunk","created":1731000000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_45cf54deae","choices":[{"index":0,"delta":"#;
    let mut events = Vec::new();
    events.push(format!(
        "data: {head}{{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
    ));
    for i in 0..200 {
        let word = serde_json::to_string(WORDS[i % WORDS.len()]).unwrap_or_default();
        events.push(format!(
            "data: {head}{{\"content\":{word}}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ));
    }
    for call in 0..2 {
        events.push(format!(
            "data: {head}{{\"tool_calls\":[{{\"index\":{call},\"id\":\"call_{call}abcdefghijklmnop\",\"type\":\"function\",\"function\":{{\"name\":\"edit_file\",\"arguments\":\"\"}}}}]}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
        ));
        for piece in ARG_PIECES {
            let piece = serde_json::to_string(piece).unwrap_or_default();
            events.push(format!(
                "data: {head}{{\"tool_calls\":[{{\"index\":{call},\"function\":{{\"arguments\":{piece}}}}}]}},\"logprobs\":null,\"finish_reason\":null}}],\"usage\":null}}\n\n"
            ));
        }
    }
    events.push(format!(
        "data: {head}{{}},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}}],\"usage\":null}}\n\n"
    ));
    events.push("data: {\"id\":\"chatcmpl-AZ9xQ2lT7\",\"object\":\"chat.completion.chunk\",\"created\":1731000000,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[],\"usage\":{\"prompt_tokens\":5120,\"completion_tokens\":260,\"total_tokens\":5380,\"prompt_tokens_details\":{\"cached_tokens\":4096}}}\n\n".to_string());
    events.push("data: [DONE]\n\n".to_string());
    events.into_iter().map(String::into_bytes).collect()
}

fn anthropic_stream() -> Vec<Vec<u8>> {
    let mut events = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01XFDUDYJgAACzvnptvVoYEL\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5-20250929\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1025,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":4096,\"output_tokens\":1}}}\n\n".to_string(),
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n".to_string(),
        "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_string(),
    ];
    for i in 0..200 {
        let word = serde_json::to_string(WORDS[i % WORDS.len()]).unwrap_or_default();
        events.push(format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":{word}}}}}\n\n"
        ));
    }
    events.push(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
            .to_string(),
    );
    for block in 1..3 {
        events.push(format!(
            "event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{block},\"content_block\":{{\"type\":\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up{block}\",\"name\":\"edit_file\",\"input\":{{}}}}}}\n\n"
        ));
        for piece in ARG_PIECES {
            let piece = serde_json::to_string(piece).unwrap_or_default();
            events.push(format!(
                "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":{block},\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":{piece}}}}}\n\n"
            ));
        }
        events.push(format!(
            "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":{block}}}\n\n"
        ));
    }
    events.push("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":260}}\n\n".to_string());
    events.push("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_string());
    events.into_iter().map(String::into_bytes).collect()
}

/// Runs one whole stream through framing and decoding; returns the events produced.
fn decode(api: ModelApi, chunks: &[Vec<u8>]) -> usize {
    let Some(mut decoder) = decoder_for(api) else {
        return 0;
    };
    let mut parser = SseParser::new();
    let mut queue = VecDeque::new();
    let mut produced = 0;
    for chunk in chunks {
        parser.feed(chunk);
        while let Some(event) = parser.next_event() {
            if decoder.on_event(&event, &mut queue).is_err() {
                return 0;
            }
            produced += queue.len();
            for event in queue.drain(..) {
                black_box(event);
            }
        }
    }
    produced
}

fn bench(c: &mut Criterion) {
    for (name, api, chunks) in [
        (
            "chat_completions",
            ModelApi::OpenaiCompletions,
            chat_stream(),
        ),
        (
            "anthropic_messages",
            ModelApi::AnthropicMessages,
            anthropic_stream(),
        ),
    ] {
        assert!(decode(api, &chunks) > 200, "{name} stream must decode");
        let mut group = c.benchmark_group("sse_decode_per_chunk");
        group.throughput(Throughput::Elements(chunks.len() as u64));
        group.bench_function(name, |b| b.iter(|| decode(api, black_box(&chunks))));
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
