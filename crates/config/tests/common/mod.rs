//! Record builders shared by the integration tests, and the name of a test of this binary for
//! a child process that re-runs it.
#![allow(dead_code, clippy::unwrap_used)]

use braincode_protocol::Record;
use serde_json::{Value, json};

pub fn record(value: Value) -> Record {
    let record: Record = serde_json::from_value(value).unwrap();
    assert!(!record.is_malformed_known(), "{record:?}");
    record
}

pub fn run_start(prompt: &str, root: &str) -> Record {
    record(
        json!({"type": "run_start", "prompt": prompt, "projectSupport": {"root": root}, "attempt": 1}),
    )
}

pub fn run_end(summary: &str) -> Record {
    record(json!({"type": "run_end", "summary": summary}))
}

pub fn run_error(error: &str, will_fallback: bool) -> Record {
    record(json!({"type": "run_error", "error": error, "willFallback": will_fallback}))
}

/// A complete WorkerResult packet (the shape `braincode_context` writes).
pub fn worker_result(task: &str, summary: &str) -> Value {
    json!({"fromLayer": "agent", "toLayer": "brain", "handoffId": format!("{task}:handoff"),
           "taskId": task, "parentId": "brain-ctx", "progress": {"status": "completed"},
           "summary": summary, "artifacts": [], "risks": [], "nextQuestions": []})
}

pub fn worker_end(role: &str, summary: &str) -> Record {
    record(
        json!({"type": "worker_end", "phase": "support", "worker": role,
        "result": worker_result(&format!("{role}-ctx"), summary)}),
    )
}

pub fn check_summary(status: &str, reason: &str) -> Record {
    record(
        json!({"type": "check_summary", "status": status, "reason": reason, "results": [
            {"name": "test", "command": "cargo test", "passed": false, "exitCode": 101, "durationMs": 5}
        ]}),
    )
}

pub fn review(decision: &str, rationale: &str) -> Record {
    record(
        json!({"type": "review_decision", "decision": decision, "rationale": rationale,
        "requiredChanges": ["add tests"]}),
    )
}

pub fn handoff(summary: &str, focus: &str) -> Record {
    record(json!({"type": "handoff", "summary": summary, "focus": focus, "trigger": "auto"}))
}

pub fn token_usage() -> Record {
    record(
        json!({"type": "token_usage", "role": "backend", "phase": "primary",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "total": 15}}),
    )
}

/// The name libtest gives the test `function` of the module at `module_path` (pass
/// `module_path!()`; its first segment is the test binary, which test names leave out), for
/// a test that re-runs one test of this binary in a child process with `--exact`.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}
