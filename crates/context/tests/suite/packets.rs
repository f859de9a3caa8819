//! Serde round-trips of the typed packets and the direction-tag guarantees.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_context::{
    AgentTaskContext, BrainLayer, BrainTaskContext, HandoffPacket, HandoffPacketExt, WorkerResult,
    WorkerResultExt, normalize_worker_result,
};
use braincode_protocol::{
    ContextId, ContextRef, ContextRefKind, Role, TaskProgress, TaskStatus, WorkerPhase,
};
use serde_json::json;

fn id(value: &str) -> ContextId {
    ContextId::from(value.to_string())
}

fn handoff() -> HandoffPacket {
    HandoffPacket::for_worker(
        &id("brain-ctx"),
        id("worker-ctx"),
        Role::Librarian,
        WorkerPhase::Support,
        "Map the login code",
        vec![ContextRef {
            kind: ContextRefKind::File,
            uri: "AGENTS.md".into(),
            label: Some("AGENTS.md".into()),
        }],
    )
}

#[test]
fn handoff_round_trips() {
    let packet = handoff();
    let json = serde_json::to_string(&packet).unwrap();
    let back: HandoffPacket = serde_json::from_str(&json).unwrap();
    assert_eq!(back, packet);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "fromLayer",
            "toLayer",
            "id",
            "task",
            "constraints",
            "expectedResult"
        ]
    );
}

#[test]
fn worker_result_round_trips() {
    let mut result = normalize_worker_result(
        r#"{"summary": "found it", "progress": {"status": "completed", "summary": "ok"},
            "artifacts": [{"kind": "file", "uri": "src/auth.rs"}], "risks": ["r"],
            "nextQuestions": ["q"]}"#,
        &handoff(),
    );
    result.progress.percent = Some(100.0);
    let value = serde_json::to_value(&result).unwrap();
    assert_eq!(value["fromLayer"], "agent");
    assert_eq!(value["toLayer"], "brain");
    assert_eq!(value["handoffId"], "worker-ctx:handoff");
    assert_eq!(value["nextQuestions"], json!(["q"]));
    let back: WorkerResult = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
}

#[test]
fn contexts_round_trip_with_their_layer() {
    let brain = BrainTaskContext {
        id: id("b"),
        layer: BrainLayer,
        goal: "goal".into(),
        progress: TaskProgress::default(),
        child_context_ids: vec![id("w1"), id("w2")],
        context_refs: Vec::new(),
    };
    let value = serde_json::to_value(&brain).unwrap();
    assert_eq!(value["layer"], "brain");
    assert_eq!(value["childContextIds"], json!(["w1", "w2"]));
    assert_eq!(
        serde_json::from_value::<BrainTaskContext>(value).unwrap(),
        brain
    );

    let agent = handoff().task;
    let value = serde_json::to_value(&agent).unwrap();
    assert_eq!(value["layer"], "agent");
    assert_eq!(
        serde_json::from_value::<AgentTaskContext>(value).unwrap(),
        agent
    );
}

#[test]
fn the_wrong_direction_is_refused_with_a_clear_error() {
    let mut value = serde_json::to_value(handoff()).unwrap();
    value["fromLayer"] = json!("agent");
    value["toLayer"] = json!("brain");
    let err = serde_json::from_value::<HandoffPacket>(value)
        .unwrap_err()
        .to_string();
    assert!(err.contains("wrong context layer tag \"agent\""), "{err}");
    assert!(err.contains("expected \"brain\""), "{err}");

    // A handoff packet is not a worker result, whatever its other fields.
    let as_result = serde_json::to_value(WorkerResult::for_handoff(
        &handoff(),
        TaskProgress {
            status: TaskStatus::Completed,
            ..TaskProgress::default()
        },
        "s".into(),
    ))
    .unwrap();
    let mut swapped = as_result.clone();
    swapped["fromLayer"] = json!("brain");
    assert!(serde_json::from_value::<WorkerResult>(swapped).is_err());

    // A brain context cannot claim the agent layer.
    let brain = json!({"id": "b", "layer": "agent", "goal": "g", "progress": {"status": "pending"},
                       "childContextIds": [], "contextRefs": []});
    let err = serde_json::from_value::<BrainTaskContext>(brain)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected \"brain\""), "{err}");

    let missing = json!({"toLayer": "agent"});
    assert!(serde_json::from_value::<HandoffPacket>(missing).is_err());
}

#[test]
fn a_reply_cannot_change_the_ids() {
    let reply = r#"{"taskId": "someone-else", "parentId": "other-brain", "handoffId": "h2",
                    "summary": "done", "progress": {"status": "completed", "summary": "ok"}}"#;
    let result = normalize_worker_result(reply, &handoff());
    assert_eq!(result.task_id, id("worker-ctx"));
    assert_eq!(result.parent_id, id("brain-ctx"));
    assert_eq!(result.handoff_id, "worker-ctx:handoff");
}
