//! The session model fed by events: turns, tool calls, streamed text, selection, status.

use braincode_protocol::{AgentRef, JournalEntry, Phase, Role, RunEvent};
use serde_json::{Value, json};

use super::*;

fn record(timestamp: i64, mut value: Value) -> RunEvent {
    value["timestamp"] = json!(timestamp);
    let entry: JournalEntry = serde_json::from_value(value).unwrap();
    RunEvent::Record {
        session_id: "s".into(),
        entry: Box::new(entry),
    }
}

fn run_start(prompt: &str) -> RunEvent {
    record(
        1_000,
        json!({"type": "run_start", "prompt": prompt,
               "brain": {"id": "team", "name": "Team", "mode": "radical"}}),
    )
}

fn agent(role: Role, phase: Phase, context: &str) -> AgentRef {
    AgentRef {
        role,
        phase,
        context_id: context.into(),
        model: None,
    }
}

fn app() -> App {
    App::new(AppConfig {
        session_id: "s".into(),
        permission: "acceptEdits".into(),
        sandbox: "off".into(),
        brain: None,
    })
}

fn planned(app: &mut App) {
    app.on_event(&run_start("fix it"));
    app.on_event(&record(
        1_100,
        json!({"type": "routing", "source": "heuristic", "primaryRole": "backend",
               "reason": "r", "workers": [
                   {"role": "librarian", "phase": "support", "goal": "look", "contextId": "c1"},
                   {"role": "backend", "phase": "primary", "goal": "fix", "contextId": "c2"}]}),
    ));
}

#[test]
fn runs_open_turns_of_their_own_unless_one_was_begun() {
    let mut app = app();
    app.on_event(&run_start("from a replay"));
    assert_eq!(app.turns().len(), 1);
    assert_eq!(app.turns()[0].request(), "from a replay");
    app.on_event(&run_start("a second run"));
    assert_eq!(app.turns().len(), 2);
    app.begin_turn("typed");
    app.on_event(&run_start("typed"));
    assert_eq!(app.turns().len(), 3);
    assert!(app.turns()[2].has_run() && app.is_running());
}

#[test]
fn only_the_primary_streams_and_the_report_replaces_the_stream() {
    let mut app = app();
    planned(&mut app);
    let text = |role, phase, text: &str| RunEvent::TextDelta {
        agent: agent(role, phase, "c"),
        text: text.into(),
    };
    app.on_event(&text(Role::Librarian, Phase::Support, "worker talk "));
    app.on_event(&text(Role::Backend, Phase::Primary, "Hello "));
    app.on_event(&text(Role::Backend, Phase::Primary, "world"));
    assert_eq!(app.turns()[0].answer(), "Hello world");
    // A tool call between two replies: the next reply is its own paragraph.
    app.on_event(&RunEvent::ToolStarted {
        agent: agent(Role::Backend, Phase::Primary, "c"),
        call_id: "t9".into(),
        tool_name: "run_script".into(),
        summary: "test".into(),
    });
    app.on_event(&text(Role::Backend, Phase::Primary, "Running"));
    assert_eq!(app.turns()[0].answer(), "Hello world\n\nRunning");
    app.on_event(&text(Role::Backend, Phase::Primary, " the tests"));
    assert_eq!(app.turns()[0].answer(), "Hello world\n\nRunning the tests");
    let mut report = app.turns()[0].state().report();
    report.model_summary = "Final words".into();
    app.on_event(&RunEvent::Final {
        report: Box::new(report),
    });
    assert_eq!(app.turns()[0].answer(), "Final words");
    assert!(!app.is_running());
}

#[test]
fn tool_calls_come_from_events_and_records_alike() {
    let mut app = app();
    planned(&mut app);
    // Live: started and finished events around the records.
    app.on_event(&RunEvent::ToolStarted {
        agent: agent(Role::Backend, Phase::Primary, "c2"),
        call_id: "t1".into(),
        tool_name: "read_file".into(),
        summary: r#"{"path":"a.rs"}"#.into(),
    });
    app.on_event(&record(
        2_000,
        json!({"type": "tool_execution_summary", "toolCallId": "t1", "toolName": "read_file",
               "stage": "end", "taskId": "c2", "output": "fn a() {}", "durationMs": 7}),
    ));
    // Replayed: records only, and a refusal.
    app.on_event(&record(
        2_100,
        json!({"type": "tool_execution_summary", "toolCallId": "t2", "toolName": "shell",
               "stage": "start", "taskId": "c1", "argsSummary": {"command": "ls"}}),
    ));
    app.on_event(&record(
        2_200,
        json!({"type": "tool_approval_decision", "toolCallId": "t3", "toolName": "shell",
               "decision": "blocked", "approver": "human", "taskId": "c2",
               "reason": "interrupted by Esc", "argsSummary": {"command": "rm -rf x"}}),
    ));
    let tools = app.turns()[0].tools();
    assert_eq!(tools.len(), 3);
    assert_eq!(
        (
            tools[0].state,
            tools[0].output.as_deref(),
            tools[0].duration_ms
        ),
        (ToolState::Done, Some("fn a() {}"), Some(7))
    );
    assert_eq!(
        (tools[1].state, tools[1].started_at),
        (ToolState::Running, Some(2_100))
    );
    assert_eq!(tools[2].state, ToolState::Blocked);
    assert_eq!(tools[2].reason.as_deref(), Some("interrupted by Esc"));

    // Display order: each worker, then its calls.
    let keys: Vec<ItemKey> = app.turns()[0].items().iter().map(Item::key).collect();
    assert_eq!(
        keys,
        [
            ItemKey::Worker("c1".into()),
            ItemKey::Tool("t2".into()),
            ItemKey::Worker("c2".into()),
            ItemKey::Tool("t1".into()),
            ItemKey::Tool("t3".into()),
        ]
    );
}

#[test]
fn selection_walks_items_across_turns_and_toggles() {
    let mut app = app();
    assert!(!app.toggle_expanded());
    app.select_prev();
    assert!(app.selection().is_none());
    planned(&mut app);
    app.on_event(&run_start("second"));
    app.on_event(&record(
        3_000,
        json!({"type": "routing", "source": "heuristic", "primaryRole": "rush",
               "reason": "r", "workers": [
                   {"role": "rush", "phase": "primary", "goal": "g", "contextId": "d1"}]}),
    ));
    app.select_prev();
    let at = |app: &App| app.selection().map(|s| (s.turn, s.key.clone()));
    assert_eq!(at(&app), Some((1, ItemKey::Worker("d1".into()))));
    app.select_prev();
    assert_eq!(at(&app), Some((0, ItemKey::Worker("c2".into()))));
    app.select_next();
    app.select_next();
    assert_eq!(at(&app), Some((1, ItemKey::Worker("d1".into()))));
    let before = app.turns()[1].revisions();
    assert!(app.toggle_expanded());
    assert!(app.turns()[1].is_expanded(&ItemKey::Worker("d1".into())));
    assert_ne!(app.turns()[1].revisions(), before);
    assert!(app.toggle_expanded());
    assert!(!app.turns()[1].is_expanded(&ItemKey::Worker("d1".into())));
    app.clear_selection();
    assert!(app.selection().is_none());
}

#[test]
fn the_status_line_names_brain_models_and_tokens() {
    let mut app = app();
    let status = app.status_line();
    assert_eq!((status.brain, status.tokens), (None, 0));
    // Before any run, the configured Brain (not "no brain yet"); a generic name adds nothing.
    for (id, name, shown) in [
        ("fake", "Brain", "fake"),
        ("cloud", "Cloud team", "cloud (Cloud team)"),
    ] {
        app.set_configured_brain(Some(braincode_protocol::BrainRef {
            id: id.into(),
            name: name.into(),
            mode: braincode_protocol::Mode::Auto,
        }));
        assert_eq!(app.status_line().brain.as_deref(), Some(shown));
    }
    planned(&mut app);
    for (context, role, phase, model) in [
        ("c1", "librarian", "support", "local/small"),
        ("c2", "backend", "primary", "openai/big"),
    ] {
        app.on_event(&record(
            1_200,
            json!({"type": "worker_start", "phase": phase, "worker": role, "goal": "g",
                   "model": model, "agentSessionId": format!("{context}-1")}),
        ));
        app.on_event(&record(
            1_300,
            json!({"type": "token_usage", "taskId": context,
                   "usage": {"input": 100, "output": 50, "total": 150}}),
        ));
    }
    app.set_cost(Some(0.25));
    let status = app.status_line();
    // The id people type; a name that only repeats it adds nothing.
    assert_eq!(status.brain.as_deref(), Some("team"));
    assert_eq!(status.mode, Some(braincode_protocol::Mode::Radical));
    assert_eq!(
        status.models,
        [
            (Role::Backend, "openai/big".to_string()),
            (Role::Librarian, "local/small".to_string())
        ]
    );
    assert_eq!((status.tokens, status.cost), (300, Some(0.25)));
    assert_eq!(
        (status.permission.as_str(), status.sandbox.as_str()),
        ("acceptEdits", "off")
    );
    assert!(status.running);
}
