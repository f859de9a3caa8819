#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use braincode_protocol::{AgentRef, Role};
use serde_json::json;

fn record(value: Value) -> Record {
    let record: Record = serde_json::from_value(value).unwrap();
    assert!(!matches!(record, Record::Unknown(_)), "{record:?}");
    record
}

fn live() -> Translator {
    Translator::new(
        Telling::Live,
        Path::new("/nonexistent-home"),
        "s1",
        Path::new("/p"),
    )
}

fn primary_text(text: &str) -> RunEvent {
    RunEvent::TextDelta {
        agent: AgentRef {
            role: Role::Backend,
            phase: Phase::Primary,
            context_id: String::new(),
            model: None,
        },
        text: text.into(),
    }
}

fn texts(updates: &[SessionUpdate]) -> Vec<String> {
    updates
        .iter()
        .map(|update| match update {
            SessionUpdate::AgentMessageChunk(chunk) | SessionUpdate::AgentThoughtChunk(chunk) => {
                match &chunk.content {
                    ContentBlock::Text(text) => text.text.clone(),
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_answer_is_told_once_whatever_was_streamed() {
    // Streamed as it came: nothing more at the end.
    let mut streamed = live();
    streamed.event(&primary_text("Hello"));
    assert!(streamed.answer("Hello").is_empty());
    // Text before a tool call, then the answer: the answer ends the stream, nothing more.
    let mut tooled = live();
    tooled.event(&primary_text("Let me look."));
    tooled.paragraph = true;
    assert_eq!(texts(&tooled.event(&primary_text("Done."))), ["\n\nDone."]);
    assert!(tooled.answer("Done.").is_empty());
    // Nothing streamed: the whole answer.
    assert_eq!(texts(&live().answer("  The answer. ")), ["The answer."]);
    // The final answer is another text than the stream: it follows, once.
    let mut other = live();
    other.event(&primary_text("draft"));
    assert_eq!(texts(&other.answer("Final words")), ["\n\nFinal words"]);
    assert!(other.answer("Final words").is_empty());
}

#[test]
fn the_plan_is_the_whole_list_each_time_a_todo_moves() {
    let mut translator = live();
    let todo = |id: &str, title: &str, status: &str| json!({"id": id, "title": title, "role": "backend", "status": status});
    let plan = translator.record(&record(json!({"type": "todo_plan", "todos": [
        todo("t1", "read the code", "pending"), todo("t2", "fix it", "pending")
    ]})));
    let entries = |updates: &[SessionUpdate]| match &updates[0] {
        SessionUpdate::Plan(plan) => plan
            .entries
            .iter()
            .map(|e| (e.content.clone(), e.status.clone()))
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(entries(&plan).len(), 2);
    let moved = translator.record(&record(json!({"type": "todo_update", "phase": "primary",
        "status": "running", "todoIds": ["t1"]})));
    assert_eq!(
        entries(&moved),
        [
            ("read the code".to_string(), PlanEntryStatus::InProgress),
            ("fix it".to_string(), PlanEntryStatus::Pending)
        ]
    );
    let blocked = translator.record(&record(json!({"type": "todo_update", "phase": "primary",
        "status": "blocked", "todoIds": [], "todos": [
            {"id": "t2", "title": "fix it", "role": "backend", "status": "blocked", "reason": "tests fail"}
        ]})));
    assert_eq!(
        entries(&blocked)[1],
        (
            "fix it (blocked: tests fail)".to_string(),
            PlanEntryStatus::Completed
        )
    );
}

#[test]
fn a_command_is_shown_with_its_command_then_its_output() {
    let mut translator = live();
    let start = translator.record(&record(json!({"type": "tool_execution_summary",
        "toolCallId": "c1", "toolName": "shell", "stage": "start", "phase": "primary",
        "argsSummary": {"command": "cargo test\n--all"}})));
    let SessionUpdate::ToolCall(call) = &start[0] else {
        panic!("{start:?}")
    };
    assert_eq!(call.title, "shell: cargo test");
    assert_eq!(call.kind, ToolKind::Execute);
    assert_eq!(call.status, ToolCallStatus::InProgress);
    let end = translator.record(&record(json!({"type": "tool_execution_summary",
        "toolCallId": "c1", "toolName": "shell", "stage": "end", "isError": true,
        "output": "error: 1 test failed\n"})));
    let SessionUpdate::ToolCallUpdate(update) = &end[0] else {
        panic!("{end:?}")
    };
    assert_eq!(update.fields.status, Some(ToolCallStatus::Failed));
    let content = serde_json::to_string(&update.fields.content).unwrap();
    assert!(
        content.contains("```\\nerror: 1 test failed\\n```"),
        "{content}"
    );
}

#[test]
fn a_live_turn_does_not_echo_its_prompt_and_a_loaded_one_does() {
    let start = record(json!({"type": "run_start", "prompt": "fix the bug"}));
    assert!(live().record(&start).is_empty());
    let mut again = Translator::new(Telling::Again, Path::new("/h"), "s1", Path::new("/p"));
    assert!(matches!(
        &again.record(&start)[..],
        [SessionUpdate::UserMessageChunk(_)]
    ));
}

#[test]
fn an_edit_shows_the_whole_file_before_and_after_while_the_file_is_as_it_left_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("p");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let before = "fn a() {}\n";
    let after = "fn a() { b() }\n";
    let (before_hash, after_hash) = (
        braincode_runtime::sha256_hex(before.as_bytes()),
        braincode_runtime::sha256_hex(after.as_bytes()),
    );
    BlobStore::new(&home, "s1")
        .save(&before_hash, before.as_bytes())
        .unwrap();
    std::fs::write(project.join("src/a.rs"), after).unwrap();
    let change = record(
        json!({"type": "file_change", "path": "src/a.rs", "toolCallId": "e1",
        "beforeHash": before_hash, "afterHash": after_hash, "diff": "-fn a() {}\n+fn a() { b() }\n"}),
    );
    let translator = Translator::new(Telling::Live, &home, "s1", &project);
    let full = serde_json::to_value(translator.file_change(match &change {
        Record::FileChange(change) => change,
        _ => unreachable!(),
    }))
    .unwrap();
    assert_eq!(full[0]["content"][0]["type"], "diff", "{full}");
    assert_eq!(full[0]["content"][0]["oldText"], before);
    assert_eq!(full[0]["content"][0]["newText"], after);
    // The file moved on since: the journal's diff is shown instead of a wrong "after".
    std::fs::write(project.join("src/a.rs"), "changed again\n").unwrap();
    let Record::FileChange(change) = &change else {
        unreachable!()
    };
    let fallback = serde_json::to_string(&translator.file_change(change)).unwrap();
    assert!(fallback.contains("```diff"), "{fallback}");
}
