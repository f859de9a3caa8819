//! The BrainPet panel: where it sits beside the transcript, what it says in each state of a
//! run, and how its face moves — all drawn on a `TestBackend` at chosen times.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_protocol::{FinalStatus, Role, TaskStatus, WorkerPhase};
use braincode_tui::app::{App, AppConfig};
use braincode_tui::pet::{ACTIVE_FRAME_MS, IDLE_FRAME_MS, Pet, PetStatus};
use braincode_tui::view::{draw, draw_with_pet, layout, pet_width, render_pet};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use crate::script::{SESSION, Script, T0};

type Agent = (Role, WorkerPhase, &'static str);
const LIBRARIAN: Agent = (Role::Librarian, WorkerPhase::Support, "ctx-librarian");
const PRIMARY: Agent = (Role::Backend, WorkerPhase::Primary, "ctx-primary");

const REQUEST: &str = "Add a rate limit to the login endpoint and cover it with a test";

fn app() -> App {
    App::new(AppConfig {
        session_id: SESSION.into(),
        permission: "default".into(),
        sandbox: "landlock".into(),
        brain: None,
    })
}

fn fed(script: &Script) -> App {
    let mut app = app();
    for event in script.events() {
        app.on_event(event);
    }
    app
}

/// The whole screen, with the pet when `pet` is given.
fn screen(app: &App, pet: Option<&Pet>, width: u16, height: u16, now: i64) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let areas = layout(frame.area(), 0, 0);
            match pet {
                Some(pet) => draw_with_pet(frame, areas.view, app, pet, T0 + now),
                None => draw(frame, areas.view, app, T0 + now),
            }
        })
        .unwrap();
    terminal.backend().to_string()
}

/// The panel alone, as wide as on a 120-column screen.
fn panel(app: &App, pet: &Pet, now: i64) -> String {
    let width = pet_width(120).unwrap();
    let mut terminal = Terminal::new(TestBackend::new(width, 10)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            render_pet(
                frame.buffer_mut(),
                area,
                &pet.status(app),
                pet.face(app, T0 + now),
            );
        })
        .unwrap();
    terminal.backend().to_string()
}

fn said(app: &App, pet: &Pet) -> (String, Vec<String>) {
    let PetStatus { status, lines, .. } = pet.status(app);
    (status, lines)
}

fn lines(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// A run that planned its todos and started the librarian.
fn started() -> Script {
    let mut s = Script::start(REQUEST);
    s.at(300).status("routing with routeBrain on local/smollm2");
    s.todos(&[
        ("find-handler", "Locate the login handler", Role::Librarian),
        (
            "add-limit",
            "Add a rate limit to POST /login",
            Role::Backend,
        ),
    ]);
    s.at(1_500).worker_start(
        LIBRARIAN.0,
        LIBRARIAN.1,
        LIBRARIAN.2,
        "Find the login handler and how requests reach it",
        "local/qwen2.5-coder",
    );
    s
}

/// [`started`], then a call of `tool` by the librarian.
fn running_tool(tool: &str, call_id: &str) -> Script {
    let mut s = started();
    s.at(2_000).tool_start(
        LIBRARIAN,
        call_id,
        tool,
        json!({"path": "src/routes/login.rs"}),
    );
    s
}

#[test]
fn panel_beside_a_transcript_at_120_columns() {
    let app = fed(&running_tool("read_file", "call-read-1"));
    insta::assert_snapshot!(screen(&app, Some(&Pet::new(true)), 120, 24, 2_500));
}

#[test]
fn panel_hidden_at_80_columns() {
    let app = fed(&running_tool("read_file", "call-read-1"));
    let with_pet = screen(&app, Some(&Pet::new(true)), 80, 24, 2_500);
    assert!(!with_pet.contains("brainpet"), "{with_pet}");
    // The transcript keeps every column, exactly as without a pet.
    assert_eq!(with_pet, screen(&app, None, 80, 24, 2_500));
    assert_eq!(pet_width(119), None);
}

#[test]
fn panel_width_follows_the_screen_within_its_bounds() {
    assert_eq!(pet_width(100), None);
    assert_eq!(pet_width(120), Some(40));
    assert_eq!(pet_width(130), Some(42));
    assert_eq!(pet_width(200), Some(42));
}

#[test]
fn idle_waits_for_a_prompt() {
    let app = app();
    let pet = Pet::new(true);
    assert_eq!(
        said(&app, &pet),
        ("idle".into(), lines(&["waiting for prompt"]))
    );
    insta::assert_snapshot!(panel(&app, &pet, 0));
}

#[test]
fn queued_prompts_are_counted() {
    let mut pet = Pet::new(true);
    pet.set_queued(2);
    // While idle (between two runs) and while a run is going.
    assert_eq!(said(&app(), &pet), ("idle".into(), lines(&["2 queued"])));
    let app = fed(&Script::start(REQUEST));
    assert_eq!(
        said(&app, &pet),
        ("watching run".into(), lines(&["2 queued"]))
    );
    insta::assert_snapshot!(panel(&app, &pet, 0));
}

#[test]
fn a_running_tool_gets_a_quip_of_its_category() {
    let cases = [
        ("exec_command", "call-1", "shell", "running exec_command"),
        ("git_diff", "call-2", "git", "running git_diff"),
        ("run_check", "call-3", "test", "running run_check"),
        ("grep", "call-4", "read", "running grep"),
        ("apply_patch", "call-5", "write", "running apply_patch"),
        (
            "mcp__web__fetch_url",
            "call-6",
            "other",
            "running mcp__web__fetch…",
        ),
    ];
    let pet = Pet::new(true);
    for (tool, call_id, category, expected) in cases {
        let app = fed(&running_tool(tool, call_id));
        let (status, said_lines) = said(&app, &pet);
        let quip = braincode_tui::pet::quip(tool, call_id);
        assert_eq!(
            braincode_tui::pet::ToolCategory::of(tool),
            category_named(category)
        );
        assert_eq!(status, expected);
        assert_eq!(said_lines, lines(&[quip]), "{tool}");
        insta::assert_snapshot!(format!("running_tool_{category}"), panel(&app, &pet, 2_500));
    }
}

fn category_named(name: &str) -> braincode_tui::pet::ToolCategory {
    use braincode_tui::pet::ToolCategory;
    match name {
        "shell" => ToolCategory::Shell,
        "git" => ToolCategory::Git,
        "test" => ToolCategory::Test,
        "read" => ToolCategory::Read,
        "write" => ToolCategory::Write,
        _ => ToolCategory::Other,
    }
}

#[test]
fn a_worker_at_work_is_named() {
    let app = fed(&started());
    assert_eq!(
        said(&app, &Pet::new(true)),
        (
            "librarian is working".into(),
            lines(&["Find the login handler and …"])
        )
    );
    insta::assert_snapshot!(panel(&app, &Pet::new(true), 1_600));
}

#[test]
fn a_failed_tool_says_so() {
    let mut s = running_tool("exec_command", "call-1");
    s.at(3_000).tool_end(
        LIBRARIAN,
        "call-1",
        "exec_command",
        "error: could not find `Cargo.toml`",
        true,
        1_000,
    );
    let app = fed(&s);
    assert_eq!(
        said(&app, &Pet::new(true)),
        (
            "exec_command failed".into(),
            lines(&["that did not go well", "the agent will see why"])
        )
    );
    insta::assert_snapshot!(panel(&app, &Pet::new(true), 3_100));
}

#[test]
fn a_finished_tool_says_so() {
    let mut s = running_tool("read_file", "call-1");
    s.at(2_200).tool_end(
        LIBRARIAN,
        "call-1",
        "read_file",
        "pub async fn login",
        false,
        200,
    );
    let app = fed(&s);
    assert_eq!(
        said(&app, &Pet::new(true)),
        ("read_file done".into(), lines(&["on to the next step"]))
    );
    insta::assert_snapshot!(panel(&app, &Pet::new(true), 2_300));
}

#[test]
fn a_todo_that_moves_is_named() {
    let mut s = running_tool("read_file", "call-1");
    s.at(4_000).todo(&["find-handler"], TaskStatus::Completed);
    let app = fed(&s);
    assert_eq!(
        said(&app, &Pet::new(true)),
        (
            "todo: Locate the login …".into(),
            lines(&["Locate the login handler", "now done"])
        )
    );
    insta::assert_snapshot!(panel(&app, &Pet::new(true), 4_100));
}

#[test]
fn the_streaming_answer_is_a_reply_being_drafted() {
    let mut s = running_tool("read_file", "call-1");
    s.at(6_000)
        .worker_start(
            PRIMARY.0,
            PRIMARY.1,
            PRIMARY.2,
            "Add a rate limit to POST /login",
            "openai/gpt-4.1",
        )
        .text("## Rate limit added\n\n`POST /login` now allows");
    let app = fed(&s);
    assert_eq!(
        said(&app, &Pet::new(true)),
        ("drafting reply".into(), lines(&["choosing the words"]))
    );
    insta::assert_snapshot!(panel(&app, &Pet::new(true), 6_100));

    // The answer given, the pet dozes off again.
    s.at(7_000)
        .finish("Rate limit added.", FinalStatus::Answered);
    let app = fed(&s);
    assert_eq!(
        said(&app, &Pet::new(true)),
        ("idle".into(), lines(&["waiting for prompt"]))
    );
}

/// The panel's face rows in a drawn screen.
fn face_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter(|l| l.contains("[ "))
        .filter_map(|l| l.rsplit_once('│').map(|(_, panel)| panel.to_string()))
        .collect()
}

#[test]
fn the_face_moves_only_with_animations_on() {
    // Times on frame boundaries, so each step is exactly one frame.
    let active = ACTIVE_FRAME_MS * 4 - T0.rem_euclid(ACTIVE_FRAME_MS);
    let running = fed(&started());
    let on = Pet::new(true);
    let off = Pet::new(false);
    let at = |app: &App, pet: &Pet, now: i64| face_rows(&screen(app, Some(pet), 120, 20, now));

    let first = at(&running, &on, active);
    assert_eq!(first, at(&running, &on, active + ACTIVE_FRAME_MS - 1));
    assert_ne!(first, at(&running, &on, active + ACTIVE_FRAME_MS));
    assert_eq!(
        at(&running, &off, active),
        at(&running, &off, active + ACTIVE_FRAME_MS)
    );

    // Idle, a frame lasts twice as long.
    let idle = IDLE_FRAME_MS * 4 - T0.rem_euclid(IDLE_FRAME_MS);
    let idle_app = app();
    let dozing = at(&idle_app, &on, idle);
    assert_eq!(dozing, at(&idle_app, &on, idle + ACTIVE_FRAME_MS));
    assert_ne!(dozing, at(&idle_app, &on, idle + IDLE_FRAME_MS));
    assert_eq!(
        at(&idle_app, &off, idle),
        at(&idle_app, &off, idle + IDLE_FRAME_MS)
    );
}

#[test]
fn the_pet_models_words_replace_the_fallback_while_the_request_runs() {
    let mut s = running_tool("read_file", "call-1");
    let mut pet = Pet::new(true);
    pet.set_queued(1);
    pet.set_model_reply(&braincode_runtime::PetReply {
        status: "reading login.rs".into(),
        lines: lines(&["one handler so far", "no limits in sight"]),
    });
    let app = fed(&s);
    assert_eq!(
        said(&app, &pet),
        (
            "reading login.rs".into(),
            lines(&["one handler so far", "no limits in sight", "1 queued"])
        )
    );
    insta::assert_snapshot!(panel(&app, &pet, 2_100));

    // Once the request has answered, the pet is idle whatever its model said last.
    s.at(7_000)
        .finish("Rate limit added.", FinalStatus::Answered);
    let app = fed(&s);
    assert_eq!(said(&app, &pet), ("idle".into(), lines(&["1 queued"])));

    // An error (or the end of the request) clears the model's words: the fallback speaks.
    pet.clear_model_reply();
    let app = fed(&running_tool("read_file", "call-1"));
    assert_eq!(said(&app, &pet).0, "running read_file");
}

#[test]
fn the_snapshot_tells_the_pet_model_the_newest_items_and_what_runs() {
    let app = fed(&running_tool("read_file", "call-read-1"));
    let snapshot = braincode_tui::pet::snapshot(&app, 2);
    assert_eq!(snapshot.queued, 2);
    assert_eq!(snapshot.state, "running tool read_file");
    assert_eq!(snapshot.active_tools, ["read_file"]);
    assert_eq!(
        snapshot.active_workers,
        ["librarian: Find the login handler and how requests reach it"]
    );
    assert_eq!(snapshot.items[0], format!("user: {REQUEST}"));
    assert!(
        snapshot
            .items
            .iter()
            .any(|i| i.starts_with("tool read_file") && i.ends_with("(running)")),
        "{:?}",
        snapshot.items
    );

    // Idle and empty: nothing to tell but that.
    let idle = braincode_tui::pet::snapshot(&app_idle(), 0);
    assert_eq!(idle.state, "idle");
    assert!(idle.items.is_empty());
}

fn app_idle() -> App {
    app()
}
