//! The per-worker view of the fold: goal, timing, tokens, result and error.

use braincode_protocol::{JournalEntry, Role, TaskStatus};
use serde_json::json;

use super::RunState;

fn entry(timestamp: i64, record: serde_json::Value) -> JournalEntry {
    let mut value = record;
    value["timestamp"] = json!(timestamp);
    serde_json::from_value(value).unwrap()
}

fn handoff(task: &str, role: &str, goal: &str) -> serde_json::Value {
    json!({"fromLayer": "brain", "toLayer": "agent", "id": format!("{task}:handoff"),
        "task": {"id": task, "parentId": "b", "layer": "agent", "agentRole": role,
                 "goal": goal, "progress": {"status": "running"}},
        "constraints": [], "expectedResult": "json"})
}

#[test]
fn workers_carry_goal_timing_tokens_result_and_error() {
    let records = [
        entry(1_000, json!({"type": "run_start", "prompt": "fix login"})),
        entry(
            1_100,
            json!({"type": "routing", "source": "heuristic", "primaryRole": "backend",
            "reason": "r", "workers": [
                {"role": "librarian", "phase": "support", "goal": "find it", "contextId": "c1"},
                {"role": "qa", "phase": "support", "goal": "test it", "contextId": "c2"}]}),
        ),
        entry(
            2_000,
            json!({"type": "worker_start", "phase": "support", "worker": "librarian",
            "goal": "find the handler", "handoff": handoff("c1", "librarian", "find the handler"),
            "model": "m1", "agentSessionId": "c1-1", "attempt": 1}),
        ),
        entry(
            2_500,
            json!({"type": "token_usage", "role": "librarian", "phase": "support",
            "taskId": "c1", "usage": {"input": 100, "output": 20, "total": 120}}),
        ),
        entry(
            2_600,
            json!({"type": "token_usage", "role": "librarian", "phase": "support",
            "agentSessionId": "c1-1", "usage": {"input": 10, "output": 5, "total": 15}}),
        ),
        entry(
            2_700,
            json!({"type": "token_usage", "phase": "router",
            "usage": {"input": 1, "output": 1, "total": 2}}),
        ),
        entry(
            3_000,
            json!({"type": "worker_end", "phase": "support", "worker": "librarian",
            "attempt": 1, "result": {"fromLayer": "agent", "toLayer": "brain",
                "handoffId": "c1:handoff", "taskId": "c1", "parentId": "b",
                "progress": {"status": "completed"}, "summary": "in src/auth.rs",
                "risks": ["none seen"], "nextQuestions": []}}),
        ),
        entry(
            3_100,
            json!({"type": "worker_start", "phase": "support", "worker": "qa",
            "goal": "test it", "handoff": handoff("c2", "qa", "test it"), "model": "m2",
            "attempt": 1}),
        ),
        entry(
            3_900,
            json!({"type": "worker_error", "phase": "support", "worker": "qa",
            "error": "model timed out", "handoff": handoff("c2", "qa", "test it"),
            "attempt": 1, "willFallback": false}),
        ),
    ];
    let mut state = RunState::new("s");
    for record in &records {
        state.apply(record);
    }
    assert_eq!(state.task(), "fix login");
    assert_eq!(state.routing().map(|r| r.primary_role), Some(Role::Backend));
    assert_eq!(state.tokens_total().total, 137);

    let [librarian, qa] = state.workers() else {
        panic!("{:?}", state.workers());
    };
    assert_eq!(librarian.goal, "find the handler");
    assert_eq!(
        (librarian.started_at, librarian.ended_at),
        (Some(2_000), Some(3_000))
    );
    assert_eq!((librarian.tokens.total, librarian.tokens.input), (135, 110));
    let result = librarian.result.as_deref().unwrap();
    assert_eq!(result.progress.status, TaskStatus::Completed);
    assert_eq!(result.risks, ["none seen"]);
    assert_eq!(librarian.error, None);

    assert_eq!(qa.goal, "test it");
    assert_eq!((qa.started_at, qa.ended_at), (Some(3_100), Some(3_900)));
    assert!(qa.tokens.is_empty() && qa.result.is_none());
    assert_eq!(qa.error.as_deref(), Some("model timed out"));
    assert_eq!(qa.outcome.as_deref(), Some("failed"));
}
