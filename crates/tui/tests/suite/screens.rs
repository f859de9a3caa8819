//! What the user sees: the screen drawn from scripted runs (real records, real fold) on a
//! `TestBackend`, snapshot by snapshot.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_protocol::{FinalStatus, Role, RoutingSource, TaskStatus, WorkerPhase};
use braincode_tui::app::{App, AppConfig, ItemKey};
use braincode_tui::view::{draw, layout};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use crate::script::{SESSION, Script, T0};

type Agent = (Role, WorkerPhase, &'static str);
const LIBRARIAN: Agent = (Role::Librarian, WorkerPhase::Support, "ctx-librarian");
const QA: Agent = (Role::Qa, WorkerPhase::Support, "ctx-qa");
const PRIMARY: Agent = (Role::Backend, WorkerPhase::Primary, "ctx-primary");
const REVIEW: Agent = (Role::Review, WorkerPhase::Review, "ctx-review");

const REQUEST: &str = "Add a rate limit to the login endpoint and cover it with a test";

const ANSWER: &str = "## Rate limit added

`POST /login` now allows **5 attempts per minute** per client IP; the sixth gets \
`429 Too Many Requests` with a `Retry-After` header.

- The limiter lives in `src/limits.rs` (a token bucket, in memory).
- The handler checks it *before* touching the database.
- The QA worker timed out, so I wrote the regression test myself.

```rust
pub fn check(&self, ip: IpAddr) -> Result<(), Limited> {
    let mut buckets = self.buckets.lock();
    // one token per attempt
    buckets.entry(ip).or_insert_with(Bucket::full).take()
}
```

Run `cargo test -p api login_rate_limit` to check it.
";

const TEST_OUTPUT: &str = "   Compiling api v0.3.0 (/work/api)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 4.21s
     Running unittests src/lib.rs (target/debug/deps/api-5c1d)

running 9 tests
test limits::tests::bucket_starts_full ... ok
test limits::tests::bucket_refills_over_time ... ok
test limits::tests::sixth_attempt_is_limited ... ok
test routes::login::tests::accepts_valid_credentials ... ok
test routes::login::tests::rejects_bad_password ... ok
test routes::login::tests::login_rate_limit ... ok
test routes::login::tests::retry_after_header ... ok
test routes::health::tests::ok ... ok
test routes::session::tests::expires ... ok

test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out";

fn app() -> App {
    App::new(AppConfig {
        session_id: SESSION.into(),
        permission: "default".into(),
        sandbox: "landlock".into(),
        brain: None,
    })
}

fn screen(app: &App, width: u16, height: u16, now: i64) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let areas = layout(frame.area(), 0, 0);
            draw(frame, areas.view, app, T0 + now);
        })
        .unwrap();
    terminal.backend().to_string()
}

fn feed(app: &mut App, script: &Script) {
    for event in script.events() {
        app.on_event(event);
    }
}

fn select(app: &mut App, key: &ItemKey) {
    app.clear_selection();
    for _ in 0..64 {
        if app.selection().is_some_and(|s| &s.key == key) {
            return;
        }
        app.select_prev();
    }
    panic!("{key:?} is not selectable");
}

fn planned() -> Script {
    let mut s = Script::start(REQUEST);
    s.at(300).status("routing with routeBrain on local/smollm2");
    s.at(1_200).routing(
        RoutingSource::RouterBrain,
        Some(0.92),
        "The request changes an API handler and needs a regression test; a review checks the diff.",
        &[
            (
                LIBRARIAN.0,
                LIBRARIAN.1,
                LIBRARIAN.2,
                "Find the login handler and how requests reach it",
            ),
            (
                QA.0,
                QA.1,
                QA.2,
                "Write a regression test for the rate limit",
            ),
            (
                PRIMARY.0,
                PRIMARY.1,
                PRIMARY.2,
                "Add a token-bucket rate limit to POST /login",
            ),
            (
                REVIEW.0,
                REVIEW.1,
                REVIEW.2,
                "Review the change and its test",
            ),
        ],
    );
    s.todos(&[
        ("find-handler", "Locate the login handler", Role::Librarian),
        (
            "add-limit",
            "Add a token-bucket rate limit to POST /login",
            Role::Backend,
        ),
        ("test-limit", "Regression test for the limit", Role::Qa),
        ("review", "Review the diff", Role::Review),
    ]);
    s
}

/// The plan, the librarian done, QA and the primary at work.
fn running() -> Script {
    let mut s = planned();
    s.at(1_500)
        .status("librarian (support) running on local/qwen2.5-coder")
        .worker_start(
            LIBRARIAN.0,
            LIBRARIAN.1,
            LIBRARIAN.2,
            "Find the login handler and how requests reach it",
            "local/qwen2.5-coder",
        )
        .todo(&["find-handler"], TaskStatus::Running);
    s.at(4_600)
        .tokens(LIBRARIAN.0, LIBRARIAN.1, LIBRARIAN.2, 1_530);
    s.at(4_700)
        .worker_end(
            LIBRARIAN.0,
            LIBRARIAN.1,
            LIBRARIAN.2,
            TaskStatus::Completed,
            "POST /login is handled by src/routes/login.rs::login; requests pass the auth middleware first.",
            &["Sessions are cached per process: a limit in memory is per instance, not global."],
            &["Should the limit be per IP or per account?"],
        )
        .todo(&["find-handler"], TaskStatus::Completed);
    s.at(4_800)
        .worker_start(
            QA.0,
            QA.1,
            QA.2,
            "Write a regression test for the rate limit",
            "anthropic/claude-haiku",
        )
        .worker_start(
            PRIMARY.0,
            PRIMARY.1,
            PRIMARY.2,
            "Add a token-bucket rate limit to POST /login",
            "openai/gpt-4.1",
        )
        .todo(&["add-limit", "test-limit"], TaskStatus::Running)
        .status("primary backend running on openai/gpt-4.1");
    s.at(6_100)
        .tool_start(
            PRIMARY,
            "call-1",
            "read_file",
            json!({"path": "src/routes/login.rs"}),
        )
        .tool_end(
            PRIMARY,
            "call-1",
            "read_file",
            "pub async fn login(...) {\n    ...\n}",
            false,
            12,
        );
    s.at(6_900)
        .tool_start(
            PRIMARY,
            "call-2",
            "search_files",
            json!({"pattern": "RateLimit|rate_limit", "path": "src"}),
        )
        .tool_end(PRIMARY, "call-2", "search_files", "no matches", false, 48);
    s.at(9_000).tokens(PRIMARY.0, PRIMARY.1, PRIMARY.2, 4_212);
    s.at(9_400).tool_start(
        PRIMARY,
        "call-3",
        "run_script",
        json!({"script": "test", "args": ["-p", "api"]}),
    );
    s
}

/// The whole run: edits, tests, QA failed, review done, the final answer.
fn finished() -> Script {
    let mut s = running();
    s.at(13_800)
        .tool_end(PRIMARY, "call-3", "run_script", TEST_OUTPUT, false, 4_400);
    s.at(14_000).worker_error(
        QA.0,
        QA.1,
        QA.2,
        "Write a regression test for the rate limit",
        "anthropic/claude-haiku timed out after 120 s (no fallback left)",
    );
    s.at(14_100).todo(&["test-limit"], TaskStatus::Failed);
    s.at(15_000).tool_start(
        PRIMARY,
        "call-4",
        "edit_file",
        json!({
            "path": "src/routes/login.rs",
            "oldString": "pub async fn login(State(app): State<App>, form: Form<Login>) -> Response {\n    let user = app.users.find(&form.name).await?;",
            "newString": "pub async fn login(State(app): State<App>, ip: ClientIp, form: Form<Login>) -> Response {\n    if let Err(limited) = app.limits.check(ip.0) {\n        return limited.into_response();\n    }\n    let user = app.users.find(&form.name).await?;"
        }),
    );
    s.at(15_030).tool_end(
        PRIMARY,
        "call-4",
        "edit_file",
        "edited src/routes/login.rs (1 replacement)",
        false,
        30,
    );
    s.at(15_600).tool_start(
        PRIMARY,
        "call-5",
        "apply_patch",
        json!({"patch": "--- /dev/null\n+++ b/src/limits.rs\n@@ -0,0 +1,6 @@\n+//! Per-IP token buckets for the login route.\n+\n+pub struct Limits {\n+    buckets: Mutex<HashMap<IpAddr, Bucket>>,\n+}\n+\n"}),
    );
    s.at(15_640).tool_end(
        PRIMARY,
        "call-5",
        "apply_patch",
        "applied 1 hunk to src/limits.rs",
        false,
        40,
    );
    s.at(16_000).text("## Rate limit added\n\n");
    s.at(16_300).tokens(PRIMARY.0, PRIMARY.1, PRIMARY.2, 2_030);
    s.at(16_400)
        .worker_end(
            PRIMARY.0,
            PRIMARY.1,
            PRIMARY.2,
            TaskStatus::Completed,
            "",
            &[],
            &[],
        )
        .todo(&["add-limit"], TaskStatus::Completed);
    s.at(16_500).worker_start(
        REVIEW.0,
        REVIEW.1,
        REVIEW.2,
        "Review the change and its test",
        "anthropic/claude-sonnet",
    );
    s.at(19_900).tokens(REVIEW.0, REVIEW.1, REVIEW.2, 2_870);
    s.at(20_000)
        .worker_end(
            REVIEW.0,
            REVIEW.1,
            REVIEW.2,
            TaskStatus::Completed,
            "The limit is checked before the database; the test covers the sixth attempt.",
            &[],
            &[],
        )
        .todo(&["review"], TaskStatus::Completed);
    s.at(20_400).finish(ANSWER, FinalStatus::Answered);
    s
}

#[test]
fn plan_and_workers_running() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &running());
    insta::assert_snapshot!(screen(&app, 100, 28, 14_300));
}

#[test]
fn workers_done_and_failed_expanded() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    for key in ["ctx-librarian", "ctx-qa"] {
        select(&mut app, &ItemKey::Worker(key.into()));
        app.toggle_expanded();
    }
    app.scroll_to_top();
    insta::assert_snapshot!(screen(&app, 100, 40, 30_000));
}

#[test]
fn tool_call_collapsed_then_expanded() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    let key = ItemKey::Tool("call-3".into());
    select(&mut app, &key);
    insta::assert_snapshot!("tool_call_collapsed", screen(&app, 90, 22, 30_000));
    assert!(app.toggle_expanded());
    insta::assert_snapshot!("tool_call_expanded", screen(&app, 90, 22, 30_000));
}

#[test]
fn edit_diffs() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    // The last one expanded comes to the top of the view, with the other below it.
    for call in ["call-5", "call-4"] {
        select(&mut app, &ItemKey::Tool(call.into()));
        app.toggle_expanded();
    }
    insta::assert_snapshot!(screen(&app, 100, 26, 30_000));
}

#[test]
fn final_markdown_answer() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    insta::assert_snapshot!(screen(&app, 80, 30, 30_000));
}

#[test]
fn streaming_answer_reads_like_the_final_one() {
    let answer_rows = |screen: &str| -> Vec<String> {
        let lines: Vec<&str> = screen.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.contains("Rate limit added"))
            .unwrap();
        let end = lines
            .iter()
            .position(|l| l.contains("to check it"))
            .unwrap();
        lines[start..=end].iter().map(ToString::to_string).collect()
    };
    let mut s = running();
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &s);
    // Deltas of 7 bytes, drawn after each: the rows settle paragraph by paragraph.
    let chars: Vec<char> = ANSWER.chars().collect();
    let mut midway = String::new();
    for (index, chunk) in chars.chunks(7).enumerate() {
        let text: String = chunk.iter().collect();
        let mut delta = Script::start(REQUEST);
        delta.text(&text);
        app.on_event(&delta.events()[1]);
        let drawn = screen(&app, 80, 40, 15_000);
        if index == chars.len() / 7 * 2 / 3 {
            midway = drawn;
        }
    }
    insta::assert_snapshot!("streaming_answer_midway", midway);
    let streamed = screen(&app, 80, 40, 15_000);
    s.at(20_400).finish(ANSWER, FinalStatus::Answered);
    app.on_event(s.events().last().unwrap());
    let answered = screen(&app, 80, 40, 30_000);
    assert_eq!(answer_rows(&streamed), answer_rows(&answered));
}

#[test]
fn warnings_and_router_fallback() {
    let mut s = Script::start("what does the login route do?");
    s.at(900).record(braincode_protocol::Record::Routing(
        braincode_protocol::RoutingRecord {
            source: RoutingSource::Heuristic,
            primary_role: Role::Librarian,
            reason: "a question about the code: one librarian answers".into(),
            confidence: None,
            model: Some("local/smollm2".into()),
            fallback_reason: Some("the router's reply was not JSON (local/smollm2)".into()),
            workers: Vec::new(),
            requires_review: false,
        },
    ));
    s.at(1_000).warning(
        "the session journal could not be written (disk full); this run will not be resumable",
    );
    s.at(2_000)
        .notice("the reply of openai/gpt-4.1 was cut off; asking again (attempt 2 of 3)");
    s.at(5_000).finish(
        "`POST /login` checks the password with *argon2* and sets a session cookie.",
        FinalStatus::Answered,
    );
    let mut app = app();
    feed(&mut app, &s);
    insta::assert_snapshot!(screen(&app, 80, 16, 6_000));
}

#[test]
fn narrow_terminal_80x24() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &running());
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal
        .draw(|frame| {
            let areas = layout(frame.area(), 2, 0);
            draw(frame, areas.view, &app, T0 + 14_300);
        })
        .unwrap();
    insta::assert_snapshot!(terminal.backend().to_string());
}

#[test]
fn scrolled_up_keeps_its_place_and_says_so() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    screen(&app, 80, 20, 30_000);
    app.scroll_up(12);
    let before = screen(&app, 80, 20, 30_000);
    insta::assert_snapshot!(before);
    // A second run streams in below: the rows in view stay where they are.
    app.begin_turn("and per account?");
    app.scroll_up(12);
    let mut s = Script::start("and per account?");
    s.text("Yes: key the bucket by account id as well.");
    feed(&mut app, &s);
    assert!(!app.is_following());
    let after = screen(&app, 80, 20, 31_000);
    let first_rows = |s: &str| s.lines().take(10).collect::<Vec<_>>().join("\n");
    assert_eq!(first_rows(&before), first_rows(&after));
    app.scroll_to_bottom();
    assert!(screen(&app, 80, 20, 31_000).contains("key the bucket by account id"));
}

#[test]
fn tiny_terminal() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    insta::assert_snapshot!(screen(&app, 10, 3, 30_000));
}

#[test]
fn no_size_panics() {
    let mut app = app();
    app.begin_turn(REQUEST);
    feed(&mut app, &finished());
    select(&mut app, &ItemKey::Tool("call-4".into()));
    app.toggle_expanded();
    for width in 0..24 {
        for height in 0..8 {
            let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            terminal
                .draw(|frame| {
                    let areas = layout(frame.area(), 3, 2);
                    draw(frame, areas.view, &app, T0 + 30_000);
                })
                .unwrap();
        }
    }
}
