//! The orchestrator's behaviour users rely on, run in process against scripted models: a
//! team run answers once and lists its workers; a failing support model falls back along its
//! chain (and, when the chain is exhausted, the answer says it was made without that
//! worker); the clarification gate stops before any worker; cancellation ends the journal
//! with one terminal record; the report is the fold of the journal; the plan review declares
//! file edits only when edits are allowed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::support::{
    self, BrainConfig, CallKind, Matcher, Reply, Script, TestOutcome, TestRun, is, review_json,
    router_clarification_json, router_decision_json, worker_result_for,
};
use braincode_protocol::{
    ExecutionPlanReview, FinalStatus, Record, ReportWorker, ReviewVerdict, Role, RunError,
    WorkerError, WorkerPhase,
};
use braincode_runtime::PermissionMode;

const PROMPT: &str = "Fix the session token validation in the backend and add a regression test";
const ANSWER: &str = "Validation now rejects empty tokens; a regression test covers it.";
/// Marks a worker's result summary, to see where results travel.
const RESULT_MARK: &str = "result-mark-7f3a";
/// How long a test waits for a record of a live run (a guard, not a timing assertion).
const WAIT: Duration = Duration::from_secs(60);

/// Router → backend primary with librarian and security support; workers answer with a
/// completed result, the reviewer approves, the primary answers [`ANSWER`]. Rules added to
/// `first` are tried before these.
fn team_script(first: Script) -> Script {
    first
        .always(
            Matcher::router(),
            Reply::json(&router_decision_json(
                Role::Backend,
                &[Role::Librarian, Role::Security],
            )),
        )
        .when_fn(Matcher::any_support(), |call| {
            let role = call.role().map_or("unknown", Role::as_str);
            Reply::json(&worker_result_for(call, &format!("{role} {RESULT_MARK}")))
        })
        .always(
            Matcher::review(),
            Reply::json(&review_json(ReviewVerdict::Approved)),
        )
        .always(Matcher::primary(), Reply::text(ANSWER))
}

fn worker(outcome: &TestOutcome, role: Role, phase: WorkerPhase) -> ReportWorker {
    outcome
        .report
        .routing
        .workers
        .iter()
        .find(|w| w.role == role && w.phase == phase)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no {role} {phase:?} worker in the report: {:?}",
                outcome.report.routing.workers
            )
        })
}

fn assert_worker(outcome: &TestOutcome, role: Role, phase: WorkerPhase, status: &str, model: &str) {
    let worker = worker(outcome, role, phase);
    assert_eq!(worker.status.as_deref(), Some(status), "{worker:?}");
    assert_eq!(worker.model.as_deref(), Some(model), "{worker:?}");
}

/// The fold of the memory journal is the returned report (task and answer are small here,
/// so the journal's clipped copies are whole).
fn assert_fold_matches(outcome: &TestOutcome) {
    assert_eq!(outcome.folded_report(), outcome.report);
}

#[tokio::test]
async fn a_team_run_answers_once_and_lists_its_workers() {
    let outcome = TestRun::new(PROMPT)
        .script(team_script(Script::new()))
        .run()
        .await;

    assert_eq!(
        outcome.report.status,
        FinalStatus::Approved,
        "{:?}",
        outcome.report
    );
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_eq!(outcome.report.routing.primary_role, Role::Backend);
    assert_worker(
        &outcome,
        Role::Librarian,
        WorkerPhase::Support,
        "completed",
        "test/librarian",
    );
    assert_worker(
        &outcome,
        Role::Security,
        WorkerPhase::Support,
        "completed",
        "test/security",
    );
    assert_worker(
        &outcome,
        Role::Backend,
        WorkerPhase::Primary,
        "completed",
        "test/backend",
    );

    // One voice: one final answer, one terminal record.
    assert_eq!(outcome.events.final_answers(), 1);
    assert_eq!(outcome.journal.count("run_end"), 1);
    assert_eq!(outcome.journal.count("run_error"), 0);
    assert_eq!(
        outcome.journal.last().map(Record::type_name),
        Some("run_end")
    );

    let requests = &outcome.requests;
    assert_eq!(requests.unmatched(), 0, "{:?}", requests.per_model());
    assert_eq!(requests.of_kind(CallKind::Router), 1);
    assert_eq!(requests.count(&Matcher::support(Role::Librarian)), 1);
    assert_eq!(requests.count(&Matcher::support(Role::Security)), 1);
    assert_eq!(requests.hits("support"), 2);
    assert_eq!(requests.hits("primary"), 1);
    // Workers run isolated: neither support worker saw the other's result.
    for call in requests
        .calls()
        .iter()
        .filter(|c| c.kind() == CallKind::Support)
    {
        let prompt = call.first_user_text();
        assert!(!prompt.contains(RESULT_MARK), "{}", call.describe());
    }
    // The primary merged both results.
    let primary = requests
        .calls()
        .iter()
        .find(|c| c.kind() == CallKind::Primary)
        .unwrap();
    let system_and_prompt = format!("{}\n{}", primary.system, primary.first_user_text());
    assert!(system_and_prompt.contains(&format!("librarian {RESULT_MARK}")));
    assert!(system_and_prompt.contains(&format!("security {RESULT_MARK}")));
}

#[tokio::test]
async fn a_failing_support_model_falls_back_to_the_next_in_its_chain() {
    let outcome = TestRun::new(PROMPT)
        .brain(BrainConfig::per_role().chain(Role::Security, &["test/sec-a", "test/sec-b"]))
        .script(team_script(Script::new().always(
            Matcher::model("test/sec-a"),
            Reply::http_error(503, "upstream overloaded"),
        )))
        .run()
        .await;

    assert_eq!(outcome.requests.to_model("test/sec-a"), 1);
    assert_eq!(outcome.requests.to_model("test/sec-b"), 1);
    assert_worker(
        &outcome,
        Role::Security,
        WorkerPhase::Support,
        "completed",
        "test/sec-b",
    );
    let errors = outcome.journal.of_type::<WorkerError>();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].worker, Role::Security);
    assert_eq!(errors[0].will_fallback, Some(true));
    assert!(
        errors[0]
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("server"),
        "{errors:?}"
    );
    assert!(
        outcome
            .journal
            .warnings()
            .iter()
            .any(|w| w.contains("test/sec-a failed") && w.contains("trying the next model")),
        "{:?}",
        outcome.journal.warnings()
    );
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_fold_matches(&outcome);
}

#[tokio::test]
async fn when_every_model_of_a_support_worker_fails_the_answer_says_so() {
    let outcome = TestRun::new(PROMPT)
        .brain(BrainConfig::per_role().chain(Role::Security, &["test/sec-a", "test/sec-b"]))
        .script(team_script(
            Script::new()
                .always(
                    Matcher::model("test/sec-a"),
                    Reply::http_error(503, "upstream overloaded"),
                )
                .always(
                    Matcher::model("test/sec-b"),
                    Reply::http_error(500, "internal error"),
                ),
        ))
        .run()
        .await;

    let security = worker(&outcome, Role::Security, WorkerPhase::Support);
    assert_eq!(security.status.as_deref(), Some("failed"), "{security:?}");
    assert_eq!(security.model, None);
    let warning = outcome
        .report
        .warnings
        .iter()
        .find(|w| w.starts_with("security worker failed"))
        .unwrap_or_else(|| panic!("{:?}", outcome.report.warnings));
    assert!(warning.contains("on test/sec-b"), "{warning}");
    assert!(warning.contains("server"), "{warning}");
    assert!(
        warning.ends_with("the answer was made without its result"),
        "{warning}"
    );
    // The run still answers, once, with the other worker's help.
    assert_eq!(outcome.report.model_summary, ANSWER);
    assert_eq!(outcome.events.final_answers(), 1);
    assert_worker(
        &outcome,
        Role::Librarian,
        WorkerPhase::Support,
        "completed",
        "test/librarian",
    );
    assert_fold_matches(&outcome);
}

#[tokio::test]
async fn the_clarification_gate_stops_before_any_worker() {
    let question = "Which validation should change: the token check or the session table?";
    let outcome = TestRun::new(PROMPT)
        .script(
            Script::new()
                .always(
                    Matcher::router(),
                    Reply::json(&router_clarification_json(Role::Backend, question)),
                )
                .always(Matcher::any(), Reply::text("must not be asked")),
        )
        .run()
        .await;

    assert_eq!(outcome.report.status, FinalStatus::NeedsClarification);
    assert_eq!(outcome.report.model_summary, question);
    assert_eq!(
        outcome
            .report
            .clarification
            .as_ref()
            .map(|c| c.question.as_str()),
        Some(question)
    );
    let requests = &outcome.requests;
    assert_eq!(requests.total(), 1, "{:?}", requests.per_model());
    assert_eq!(requests.of_kind(CallKind::Support), 0);
    assert_eq!(requests.of_kind(CallKind::Primary), 0);
    assert_eq!(requests.hits("any"), 0);
    assert_eq!(outcome.journal.count("worker_start"), 0);
    assert_eq!(outcome.journal.count("clarification_request"), 1);
    assert_eq!(outcome.events.final_answers(), 1);
    assert_fold_matches(&outcome);
}

#[tokio::test]
async fn cancelling_mid_run_ends_with_one_terminal_run_error() {
    let run = TestRun::new(PROMPT)
        .script(team_script(
            Script::new().always(Matcher::support(Role::Security), Reply::stall()),
        ))
        .start();
    run.journal()
        .wait_for(is::worker_start(Role::Security, WorkerPhase::Support), WAIT)
        .await
        .unwrap_or_else(|timeout| panic!("{timeout}"));
    run.cancel("test cancelled");
    let outcome = run.finish().await;

    assert_eq!(outcome.report.status, FinalStatus::Aborted);
    assert!(
        outcome
            .report
            .error
            .as_deref()
            .is_some_and(|e| e.contains("test cancelled")),
        "{:?}",
        outcome.report.error
    );
    assert_eq!(outcome.requests.of_kind(CallKind::Primary), 0);
    let Some(Record::RunError(RunError { kind, .. })) = outcome.journal.last() else {
        panic!(
            "the journal does not end with run_error: {:?}",
            outcome.journal.types()
        );
    };
    assert_eq!(kind.as_deref(), Some("aborted"));
    assert_eq!(outcome.journal.count("run_error"), 1);
    assert_eq!(outcome.journal.count("run_end"), 0);

    // Whatever the aborted worker tasks still try, nothing follows the terminal record.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let seen = outcome.events.snapshot();
    assert_eq!(seen.last().map(Record::type_name), Some("run_error"));
    assert_eq!(seen.count("run_error"), 1);
    assert_eq!(outcome.events.final_answers(), 1);
    assert_fold_matches(&outcome);
}

#[tokio::test]
async fn the_report_is_the_fold_of_the_journal() {
    let outcome = TestRun::new(PROMPT)
        .git_repo()
        .file(
            "src/token.rs",
            "pub fn valid(t: &str) -> bool { !t.is_empty() }\n",
        )
        .script(team_script(Script::new()))
        .run()
        .await;

    assert_eq!(outcome.report.status, FinalStatus::Approved);
    assert!(outcome.report.metrics.is_some());
    assert_fold_matches(&outcome);
    // The journal's own final_report record says the same.
    let journaled = outcome
        .journal
        .first::<braincode_protocol::FinalReportRecord>()
        .expect("a final_report record");
    assert_eq!(*journaled.final_report, outcome.report);
}

#[tokio::test]
async fn allowed_edits_are_declared_in_the_plan_review_and_read_only_runs_have_none() {
    let edits = TestRun::new(PROMPT)
        .git_repo()
        .permission(PermissionMode::AllowEdits)
        .script(team_script(Script::new()))
        .run()
        .await;
    let review = edits
        .journal
        .first::<ExecutionPlanReview>()
        .unwrap_or_else(|| panic!("no execution_plan_review: {:?}", edits.journal.types()));
    let kinds: Vec<&str> = review
        .proposed_side_effects
        .iter()
        .map(|e| e.kind.as_str())
        .collect();
    assert!(kinds.contains(&"file_edit"), "{kinds:?}");
    // Edits mode offers commands too, and says they run confined (or ask).
    let command = review
        .proposed_side_effects
        .iter()
        .find(|e| e.kind == "command")
        .unwrap_or_else(|| panic!("{kinds:?}"));
    assert!(command.target.contains("OS sandbox"), "{}", command.target);
    let in_report = edits.report.plan_review.as_ref().expect("a plan review");
    assert_eq!(
        in_report.proposed_side_effects,
        review.proposed_side_effects
    );
    // It is decided before any worker runs.
    assert!(
        edits.journal.position("execution_plan_review") < edits.journal.position("worker_start")
    );

    let read_only = TestRun::new(PROMPT)
        .git_repo()
        .permission(PermissionMode::ReadOnly)
        .script(team_script(Script::new()))
        .run()
        .await;
    assert_eq!(read_only.journal.count("execution_plan_review"), 0);
    assert_eq!(read_only.report.plan_review, None);
}

/// Isolated workers do not share an evidence cache: three workers reading the same file at
/// the same time each get the file, never "call 3 of read_file in a row" (or a refusal)
/// because a sibling read it first.
#[tokio::test]
async fn parallel_workers_reading_the_same_file_each_get_it() {
    let script = Script::new()
        .always(
            Matcher::router(),
            Reply::json(&router_decision_json(
                Role::Backend,
                &[Role::Librarian, Role::Security, Role::Qa],
            )),
        )
        .when_fn(Matcher::any_support(), |call| {
            if call.is_tool_turn() {
                Reply::json(&worker_result_for(call, "read it"))
            } else {
                Reply::tool_call("read_file", serde_json::json!({"path": "NOTES.md"}))
            }
        })
        .always(
            Matcher::review(),
            Reply::json(&review_json(ReviewVerdict::Approved)),
        )
        .always(Matcher::primary(), Reply::text(ANSWER));
    let outcome = TestRun::new(PROMPT)
        .brain(BrainConfig::per_role().max_parallel_agents(3))
        .mode(braincode_protocol::Mode::Radical)
        .file("NOTES.md", "the token rules live in src/token.rs\n")
        .script(script)
        .run()
        .await;
    let reads: Vec<String> = outcome
        .journal
        .records(|r| {
            matches!(r, Record::ToolExecutionSummary(t)
                if t.tool_name == "read_file" && t.stage == braincode_protocol::ToolStage::End)
        })
        .into_iter()
        .filter_map(|r| match r {
            Record::ToolExecutionSummary(t) => t.output.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(reads.len(), 3, "{:?}", outcome.report.warnings);
    for output in &reads {
        assert!(output.contains("the token rules"), "{output}");
        assert!(!output.contains("evidence cache"), "{output}");
    }
}

/// The plan's todos say what happened: a read-only run asked for a change is not ticked
/// (it changed nothing), and the review's todo is ticked when the review decides.
#[tokio::test]
async fn todos_are_ticked_only_for_work_done() {
    let status_of = |todos: &[braincode_protocol::Todo], role: Role| {
        todos
            .iter()
            .find(|t| t.role == role)
            .map(|t| (t.status, t.error.clone()))
            .unwrap_or_else(|| panic!("no {role} todo in {todos:?}"))
    };
    let read_only = TestRun::new(PROMPT)
        .git_repo()
        .script(team_script(Script::new()))
        .run()
        .await;
    let todos = &read_only.report.todos;
    let (primary, why) = status_of(todos, Role::Backend);
    assert_eq!(
        primary,
        braincode_protocol::TaskStatus::Blocked,
        "{todos:?}"
    );
    assert!(why.is_some_and(|w| w.contains("read-only: nothing was changed")));
    let (review, _) = status_of(todos, Role::Review);
    assert_eq!(
        review,
        braincode_protocol::TaskStatus::Completed,
        "{todos:?}"
    );

    // Edits allowed, but the primary only talks about the change: not done either.
    let talked = TestRun::new(PROMPT)
        .git_repo()
        .permission(PermissionMode::AllowEdits)
        .script(team_script(Script::new()))
        .run()
        .await;
    let (primary, why) = status_of(&talked.report.todos, Role::Backend);
    assert_eq!(primary, braincode_protocol::TaskStatus::Blocked);
    assert!(why.is_some_and(|w| w.contains("no file was changed")));

    // The primary edits the file: done.
    let edits = TestRun::new(PROMPT)
        .git_repo()
        .permission(PermissionMode::AllowEdits)
        .file("src/token.rs", "pub fn valid(t: &str) -> bool { true }\n")
        .script(team_script(Script::new().when_fn(Matcher::primary(), |call| {
            if call.is_tool_turn() {
                Reply::text(ANSWER)
            } else {
                Reply::tool_call(
                    "edit_file",
                    serde_json::json!({"path": "src/token.rs", "oldString": "true", "newString": "!t.is_empty()"}),
                )
            }
        })))
        .run()
        .await;
    let todos = &edits.report.todos;
    assert_eq!(
        status_of(todos, Role::Backend).0,
        braincode_protocol::TaskStatus::Completed,
        "{todos:?}"
    );
    assert_eq!(
        status_of(todos, Role::Review).0,
        braincode_protocol::TaskStatus::Completed
    );
    assert_fold_matches(&edits);
}

/// Provider prompt caching needs every request of a role to start with the same bytes —
/// the role's system prompt, then its tool schemas — run after run, and a cache key per role
/// and project; nothing that changes per call (ids, times, the task) may sit in that prefix.
#[tokio::test]
async fn every_request_of_a_role_starts_with_the_same_bytes_and_key() {
    let prefixes = |outcome: &support::TestOutcome| {
        let mut by_role: std::collections::BTreeMap<String, (String, Option<String>)> =
            std::collections::BTreeMap::new();
        for call in outcome.requests.calls() {
            let Some(role) = call.role() else { continue };
            let tools = serde_json::to_string(&call.request.tools).unwrap();
            let prefix = format!("{}\n{tools}", call.system);
            let key = call.request.cache_key.clone();
            let entry = by_role
                .entry(role.as_str().to_string())
                .or_insert_with(|| (prefix.clone(), key.clone()));
            // Within a run: every request of the role (each agent turn, each worker).
            assert_eq!(entry.0, prefix, "{role}: the prefix changed within the run");
            assert_eq!(entry.1, key, "{role}: the cache key changed within the run");
        }
        by_role
    };
    let run = || {
        TestRun::new(PROMPT)
            .git_repo()
            .permission(PermissionMode::AllowEdits)
            .script(team_script(Script::new()))
            .run()
    };
    let first = prefixes(&run().await);
    let second = prefixes(&run().await);
    assert!(first.len() >= 3, "{:?}", first.keys());
    for (role, (prefix, key)) in &first {
        let (again, other_key) = &second[role];
        assert_eq!(prefix, again, "{role}: a second run starts differently");
        let key = key
            .as_deref()
            .unwrap_or_else(|| panic!("{role}: no cache key"));
        assert!(key.starts_with(&format!("braincode-{role}-")), "{key}");
        // Another project (each test run has its own), another key.
        assert_ne!(Some(key), other_key.as_deref());
    }
    let keys: std::collections::BTreeSet<_> = first.values().map(|(_, k)| k.clone()).collect();
    assert_eq!(keys.len(), first.len(), "one key per role");
}
