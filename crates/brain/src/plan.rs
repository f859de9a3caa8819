//! The runtime plan: the routing decision turned into workers with isolated contexts.
//!
//! This is what `braincode run --dry-run --json` prints and what the runtime executes.

use braincode_context::{
    BrainLayer, BrainTaskContext, HandoffPacket, HandoffPacketExt, SNAPSHOT_FIELD_MAX_CHARS,
    clip_chars,
};
use braincode_protocol::{
    Clarification, ContextId, ContextRef, Mode, Role, RoutingSource, TaskProgress, TaskStatus,
    ThinkingLevel, Todo, TodoDependency, WorkerPhase,
};
use serde::{Deserialize, Serialize};

use crate::heuristic::{PlannedWorker, RoutingPlan, heuristic_goal};
use crate::modes::{RoutingLimits, routing_limits};
use crate::schema::BrainModel;
use crate::todos::{fallback_todo_id, normalize_dependencies};

/// One worker of the runtime plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeWorkerPlan {
    /// Its role.
    pub role: Role,
    /// Where it runs: support (before the primary), primary, or review (last).
    pub phase: WorkerPhase,
    /// Its self-contained goal.
    pub goal: String,
    /// Why it is in the plan.
    pub reason: String,
    /// Its fresh, isolated task context id.
    pub context_id: ContextId,
    /// The todos it owns.
    pub todo_ids: Vec<String>,
    /// Models to try in order (one model when the router pinned it).
    pub model_chain: Vec<String>,
    /// Reasoning effort from the role's policy.
    pub thinking_level: ThinkingLevel,
    /// A support worker that changes files: it works in its own git worktree and its change
    /// is merged back into the project (the brain's `routing.parallelWriters`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub writer: bool,
}

/// Everything a run executes, as decided before any worker starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimePlan {
    /// The brain id the run uses.
    pub brain_id: String,
    /// Its display name.
    pub brain_name: String,
    /// The orchestration mode.
    pub mode: Mode,
    /// The budgets in force.
    pub limits: RoutingLimits,
    /// Where the routing decision came from.
    pub source: RoutingSource,
    /// Why this plan.
    pub reason: String,
    /// When the router was wanted but the heuristic was used: what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// Router confidence in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// The primary role.
    pub primary: Role,
    /// Workers in execution order: support, then primary, then review.
    pub workers: Vec<RuntimeWorkerPlan>,
    /// Todos in execution order.
    pub todos: Vec<Todo>,
    /// Dependency edges between todos.
    pub dependencies: Vec<TodoDependency>,
    /// Whether a review worker checks the result.
    pub requires_review: bool,
    /// The clarification gate's verdict.
    pub clarification: Clarification,
    /// The Brain's task context; its children are the worker contexts.
    pub brain_context: BrainTaskContext,
    /// What was dropped or adjusted while planning.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Taken by the conversational fast path: the primary answers directly, with no tools
    /// and no project overview (a greeting needs neither).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversational: bool,
}

impl RuntimePlan {
    /// The worker that runs as the primary.
    pub fn primary_worker(&self) -> Option<&RuntimeWorkerPlan> {
        self.workers
            .iter()
            .find(|w| w.phase == WorkerPhase::Primary)
    }

    /// The handoff packet for `worker`, parented to this plan's Brain context.
    pub fn handoff_for(
        &self,
        worker: &RuntimeWorkerPlan,
        context_refs: Vec<ContextRef>,
    ) -> HandoffPacket {
        HandoffPacket::for_worker(
            &self.brain_context.id,
            worker.context_id.clone(),
            worker.role,
            worker.phase,
            &worker.goal,
            context_refs,
        )
    }
}

/// What [`build_runtime_plan`] needs.
pub struct PlanInput<'a> {
    /// The selected brain's id.
    pub brain_id: &'a str,
    /// The selected brain.
    pub brain: &'a BrainModel,
    /// The orchestration mode.
    pub mode: Mode,
    /// The user's request; becomes the Brain context's goal (clipped to
    /// [`SNAPSHOT_FIELD_MAX_CHARS`]).
    pub goal: &'a str,
    /// The routing decision (heuristic, or normalized router decision).
    pub routing: RoutingPlan,
    /// Where the decision came from.
    pub source: RoutingSource,
    /// Why the router was not used, when it was wanted.
    pub fallback_reason: Option<String>,
    /// Produces fresh ids: first the Brain context's, then one per worker in execution
    /// order. A real run passes UUIDs (and may replace the Brain id with the session id).
    pub new_id: &'a mut dyn FnMut() -> String,
}

fn phase_of(role: Role, primary: Role) -> WorkerPhase {
    if role == primary {
        WorkerPhase::Primary
    } else if role == Role::Review {
        WorkerPhase::Review
    } else {
        WorkerPhase::Support
    }
}

/// Builds the runtime plan.
///
/// When review is required and the primary is not the reviewer, a review worker is appended
/// (with a `todo-NN-review` todo if no review todo exists). Dependencies are normalized
/// again, and edges leaving a todo whose role has no worker are dropped with a warning, so a
/// dependent worker can never wait forever. Every worker gets a fresh context id, its model
/// chain (the router's pinned model alone, or the role's chain) and thinking level. Workers
/// are ordered support, primary, review; the Brain context lists their context ids as its
/// children.
pub fn build_runtime_plan(input: PlanInput<'_>) -> RuntimePlan {
    let PlanInput {
        brain_id,
        brain,
        mode,
        goal,
        routing,
        source,
        fallback_reason,
        new_id,
    } = input;
    let limits = routing_limits(&brain.routing, mode);
    let primary = routing.primary;
    let mut warnings = routing.warnings;
    let mut workers = routing.workers;
    let mut todos = routing.todos;

    if routing.requires_review && primary != Role::Review {
        if !workers.iter().any(|w| w.role == Role::Review) {
            workers.push(PlannedWorker {
                role: Role::Review,
                goal: heuristic_goal(Role::Review, false),
                reason: "Review is required for this request (file edits under this brain's \
                         policy, or the router asked for it)."
                    .to_string(),
                model_id: None,
            });
        }
        if !todos.iter().any(|t| t.role == Role::Review) {
            todos.push(Todo {
                id: fallback_todo_id(todos.len(), Role::Review),
                title: "Review the result".to_string(),
                role: Role::Review,
                status: TaskStatus::Pending,
                reason: Some("independent review of the finished work".to_string()),
                summary: None,
                error: None,
            });
        }
    }

    let mut dependencies = normalize_dependencies(&todos, &routing.dependencies, primary);
    let orphans: Vec<&Todo> = todos
        .iter()
        .filter(|t| !workers.iter().any(|w| w.role == t.role))
        .collect();
    for orphan in &orphans {
        let before = dependencies.len();
        dependencies.retain(|e| e.from != orphan.id);
        warnings.push(format!(
            "todo {} is owned by {}, which has no worker; dropped {} dependency edge(s) from it so \
             no worker waits on it",
            orphan.id,
            orphan.role,
            before - dependencies.len()
        ));
    }

    let brain_context_id = ContextId::from(new_id());
    let ordered = workers
        .iter()
        .filter(|w| phase_of(w.role, primary) == WorkerPhase::Support)
        .chain(workers.iter().filter(|w| w.role == primary))
        .chain(
            workers
                .iter()
                .filter(|w| phase_of(w.role, primary) == WorkerPhase::Review),
        );
    let runtime_workers: Vec<RuntimeWorkerPlan> = ordered
        .map(|worker| {
            let policy = brain.policy(worker.role);
            RuntimeWorkerPlan {
                role: worker.role,
                phase: phase_of(worker.role, primary),
                goal: worker.goal.clone(),
                reason: worker.reason.clone(),
                context_id: ContextId::from(new_id()),
                todo_ids: todos
                    .iter()
                    .filter(|t| t.role == worker.role)
                    .map(|t| t.id.clone())
                    .collect(),
                model_chain: worker
                    .model_id
                    .clone()
                    .map_or_else(|| policy.chain(), |id| vec![id]),
                thinking_level: policy.thinking_level,
                writer: brain.routing.parallel_writers
                    && phase_of(worker.role, primary) == WorkerPhase::Support
                    && !crate::is_read_only_support_role(worker.role),
            }
        })
        .collect();

    let brain_context = BrainTaskContext {
        id: brain_context_id,
        layer: BrainLayer,
        goal: clip_chars(goal.trim(), SNAPSHOT_FIELD_MAX_CHARS),
        progress: TaskProgress {
            status: TaskStatus::Pending,
            summary: Some(format!(
                "{} worker(s) planned; {primary} is primary",
                runtime_workers.len()
            )),
            ..TaskProgress::default()
        },
        child_context_ids: runtime_workers
            .iter()
            .map(|w| w.context_id.clone())
            .collect(),
        context_refs: Vec::new(),
    };

    RuntimePlan {
        brain_id: brain_id.to_string(),
        brain_name: brain.name.clone(),
        mode,
        limits,
        source,
        reason: routing.reason,
        fallback_reason,
        confidence: routing.confidence,
        primary,
        workers: runtime_workers,
        todos,
        dependencies,
        requires_review: routing.requires_review,
        clarification: routing.clarification,
        brain_context,
        warnings,
        conversational: false,
    }
}
