//! Building the two packets that cross between the Brain and a worker, and their
//! `agent_message` envelopes.
//!
//! The packet shapes are `braincode_protocol`'s; an inherent impl cannot live outside the
//! crate of its type, so the constructors are extension traits ([`HandoffPacketExt`],
//! [`WorkerResultExt`]): import them and write `HandoffPacket::for_worker(..)` as before.

use braincode_protocol::{
    AgentLayer, AgentMessage, AgentTaskContext, BrainLayer, ContextId, ContextRef, HandoffPacket,
    MessageKind, Role, TaskProgress, TaskStatus, WorkerPhase, WorkerResult,
};
use serde::Serialize;
use serde_json::Value;

/// The isolation rules every handoff carries, in the order they appear in the worker prompt.
pub const HANDOFF_CONSTRAINTS: [&str; 6] = [
    "Work on this one isolated task only, in the role it names; the Brain owns everything else.",
    "Use only what you were given: this handoff, the original request and any upstream worker \
     results included in the prompt.",
    "There is no hidden transcript: do not assume access to the full conversation or to any \
     other worker's reasoning.",
    "Return the structured result described in expectedResult, copying taskId and parentId \
     exactly as given here.",
    "When something is missing or uncertain, report it under risks or nextQuestions instead of \
     guessing.",
    "Stay inside the task's goal: no unrelated changes, no extra features.",
];

/// Reply shape a support or primary worker must produce.
const EXPECTED_WORKER_RESULT: &str = "Reply with one JSON object and nothing else: \
{\"taskId\": <copied from this handoff>, \"parentId\": <copied from this handoff>, \
\"progress\": {\"status\": \"completed\" | \"blocked\", \"summary\": <one line>}, \
\"summary\": <short findings for the primary agent>, \
\"artifacts\": [{\"kind\": \"file\" | \"thread\" | \"summary\" | \"artifact\", \"uri\": <path or id>, \"label\": <short>}], \
\"risks\": [<string>], \"nextQuestions\": [<string>]}.";

/// Extra fields a review worker adds to the reply.
const EXPECTED_REVIEW_FIELDS: &str = " Add the review verdict to the same object: \
\"decision\": \"approved\" | \"changes_requested\" | \"blocked\", \"confidence\": <0..1>, \
\"rationale\": <why>, \"findings\": [{\"severity\": \"low\" | \"medium\" | \"high\", \"issue\", \
\"file\", \"line\", \"evidence\", \"suggestion\"}], \"requiredChanges\": [<string>], \
\"blockingIssues\": [<string>], \"residualRisks\": [<string>]. List findings first, most \
severe first; with no findings, explain why in rationale.";

/// Constructors of a [`HandoffPacket`].
pub trait HandoffPacketExt {
    /// Builds the handoff for one worker context.
    ///
    /// `task_id` is the worker's fresh context id and `parent` the Brain context id; the
    /// packet id is derived from the task id so a handoff and its result can be joined in the
    /// journal. The task starts `pending` with the summary "<role> <phase> task is queued".
    fn for_worker(
        parent: &ContextId,
        task_id: ContextId,
        role: Role,
        phase: WorkerPhase,
        goal: &str,
        context_refs: Vec<ContextRef>,
    ) -> HandoffPacket;
}

impl HandoffPacketExt for HandoffPacket {
    fn for_worker(
        parent: &ContextId,
        task_id: ContextId,
        role: Role,
        phase: WorkerPhase,
        goal: &str,
        context_refs: Vec<ContextRef>,
    ) -> HandoffPacket {
        let mut expected_result = EXPECTED_WORKER_RESULT.to_string();
        if phase == WorkerPhase::Review {
            expected_result.push_str(EXPECTED_REVIEW_FIELDS);
        }
        HandoffPacket {
            from_layer: BrainLayer,
            to_layer: AgentLayer,
            id: format!("{task_id}:handoff"),
            task: AgentTaskContext {
                id: task_id,
                parent_id: parent.clone(),
                layer: AgentLayer,
                agent_role: role,
                goal: goal.trim().to_string(),
                progress: TaskProgress {
                    status: TaskStatus::Pending,
                    summary: Some(format!("{} {} task is queued", role, phase.as_str())),
                    ..TaskProgress::default()
                },
                context_refs,
            },
            constraints: HANDOFF_CONSTRAINTS
                .iter()
                .map(|c| (*c).to_string())
                .collect(),
            expected_result,
        }
    }
}

/// Constructors of a [`WorkerResult`] (a worker's reply is turned into one by
/// [`crate::normalize_worker_result`]).
pub trait WorkerResultExt {
    /// A result for `handoff` with the ids echoed from it and empty lists.
    fn for_handoff(handoff: &HandoffPacket, progress: TaskProgress, summary: String) -> Self;

    /// A failed result (every model candidate failed, the worker could not run): the summary
    /// is "<role> worker failed: <error>" and the error is its one risk.
    fn failed(handoff: &HandoffPacket, error: &str) -> Self;
}

impl WorkerResultExt for WorkerResult {
    fn for_handoff(handoff: &HandoffPacket, progress: TaskProgress, summary: String) -> Self {
        WorkerResult {
            from_layer: AgentLayer,
            to_layer: BrainLayer,
            handoff_id: handoff.id.clone(),
            task_id: handoff.task.id.clone(),
            parent_id: handoff.task.parent_id.clone(),
            progress,
            summary,
            artifacts: Vec::new(),
            risks: Vec::new(),
            next_questions: Vec::new(),
        }
    }

    fn failed(handoff: &HandoffPacket, error: &str) -> Self {
        let error = error.trim();
        let summary = format!("{} worker failed: {error}", handoff.role());
        let mut result = WorkerResult::for_handoff(
            handoff,
            TaskProgress {
                status: TaskStatus::Failed,
                summary: Some(summary.clone()),
                ..TaskProgress::default()
            },
            summary,
        );
        result.risks.push(error.to_string());
        result
    }
}

/// The address of an agent in an [`AgentMessage`] (`agent:<role>`).
pub fn agent_address(role: Role) -> String {
    format!("agent:{role}")
}

/// The address of the Brain in an [`AgentMessage`].
pub const BRAIN_ADDRESS: &str = "brain";

/// Serializes a packet into a message payload.
fn payload<T: Serialize>(packet: &T) -> Value {
    // Packets hold only strings, numbers, lists and string-keyed structs, so serializing to a
    // `Value` cannot fail; `Null` is an unreachable fallback that keeps this function total.
    serde_json::to_value(packet).unwrap_or(Value::Null)
}

/// The `agent_message` envelope of a handoff (kind `handoff`, brain → `agent:<role>`).
pub fn handoff_message(packet: &HandoffPacket) -> AgentMessage {
    AgentMessage {
        id: packet.id.clone(),
        parent_id: Some(packet.task.parent_id.to_string()),
        from: BRAIN_ADDRESS.to_string(),
        to: agent_address(packet.role()),
        kind: MessageKind::Handoff,
        payload: payload(packet),
        context_refs: packet.task.context_refs.clone(),
    }
}

/// The `agent_message` envelope of a result (kind `result`, or `error` when it failed).
///
/// The sender is `agent` because a result does not name its role; use
/// [`result_message_from`] when the role is known.
pub fn result_message(result: &WorkerResult) -> AgentMessage {
    result_envelope(result, "agent".to_string())
}

/// Like [`result_message`], with the sender addressed as `agent:<role>`.
pub fn result_message_from(role: Role, result: &WorkerResult) -> AgentMessage {
    result_envelope(result, agent_address(role))
}

fn result_envelope(result: &WorkerResult, from: String) -> AgentMessage {
    let (kind, suffix) = if result.is_failed() {
        (MessageKind::Error, "error")
    } else {
        (MessageKind::Result, "result")
    };
    AgentMessage {
        id: format!("{}:{suffix}", result.task_id),
        parent_id: Some(result.handoff_id.clone()),
        from,
        to: BRAIN_ADDRESS.to_string(),
        kind,
        payload: payload(result),
        context_refs: result.artifacts.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::ContextRefKind;

    fn handoff() -> HandoffPacket {
        HandoffPacket::for_worker(
            &ContextId::from("brain-1".to_string()),
            ContextId::from("task-1".to_string()),
            Role::Security,
            WorkerPhase::Support,
            "  Assess the login flow  ",
            vec![ContextRef {
                kind: ContextRefKind::File,
                uri: "AGENTS.md".into(),
                label: Some("AGENTS.md".into()),
            }],
        )
    }

    #[test]
    fn for_worker_fills_the_envelope() {
        let packet = handoff();
        assert_eq!(packet.id, "task-1:handoff");
        assert_eq!(packet.task.parent_id.as_str(), "brain-1");
        assert_eq!(packet.task.goal, "Assess the login flow");
        assert_eq!(packet.task.progress.status, TaskStatus::Pending);
        assert_eq!(
            packet.task.progress.summary.as_deref(),
            Some("security support task is queued")
        );
        assert_eq!(packet.constraints.len(), 6);
        assert!(packet.expected_result.contains("nextQuestions"));
        assert!(!packet.expected_result.contains("decision"));
    }

    #[test]
    fn review_handoffs_ask_for_a_decision() {
        let packet = HandoffPacket::for_worker(
            &ContextId::from("b".to_string()),
            ContextId::from("t".to_string()),
            Role::Review,
            WorkerPhase::Review,
            "review",
            Vec::new(),
        );
        assert!(packet.expected_result.contains("changes_requested"));
        assert_eq!(
            packet.task.progress.summary.as_deref(),
            Some("review review task is queued")
        );
    }

    #[test]
    fn handoff_serializes_with_camel_case_and_direction_tags() {
        let value = serde_json::to_value(handoff()).unwrap();
        assert_eq!(value["fromLayer"], "brain");
        assert_eq!(value["toLayer"], "agent");
        assert_eq!(value["task"]["layer"], "agent");
        assert_eq!(value["task"]["agentRole"], "security");
        assert_eq!(value["task"]["parentId"], "brain-1");
        assert_eq!(value["task"]["contextRefs"][0]["kind"], "file");
        assert!(value["expectedResult"].is_string());
    }

    #[test]
    fn messages_wrap_packets() {
        let packet = handoff();
        let message = handoff_message(&packet);
        assert_eq!(message.kind, MessageKind::Handoff);
        assert_eq!(message.from, "brain");
        assert_eq!(message.to, "agent:security");
        assert_eq!(message.payload["id"], "task-1:handoff");
        assert_eq!(message.context_refs.len(), 1);

        let ok = WorkerResult::for_handoff(&packet, TaskProgress::default(), "done".into());
        let message = result_message(&ok);
        assert_eq!(message.kind, MessageKind::Result);
        assert_eq!(message.to, "brain");
        assert_eq!(message.parent_id.as_deref(), Some("task-1:handoff"));

        let failed = WorkerResult::failed(&packet, "provider timed out");
        assert_eq!(failed.summary, "security worker failed: provider timed out");
        assert_eq!(failed.risks, vec!["provider timed out".to_string()]);
        let message = result_message_from(Role::Security, &failed);
        assert_eq!(message.kind, MessageKind::Error);
        assert_eq!(message.from, "agent:security");
        assert_eq!(message.id, "task-1:error");
    }
}
