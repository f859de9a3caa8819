//! The payloads of the run-level records: start, end, error, the plan (`routing`) and the
//! Brain's context (`context_plan`).

use serde::{Deserialize, Serialize};

use crate::{
    BrainRef, BrainTaskContext, CheckSummary, FinalStatus, PatchSummary, ReviewDecision, Role,
    RoutingSource, WorkerPhase, WorkerResult,
};

fn is_false(value: &bool) -> bool {
    !*value
}

/// Summary of the project and user support files a run saw.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSupportSummary {
    /// Absolute project root.
    pub root: String,
    /// Whether a project AGENTS.md was found.
    #[serde(default)]
    pub agents_md: bool,
    /// Whether a user AGENTS.md was found.
    #[serde(default)]
    pub user_agents_md: bool,
    /// Skill ids (project and user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
    /// MCP server names (project and user).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<String>,
    /// Number of hook handlers configured.
    #[serde(default)]
    pub hooks: u32,
}

/// `run_start`: the run begins — the first record of every run, with the prompt as typed, so a
/// run killed at any point is listed with it. Each primary attempt is a `worker_start` with
/// phase `primary`.
///
/// Journals written before the plan was recorded in `routing` may carry a `plan` field here;
/// it is ignored.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStart {
    /// The prompt as the user typed it (clipped for the journal when huge).
    pub prompt: String,
    /// What project support was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_support: Option<ProjectSupportSummary>,
    /// Model candidate that runs this attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// 1-based attempt number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// The run's id: the seed of its context ids, so the records of one run can be told from
    /// those of another run of the same session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The Brain (and mode) the run used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub brain: Option<BrainRef>,
    /// The permission mode the run was started with (`default`, `acceptEdits`,
    /// `bypassPermissions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
    /// How the user asked the run to be planned (`auto`, `heuristic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_choice: Option<String>,
    /// Run id of the interrupted run this run resumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_of: Option<String>,
    /// Most tokens the run may use (`--max-tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Most US dollars the run may spend (`--max-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

/// `run_end`: the run finished and answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    /// The final answer.
    pub summary: String,
    /// The support workers' results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_results: Option<Vec<WorkerResult>>,
    /// What changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchSummary>,
    /// Checks gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<CheckSummary>,
    /// Review gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_decision: Option<ReviewDecision>,
    /// Final status (same as the report's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FinalStatus>,
    /// Fix-loop passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix_iterations: Option<u32>,
    /// Attempt that produced the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Wall time of the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `run_error`: an attempt (or the whole run) failed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// Human-readable error.
    pub error: String,
    /// Error class (`aborted`, `auth`, `rate_limit`, `network`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Attempt that failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// Whether the next candidate will be tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub will_fallback: Option<bool>,
    /// Wall time of the whole run (on the run's terminal record only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The run's final status (on the run's terminal record only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<FinalStatus>,
}

/// `context_plan`: the BrainTaskContext of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPlan {
    /// The BrainTaskContext.
    pub context: BrainTaskContext,
}

/// One worker of the plan, as the `routing` record lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedWorker {
    /// Role.
    pub role: Role,
    /// Where it runs.
    pub phase: WorkerPhase,
    /// Its goal.
    pub goal: String,
    /// Its task context id (the `taskId` of its handoff and result).
    pub context_id: String,
    /// The todos it owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todo_ids: Vec<String>,
    /// Model candidates, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_chain: Vec<String>,
}

/// `routing`: how the plan was made, including why the router was not used, and the plan's
/// workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingRecord {
    /// Plan source.
    pub source: RoutingSource,
    /// Primary role.
    pub primary_role: Role,
    /// Why this plan.
    pub reason: String,
    /// Router confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Router model used (or tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What went wrong when the router was wanted but the heuristic was used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// The planned workers (support, primary, review), in execution order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<PlannedWorker>,
    /// Whether the plan asks for an independent review.
    #[serde(default, skip_serializing_if = "is_false")]
    pub requires_review: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{JournalEntry, Mode, Record};

    #[test]
    fn old_run_start_with_a_plan_still_parses() {
        let line = r#"{"timestamp":1,"type":"run_start","prompt":"hi","plan":{"primary":"rush","workers":[]},"attempt":1}"#;
        let entry: JournalEntry = serde_json::from_str(line).unwrap();
        let Record::RunStart(start) = &entry.record else {
            panic!("{:?}", entry.record);
        };
        assert_eq!(start.prompt, "hi");
        assert_eq!(start.attempt, Some(1));
        assert_eq!(start.run_id, None);
        // Written back without the dropped field.
        assert_eq!(
            serde_json::to_string(&entry).unwrap(),
            r#"{"timestamp":1,"type":"run_start","prompt":"hi","attempt":1}"#
        );
    }

    #[test]
    fn new_run_fields_round_trip_and_stay_off_when_unset() {
        let start = RunStart {
            prompt: "p".into(),
            run_id: Some("r1".into()),
            brain: Some(BrainRef {
                id: "b".into(),
                name: "B".into(),
                mode: Mode::Auto,
            }),
            permission: Some("acceptEdits".into()),
            routing_choice: Some("auto".into()),
            resume_of: Some("r0".into()),
            ..RunStart::default()
        };
        let value = serde_json::to_value(&start).unwrap();
        assert_eq!(value["runId"], "r1");
        assert_eq!(value["brain"]["id"], "b");
        assert_eq!(value["routingChoice"], "auto");
        assert_eq!(value["resumeOf"], "r0");
        assert_eq!(serde_json::from_value::<RunStart>(value).unwrap(), start);

        let bare = serde_json::to_value(RunError {
            error: "e".into(),
            ..RunError::default()
        })
        .unwrap();
        assert_eq!(bare, serde_json::json!({"error": "e"}));
        let end = RunEnd {
            summary: "s".into(),
            duration_ms: Some(5),
            status: Some(FinalStatus::Answered),
            ..RunEnd::default()
        };
        let value = serde_json::to_value(&end).unwrap();
        assert_eq!(value["durationMs"], 5);
        assert_eq!(serde_json::from_value::<RunEnd>(value).unwrap(), end);
    }

    #[test]
    fn routing_lists_planned_workers() {
        let old = r#"{"source":"heuristic","primaryRole":"rush","reason":"r"}"#;
        let routing: RoutingRecord = serde_json::from_str(old).unwrap();
        assert!(routing.workers.is_empty() && !routing.requires_review);
        assert_eq!(serde_json::to_string(&routing).unwrap(), old);

        let mut routing = routing;
        routing.requires_review = true;
        routing.workers.push(PlannedWorker {
            role: Role::Qa,
            phase: WorkerPhase::Support,
            goal: "g".into(),
            context_id: "c1".into(),
            todo_ids: vec!["todo-1".into()],
            model_chain: vec!["m1".into(), "m2".into()],
        });
        let value = serde_json::to_value(&routing).unwrap();
        assert_eq!(value["requiresReview"], true);
        assert_eq!(value["workers"][0]["contextId"], "c1");
        assert_eq!(value["workers"][0]["modelChain"][1], "m2");
        assert_eq!(
            serde_json::from_value::<RoutingRecord>(value).unwrap(),
            routing
        );
    }
}
