//! Redraw speed of a long session: a 10,000-row transcript drawn on a `TestBackend`.
//!
//! The goal is a redraw of about 2 ms or less whatever the transcript's length: each turn's
//! rows are built once per change, and a redraw only copies the visible ones.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "../tests/script/mod.rs"]
mod script;

use std::hint::black_box;

use braincode_protocol::{FinalStatus, Phase, Role, RoutingSource, RunEvent, WorkerPhase};
use braincode_tui::app::{App, AppConfig};
use braincode_tui::view::{draw, layout};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use script::{SESSION, Script, T0};

const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// Rows the transcript must have, at least.
const ROWS: usize = 10_000;

/// One turn's answer: prose, a list and a code block, about 250 rows at 120 columns.
fn answer(turn: usize) -> String {
    let mut text = format!("## Step {turn}\n\n");
    for paragraph in 0..12 {
        text.push_str(&format!(
            "Paragraph {paragraph} explains what changed in `module_{turn}` and **why**: the \
             handler now validates its input before it reaches the store, and the tests cover \
             the failure paths that were missing before this change.\n\n"
        ));
    }
    for item in 0..20 {
        text.push_str(&format!(
            "- item {item}: `fn_{item}` keeps its *contract*\n"
        ));
    }
    text.push_str("\n```rust\n");
    for line in 0..160 {
        text.push_str(&format!(
            "    let value_{line} = compute({line}, \"label\"); // step {line}\n"
        ));
    }
    text.push_str("```\n");
    text
}

fn turn(app: &mut App, index: usize) {
    let agent = (Role::Backend, WorkerPhase::Primary, "ctx-primary");
    let mut s = Script::start(&format!("request number {index}: change the handler"));
    s.at(500).routing(
        RoutingSource::Heuristic,
        None,
        "one backend change",
        &[(agent.0, agent.1, agent.2, "change the handler")],
    );
    s.at(600)
        .worker_start(
            agent.0,
            agent.1,
            agent.2,
            "change the handler",
            "openai/gpt-4.1",
        )
        .tool_start(
            agent,
            "call-1",
            "read_file",
            json!({"path": "src/handler.rs"}),
        )
        .tool_end(agent, "call-1", "read_file", "fn handler() {}", false, 9);
    s.at(2_000).tokens(agent.0, agent.1, agent.2, 3_000);
    s.at(3_000).finish(&answer(index), FinalStatus::Answered);
    app.begin_turn(format!("request number {index}: change the handler"));
    for event in s.events() {
        app.on_event(event);
    }
}

fn session() -> (App, Terminal<TestBackend>) {
    let mut app = App::new(AppConfig {
        session_id: SESSION.into(),
        permission: "default".into(),
        sandbox: "landlock".into(),
        brain: None,
    });
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT)).unwrap();
    let mut index = 0;
    loop {
        turn(&mut app, index);
        index += 1;
        redraw(&mut terminal, &app);
        app.scroll_to_top();
        redraw(&mut terminal, &app);
        let rows = app.scroll_offset() + usize::from(HEIGHT - 1);
        app.scroll_to_bottom();
        if rows >= ROWS {
            return (app, terminal);
        }
    }
}

fn redraw(terminal: &mut Terminal<TestBackend>, app: &App) {
    terminal
        .draw(|frame| {
            let areas = layout(frame.area(), 0, 0);
            draw(frame, areas.view, app, T0 + 60_000);
        })
        .unwrap();
}

fn benches(c: &mut Criterion) {
    let (mut app, mut terminal) = session();
    c.bench_function("redraw 10k rows, following", |b| {
        b.iter(|| redraw(&mut terminal, black_box(&app)));
    });

    app.scroll_up(5_000);
    c.bench_function("redraw 10k rows, scrolled to the middle", |b| {
        b.iter(|| redraw(&mut terminal, black_box(&app)));
    });
    app.scroll_to_bottom();

    // A run streams into a new turn whose answer is already long (about 250 rows): each
    // redraw follows one more delta, a paragraph break now and then.
    app.begin_turn("one more");
    let delta = |text: &str| RunEvent::TextDelta {
        agent: braincode_protocol::AgentRef {
            role: Role::Backend,
            phase: Phase::Primary,
            context_id: "ctx-primary".into(),
            model: None,
        },
        text: text.into(),
    };
    app.on_event(&delta(&answer(0)));
    let (word, paragraph) = (delta("streamed "), delta("words.\n\n"));
    let mut count = 0u32;
    c.bench_function("redraw 10k rows, streaming a delta", |b| {
        b.iter(|| {
            count += 1;
            app.on_event(if count.is_multiple_of(40) {
                &paragraph
            } else {
                &word
            });
            redraw(&mut terminal, black_box(&app));
        });
    });
}

criterion_group!(redraw_benches, benches);
criterion_main!(redraw_benches);
