use super::*;
use proptest::prelude::*;
use serde_json::json;

fn call(id: &str, name: &str, path: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: json!({"path": path}),
        raw_arguments: json!({"path": path}).to_string(),
        argument_error: None,
        signature: None,
    }
}

/// A conversation: the request, `turns` tool turns with outputs of `sizes`, and optionally a
/// later user message (a fix pass).
fn conversation(sizes: &[usize], latest: Option<&str>) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::user_text(
        "REQUEST: fix the parser.\n\nAGENTS.md: always run the tests.",
    )];
    for (turn, size) in sizes.iter().enumerate() {
        let id = format!("c{turn}");
        messages.push(ChatMessage::Assistant {
            text: format!("Reading part {turn}."),
            tool_calls: vec![call(&id, "read_file", &format!("src/part{turn}.rs"))],
        });
        messages.push(ChatMessage::Tool {
            call_id: id,
            name: "read_file".into(),
            content: "x".repeat(*size),
            is_error: turn % 7 == 3,
        });
        if turn == sizes.len() / 2
            && let Some(latest) = latest
        {
            messages.push(ChatMessage::Assistant {
                text: "Done.".into(),
                tool_calls: vec![],
            });
            messages.push(ChatMessage::user_text(latest));
        }
    }
    messages
}

fn user_texts(messages: &[ChatMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } => match content.first() {
                Some(ContentPart::Text { text }) => Some(text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

const POLICY: CompactionPolicy = CompactionPolicy {
    trigger_tokens: 2_000,
    keep_recent_tokens: 1_000,
};

#[test]
fn the_trigger_follows_the_window_not_a_small_number() {
    let large = CompactionPolicy::for_window(1_000_000, 0, 0.8);
    assert_eq!(large.trigger_tokens, 800_000);
    assert_eq!(large.keep_recent_tokens, 20_000);
    let capped = CompactionPolicy::for_window(200_000, 120_000, 0.8);
    assert_eq!(capped.trigger_tokens, 96_000);
    let clamped = CompactionPolicy::for_window(100_000, 0, 5.0);
    assert_eq!(clamped.trigger_tokens, 95_000);
}

#[test]
fn a_small_conversation_is_left_alone() {
    let messages = conversation(&[10, 10], None);
    assert_eq!(
        compact("system", "", &messages, &POLICY, Ask::AtTrigger),
        Err(NotCompacted::Small)
    );
}

#[test]
fn a_request_too_big_to_shrink_is_not_compacted() {
    let messages = vec![ChatMessage::user_text("y".repeat(40_000))];
    assert_eq!(
        compact("system", "", &messages, &POLICY, Ask::AtTrigger),
        Err(NotCompacted::NothingToDrop)
    );
}

#[test]
fn the_summary_names_each_call_and_its_outcome() {
    let messages = conversation(&[3_000, 3_000, 3_000, 3_000, 3_000], None);
    let done = compact("system", "", &messages, &POLICY, Ask::AtTrigger).unwrap();
    assert!(
        done.summary
            .contains("read_file(src/part0.rs) → 3000 chars"),
        "{}",
        done.summary
    );
    assert!(
        done.summary.contains("said: Reading part 0."),
        "{}",
        done.summary
    );
    assert!(done.summary.contains("error: "), "{}", done.summary);
    let system = system_with_summary("ROLE PROMPT", &done.summary);
    assert!(system.starts_with("ROLE PROMPT\n\n## Summary of earlier turns"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn instructions_and_the_latest_request_survive_and_the_result_shrinks(
        sizes in proptest::collection::vec(200usize..6_000, 3..40),
        latest in proptest::option::of("[a-z ]{5,60}"),
    ) {
        let messages = conversation(&sizes, latest.as_deref());
        let before = user_texts(&messages);
        let Ok(done) = compact("SYSTEM", "", &messages, &POLICY, Ask::AtTrigger) else {
            return Ok(());
        };
        // Smaller, and no new user turn: every user message is one of the originals.
        prop_assert!(done.tokens_after < done.tokens_before);
        let after = user_texts(&done.messages);
        prop_assert_eq!(&after[0], &before[0]);
        if let Some(latest) = &latest {
            prop_assert!(after.contains(latest));
        }
        for text in &after {
            prop_assert!(before.contains(text));
        }
        // Every tool result still follows the call it answers.
        let mut calls = std::collections::HashSet::new();
        for message in &done.messages {
            match message {
                ChatMessage::Assistant { tool_calls, .. } => {
                    calls.extend(tool_calls.iter().map(|c| c.id.clone()));
                }
                ChatMessage::Tool { call_id, .. } => prop_assert!(calls.contains(call_id)),
                ChatMessage::User { .. } => {}
            }
        }
        // The summary is bounded and marked.
        prop_assert!(done.summary.len() <= SUMMARY_MAX_CHARS + 64);
        prop_assert!(done.summary.lines().all(|l| l.chars().count() <= SUMMARY_LINE_MAX_CHARS));
    }

    #[test]
    fn repeated_compaction_converges(
        sizes in proptest::collection::vec(500usize..4_000, 10..60),
    ) {
        let mut messages = conversation(&sizes, Some("now fix the test"));
        let mut summary = String::new();
        let mut last = usize::MAX;
        for _ in 0..8 {
            match compact("SYSTEM", &summary, &messages, &POLICY, Ask::Harder) {
                Ok(done) => {
                    prop_assert!(done.tokens_after <= last);
                    last = done.tokens_after;
                    summary = done.summary;
                    messages = done.messages;
                }
                Err(_) => break,
            }
            prop_assert!(summary.len() <= SUMMARY_MAX_CHARS + 64);
        }
        // Converged: one more pass drops nothing more.
        prop_assert!(compact("SYSTEM", &summary, &messages, &POLICY, Ask::Harder).is_err()
            || messages.len() <= 6);
    }
}
