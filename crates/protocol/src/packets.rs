//! The shapes of the layered task contexts and of the two packets that cross between them.
//!
//! The Brain owns the orchestration context ([`BrainTaskContext`]); each worker owns exactly
//! one isolated task context ([`AgentTaskContext`]). Only two packets cross that boundary: a
//! [`HandoffPacket`] (brain → agent) and a [`WorkerResult`] (agent → brain), each carrying
//! direction tags ([`BrainLayer`], [`AgentLayer`]) that refuse the wrong direction. No
//! agent-to-agent packet exists.
//!
//! Only the shapes live here, so the journal records can carry them typed; the behaviour on
//! them (constructors, normalizers, budgets) is the `context` crate's.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::{ContextId, ContextRef, Role, TaskProgress, TaskStatus};

/// The two context layers: the Brain (orchestration) and an agent (one isolated task).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextLayer {
    /// The orchestrator's layer.
    Brain,
    /// A worker's layer.
    Agent,
}

impl ContextLayer {
    /// The JSON name of the layer.
    pub const fn as_str(self) -> &'static str {
        match self {
            ContextLayer::Brain => "brain",
            ContextLayer::Agent => "agent",
        }
    }
}

impl fmt::Display for ContextLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Deserializes a layer tag that must equal `expected`.
fn expect_layer<'de, D: Deserializer<'de>>(
    deserializer: D,
    expected: ContextLayer,
) -> Result<(), D::Error> {
    struct TagVisitor(ContextLayer);

    impl Visitor<'_> for TagVisitor {
        type Value = ();

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "the layer tag \"{}\"", self.0)
        }

        fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
            if value == self.0.as_str() {
                Ok(())
            } else {
                Err(E::custom(format!(
                    "wrong context layer tag {value:?}: expected \"{}\" (handoff packets go \
                     brain -> agent, worker results go agent -> brain; there is no other \
                     direction)",
                    self.0
                )))
            }
        }
    }

    deserializer.deserialize_str(TagVisitor(expected))
}

/// The `"brain"` tag: a field that can only hold the Brain layer.
///
/// Zero-sized; it serializes as exactly the string `"brain"` and refuses any other value, so
/// a packet travelling the wrong way fails to deserialize with a message that names the
/// expected and the found layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BrainLayer;

/// The `"agent"` tag: a field that can only hold the agent layer (see [`BrainLayer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AgentLayer;

impl BrainLayer {
    /// The layer this tag stands for.
    pub const LAYER: ContextLayer = ContextLayer::Brain;
}

impl AgentLayer {
    /// The layer this tag stands for.
    pub const LAYER: ContextLayer = ContextLayer::Agent;
}

impl Serialize for BrainLayer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::LAYER.as_str())
    }
}

impl Serialize for AgentLayer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(Self::LAYER.as_str())
    }
}

impl<'de> Deserialize<'de> for BrainLayer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        expect_layer(deserializer, Self::LAYER).map(|()| BrainLayer)
    }
}

impl<'de> Deserialize<'de> for AgentLayer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        expect_layer(deserializer, Self::LAYER).map(|()| AgentLayer)
    }
}

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
///
/// Built by `HandoffPacketExt::for_worker` in the `context` crate.
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

impl HandoffPacket {
    /// The role the handoff is addressed to.
    pub fn role(&self) -> Role {
        self.task.agent_role
    }
}

/// Agent → brain: the only thing a worker hands back.
///
/// There is deliberately no transcript, reasoning trace or tool log here: those stay in the
/// worker's isolated session. Built by `WorkerResultExt` and `normalize_worker_result` in
/// the `context` crate.
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

impl WorkerResult {
    /// Whether the worker failed.
    pub fn is_failed(&self) -> bool {
        self.progress.status == TaskStatus::Failed
    }

    /// The summary to show for this result: its own, else its progress line, else `None`
    /// (blank strings count as missing).
    pub fn display_summary(&self) -> Option<&str> {
        Some(self.summary.as_str())
            .filter(|s| !s.trim().is_empty())
            .or_else(|| {
                self.progress
                    .summary
                    .as_deref()
                    .filter(|s| !s.trim().is_empty())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContextRefKind;
    use serde_json::json;

    fn id(value: &str) -> ContextId {
        ContextId::from(value.to_string())
    }

    fn handoff() -> HandoffPacket {
        HandoffPacket {
            from_layer: BrainLayer,
            to_layer: AgentLayer,
            id: "t:handoff".into(),
            task: AgentTaskContext {
                id: id("t"),
                parent_id: id("b"),
                layer: AgentLayer,
                agent_role: Role::Qa,
                goal: "test it".into(),
                progress: TaskProgress::default(),
                context_refs: vec![ContextRef {
                    kind: ContextRefKind::File,
                    uri: "src/lib.rs".into(),
                    label: None,
                }],
            },
            constraints: vec!["only this".into()],
            expected_result: "json".into(),
        }
    }

    fn result() -> WorkerResult {
        WorkerResult {
            from_layer: AgentLayer,
            to_layer: BrainLayer,
            handoff_id: "t:handoff".into(),
            task_id: id("t"),
            parent_id: id("b"),
            progress: TaskProgress {
                status: TaskStatus::Failed,
                summary: Some("broke".into()),
                ..TaskProgress::default()
            },
            summary: " ".into(),
            artifacts: Vec::new(),
            risks: vec!["r".into()],
            next_questions: Vec::new(),
        }
    }

    #[test]
    fn tags_round_trip_as_plain_strings() {
        assert_eq!(serde_json::to_string(&BrainLayer).unwrap(), "\"brain\"");
        assert_eq!(serde_json::to_string(&AgentLayer).unwrap(), "\"agent\"");
        assert_eq!(
            serde_json::from_str::<BrainLayer>("\"brain\"").unwrap(),
            BrainLayer
        );
        assert_eq!(
            serde_json::from_str::<AgentLayer>("\"agent\"").unwrap(),
            AgentLayer
        );
    }

    #[test]
    fn a_wrong_tag_names_both_layers() {
        let err = serde_json::from_str::<BrainLayer>("\"agent\"")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("\"agent\"") && err.contains("expected \"brain\""),
            "{err}"
        );
        assert!(serde_json::from_str::<AgentLayer>("7").is_err());
    }

    #[test]
    fn packets_keep_their_wire_shape() {
        let value = serde_json::to_value(handoff()).unwrap();
        assert_eq!(
            value,
            json!({
                "fromLayer": "brain", "toLayer": "agent", "id": "t:handoff",
                "task": {"id": "t", "parentId": "b", "layer": "agent", "agentRole": "qa",
                         "goal": "test it", "progress": {"status": "pending"},
                         "contextRefs": [{"kind": "file", "uri": "src/lib.rs"}]},
                "constraints": ["only this"], "expectedResult": "json"
            })
        );
        assert_eq!(
            serde_json::from_value::<HandoffPacket>(value).unwrap(),
            handoff()
        );

        let value = serde_json::to_value(result()).unwrap();
        assert_eq!(
            value,
            json!({
                "fromLayer": "agent", "toLayer": "brain", "handoffId": "t:handoff",
                "taskId": "t", "parentId": "b",
                "progress": {"status": "failed", "summary": "broke"},
                "summary": " ", "artifacts": [], "risks": ["r"], "nextQuestions": []
            })
        );
        assert_eq!(
            serde_json::from_value::<WorkerResult>(value).unwrap(),
            result()
        );
    }

    #[test]
    fn accessors() {
        assert_eq!(handoff().role(), Role::Qa);
        let failed = result();
        assert!(failed.is_failed());
        assert_eq!(failed.display_summary(), Some("broke"));
        let mut done = result();
        done.summary = "done".into();
        done.progress.status = TaskStatus::Completed;
        assert!(!done.is_failed());
        assert_eq!(done.display_summary(), Some("done"));
        done.summary.clear();
        done.progress.summary = None;
        assert_eq!(done.display_summary(), None);
    }
}
