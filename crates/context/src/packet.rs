//! Task contexts and the two packets that cross between the Brain and a worker.

use braincode_protocol::{
    AgentMessage, ContextId, ContextRef, MessageKind, Role, TaskProgress, TaskStatus, WorkerPhase,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::layer::{AgentLayer, BrainLayer};

/// The Brain's own task context: exactly one per run, the parent of every worker context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrainTaskContext {
    /// Context id (the session id in a real run).
    pub id: ContextId,
    /// Always `"brain"`.
    pub layer: BrainLayer,
    /// The user's goal for the run.
    pub goal: String,
    /// Progress of the whole run.
    pub progress: TaskProgress,
    /// The worker contexts this run created, in execution order.
    pub child_context_ids: Vec<ContextId>,
    /// References the Brain keeps for the run (files, threads, summaries, artifacts).
    #[serde(default)]
    pub context_refs: Vec<ContextRef>,
}

/// One worker's isolated task context. A worker never sees another worker's context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTaskContext {
    /// Context id of this task (fresh per worker per run).
    pub id: ContextId,
    /// The Brain context this task belongs to.
    pub parent_id: ContextId,
    /// Always `"agent"`.
    pub layer: AgentLayer,
    /// The role the worker runs as.
    pub agent_role: Role,
    /// What this worker must achieve.
    pub goal: String,
    /// Progress of this task.
    pub progress: TaskProgress,
    /// References handed to the worker.
    #[serde(default)]
    pub context_refs: Vec<ContextRef>,
}

/// Brain → agent: everything a worker is given about its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffPacket {
    /// Always `"brain"`.
    pub from_layer: BrainLayer,
    /// Always `"agent"`.
    pub to_layer: AgentLayer,
    /// Packet id (`<task id>:handoff`).
    pub id: String,
    /// The worker's task envelope.
    pub task: AgentTaskContext,
    /// Hard rules the worker prompt carries verbatim.
    pub constraints: Vec<String>,
    /// Description of the reply shape the worker must return.
    pub expected_result: String,
}

/// Agent → brain: the only thing a worker hands back.
///
/// There is deliberately no transcript, reasoning trace or tool log here: those stay in the
/// worker's isolated session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerResult {
    /// Always `"agent"`.
    pub from_layer: AgentLayer,
    /// Always `"brain"`.
    pub to_layer: BrainLayer,
    /// The handoff this result answers.
    pub handoff_id: String,
    /// The task context id, echoed from the handoff (never taken from the model).
    pub task_id: ContextId,
    /// The Brain context id, echoed from the handoff (never taken from the model).
    pub parent_id: ContextId,
    /// Final progress of the task.
    pub progress: TaskProgress,
    /// Short, user-facing summary of the outcome.
    pub summary: String,
    /// What the worker produced or relied on.
    #[serde(default)]
    pub artifacts: Vec<ContextRef>,
    /// Risks the Brain should weigh.
    #[serde(default)]
    pub risks: Vec<String>,
    /// Open questions for the Brain or the user.
    #[serde(default)]
    pub next_questions: Vec<String>,
}

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

impl HandoffPacket {
    /// Builds the handoff for one worker context.
    ///
    /// `task_id` is the worker's fresh context id and `parent` the Brain context id; the
    /// packet id is derived from the task id so a handoff and its result can be joined in the
    /// journal. The task starts `pending` with the summary "<role> <phase> task is queued".
    pub fn for_worker(
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

    /// The role the handoff is addressed to.
    pub fn role(&self) -> Role {
        self.task.agent_role
    }
}

impl WorkerResult {
    /// A result for `handoff` with the ids echoed from it and empty lists.
    pub fn for_handoff(handoff: &HandoffPacket, progress: TaskProgress, summary: String) -> Self {
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

    /// A failed result (every model candidate failed, the worker could not run).
    pub fn failed(handoff: &HandoffPacket, error: &str) -> Self {
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

    /// Whether the worker failed.
    pub fn is_failed(&self) -> bool {
        self.progress.status == TaskStatus::Failed
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
