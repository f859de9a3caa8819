//! How long compacting a 200-turn agent loop takes without a model (goal: ≤ 5 ms).
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use braincode_llm::{ChatMessage, ToolCall};
use braincode_runtime::{CompactAsk as Ask, CompactionPolicy, compact};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

/// The request, then 200 turns: a read of a 4 KB file each, every seventh failing.
fn conversation() -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::user_text(format!(
        "Fix the parser.\n\nAGENTS.md:\n{}",
        "Always run the tests. ".repeat(200)
    ))];
    for turn in 0..200 {
        let id = format!("call_{turn}");
        let arguments = json!({"path": format!("src/module_{turn}.rs")});
        messages.push(ChatMessage::Assistant {
            text: format!("Looking at module {turn} for the off-by-one."),
            tool_calls: vec![ToolCall {
                id: id.clone(),
                name: "read_file".into(),
                raw_arguments: arguments.to_string(),
                arguments,
                argument_error: None,
                signature: None,
            }],
        });
        messages.push(ChatMessage::Tool {
            call_id: id,
            name: "read_file".into(),
            content: "fn parse(input: &str) -> usize { input.len() }\n".repeat(85),
            is_error: turn % 7 == 3,
        });
    }
    messages
}

fn bench(c: &mut Criterion) {
    let messages = conversation();
    let policy = CompactionPolicy::for_window(128_000, 120_000, 0.8);
    c.bench_function("compact_200_turns", |b| {
        b.iter(|| {
            let done = compact(
                "You are the backend agent.",
                "",
                black_box(&messages),
                &policy,
                Ask::AtTrigger,
            )
            .unwrap();
            black_box(done.tokens_after)
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
