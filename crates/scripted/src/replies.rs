//! The replies of a plan: the router's decision, and a worker's completed `WorkerResult`
//! echoing the ids its handoff asked for (built from the real protocol type, so a scripted
//! worker cannot drift from it).

use braincode_protocol::{
    AgentLayer, BrainLayer, ContextId, Role, TaskProgress, TaskStatus, WorkerResult,
};
use serde_json::{Value, json};

use crate::RequestSummary;

/// A completed worker result, as a worker replies (`WorkerResult` serialized). The runtime
/// takes the ids from the handoff whatever the reply says.
pub fn worker_result_json(task_id: &str, parent_id: &str, summary: &str) -> Value {
    let result = WorkerResult {
        from_layer: AgentLayer,
        to_layer: BrainLayer,
        handoff_id: format!("{task_id}:handoff"),
        task_id: ContextId(task_id.to_string()),
        parent_id: ContextId(parent_id.to_string()),
        progress: TaskProgress {
            status: TaskStatus::Completed,
            summary: Some("done".to_string()),
            ..TaskProgress::default()
        },
        summary: summary.to_string(),
        artifacts: Vec::new(),
        risks: Vec::new(),
        next_questions: Vec::new(),
    };
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// A completed worker result echoing the ids of `call`'s handoff.
pub fn worker_result_for(call: &RequestSummary, summary: &str) -> Value {
    let (task, parent) = call.handoff_ids();
    worker_result_json(&task, &parent, summary)
}

/// A router decision: `primary` answers, after the support `workers` (one todo each, no
/// dependencies, no clarification).
pub fn router_decision_json(primary: Role, workers: &[Role]) -> Value {
    let roles: Vec<Role> = workers
        .iter()
        .copied()
        .chain(std::iter::once(primary))
        .collect();
    let workers: Vec<Value> = roles
        .iter()
        .map(|role| json!({"role": role.as_str(), "goal": format!("Handle the {role} part"), "reason": format!("{role} work")}))
        .collect();
    let todos: Vec<Value> = roles
        .iter()
        .map(|role| json!({"id": format!("todo-{role}"), "title": format!("{role} task"), "role": role.as_str(), "reason": "planned"}))
        .collect();
    json!({
        "role": primary.as_str(),
        "workers": workers,
        "todos": todos,
        "dependencies": [],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.9,
        "reason": "scripted router plan"
    })
}
