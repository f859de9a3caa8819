//! Turning the router's decision object into a [`RoutingPlan`] that the runtime can trust.

use std::collections::{HashMap, HashSet};

use braincode_context::clip_chars;
use braincode_protocol::{Role, TaskStatus, Todo, TodoDependency};
use serde_json::{Map, Value};

use crate::clarify::{normalize_clarification, text};
use crate::heuristic::{PlannedWorker, RoutingPlan, heuristic_goal};
use crate::modes::RoutingLimits;
use crate::schema::BrainModel;
use crate::todos::{
    fallback_todo_id, normalize_dependencies_with_warnings, normalize_todo_id, slug, unique_todo_id,
};

/// The plan reason used when the router gives none.
pub const DEFAULT_ROUTER_REASON: &str = "router brain plan";

/// Longest worker goal kept from the router, in characters.
const GOAL_MAX_CHARS: usize = 600;
/// Longest todo title or reason kept from the router, in characters.
const TITLE_MAX_CHARS: usize = 240;

fn first_text(object: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| text(object.get(*key)))
}

/// A routed role named by `value` (case-insensitive); routeBrain and pet are refused.
fn routed_role(value: Option<&Value>) -> Option<Role> {
    let role: Role = value?.as_str()?.parse().ok()?;
    role.is_routed().then_some(role)
}

fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "(missing)".to_string(), Value::to_string)
}

fn array<'a>(object: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    object
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A model pin, honoured only when the model is already in `role`'s own chain.
fn pinned_model(
    brain: &BrainModel,
    role: Role,
    value: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Option<String> {
    let id = text(value)?;
    if brain.policy(role).chain().contains(&id) {
        Some(id)
    } else {
        warnings.push(format!(
            "ignored router model {id} for {role}: it is not in that role's own model chain"
        ));
        None
    }
}

struct Normalizer<'a> {
    heuristic: &'a RoutingPlan,
    limits: &'a RoutingLimits,
    brain: &'a BrainModel,
    warnings: Vec<String>,
}

impl Normalizer<'_> {
    fn primary(&mut self, decision: &Map<String, Value>) -> Role {
        routed_role(decision.get("role")).unwrap_or_else(|| {
            self.warnings.push(format!(
                "router role {} is not a routed role; kept the heuristic primary {}",
                shown(decision.get("role")),
                self.heuristic.primary
            ));
            self.heuristic.primary
        })
    }

    fn workers(&mut self, decision: &Map<String, Value>, primary: Role) -> Vec<PlannedWorker> {
        let mut workers: Vec<PlannedWorker> = Vec::new();
        for item in array(decision, "workers") {
            let Some(object) = item.as_object() else {
                self.warnings
                    .push("dropped a router worker that is not an object".into());
                continue;
            };
            let Some(role) = routed_role(object.get("role")) else {
                self.warnings.push(format!(
                    "dropped router worker with invalid role {}",
                    shown(object.get("role"))
                ));
                continue;
            };
            let fallback = self.heuristic.worker(role);
            let worker = PlannedWorker {
                role,
                goal: text(object.get("goal"))
                    .map(|g| clip_chars(&g, GOAL_MAX_CHARS))
                    .or_else(|| fallback.map(|w| w.goal.clone()))
                    .unwrap_or_else(|| format!("Handle {role} work.")),
                reason: text(object.get("reason"))
                    .map(|r| clip_chars(&r, TITLE_MAX_CHARS))
                    .or_else(|| fallback.map(|w| w.reason.clone()))
                    .unwrap_or_else(|| format!("Router selected {role}.")),
                model_id: pinned_model(self.brain, role, object.get("modelId"), &mut self.warnings),
            };
            // De-duplicated by role: the last entry wins, at the first entry's position.
            match workers.iter_mut().find(|w| w.role == role) {
                Some(existing) => *existing = worker,
                None => workers.push(worker),
            }
        }
        if primary != Role::Rush && workers.iter().any(|w| w.role == Role::Rush) {
            workers.retain(|w| w.role != Role::Rush);
            self.warnings
                .push("dropped the rush worker: rush only runs as the primary".into());
        }
        if !workers.iter().any(|w| w.role == primary) {
            let from_heuristic = self.heuristic.worker(primary);
            workers.insert(
                0,
                PlannedWorker {
                    role: primary,
                    goal: from_heuristic
                        .map_or_else(|| heuristic_goal(primary, true), |w| w.goal.clone()),
                    reason: from_heuristic
                        .map_or_else(|| "Router primary role.".to_string(), |w| w.reason.clone()),
                    model_id: None,
                },
            );
        }
        if let Some(worker) = workers.iter_mut().find(|w| w.role == primary)
            && worker.model_id.is_none()
        {
            worker.model_id = pinned_model(
                self.brain,
                primary,
                decision.get("modelId"),
                &mut self.warnings,
            );
        }
        let cap = self.limits.max_worker_agents.max(1);
        if workers.len() > cap {
            let mut kept = Vec::with_capacity(cap);
            let mut dropped = Vec::new();
            let mut room = cap - 1;
            for worker in workers {
                if worker.role == primary {
                    kept.push(worker);
                } else if room > 0 {
                    room -= 1;
                    kept.push(worker);
                } else {
                    dropped.push(worker.role.as_str());
                }
            }
            self.warnings.push(format!(
                "the plan allows {cap} worker(s) including the primary; dropped: {}",
                dropped.join(", ")
            ));
            workers = kept;
        }
        workers
    }

    /// Returns the todos and a map from each raw id (slugged) to the final id.
    fn todos(
        &mut self,
        decision: &Map<String, Value>,
        primary: Role,
        workers: &[PlannedWorker],
    ) -> (Vec<Todo>, HashMap<String, String>) {
        let cap = self.limits.max_todos.max(1);
        let raw = array(decision, "todos");
        if raw.len() > cap {
            self.warnings.push(format!(
                "the plan allows {cap} todo(s); ignored {} more from the router",
                raw.len() - cap
            ));
        }
        let mut todos: Vec<Todo> = Vec::new();
        let mut taken: HashSet<String> = HashSet::new();
        let mut ids: HashMap<String, String> = HashMap::new();
        for item in raw.iter().take(cap) {
            let Some(object) = item.as_object() else {
                continue;
            };
            let Some(title) = first_text(object, &["title", "task", "goal"]) else {
                self.warnings
                    .push("dropped a router todo without a title".into());
                continue;
            };
            let mut role = routed_role(object.get("role")).unwrap_or(primary);
            if role == Role::Rush && primary != Role::Rush {
                self.warnings.push(format!(
                    "dropped rush todo '{title}': rush only runs as the primary"
                ));
                continue;
            }
            if !workers.iter().any(|w| w.role == role) {
                self.warnings.push(format!(
                    "todo '{title}' was owned by {role}, which has no worker; reassigned to {primary}"
                ));
                role = primary;
            }
            let raw_id = text(object.get("id")).unwrap_or_default();
            let id = unique_todo_id(normalize_todo_id(&raw_id, todos.len(), role), &mut taken);
            let key = slug(&raw_id);
            if !key.is_empty() {
                ids.entry(key).or_insert_with(|| id.clone());
            }
            todos.push(Todo {
                id,
                title: clip_chars(&title, TITLE_MAX_CHARS),
                role,
                status: TaskStatus::Pending,
                reason: text(object.get("reason")).map(|r| clip_chars(&r, TITLE_MAX_CHARS)),
                summary: None,
                error: None,
            });
        }
        if todos.is_empty() {
            // One todo per worker, support first, so every worker has something to own.
            let ordered = workers
                .iter()
                .filter(|w| w.role != primary)
                .chain(workers.iter().filter(|w| w.role == primary));
            for worker in ordered {
                todos.push(Todo {
                    id: unique_todo_id(fallback_todo_id(todos.len(), worker.role), &mut taken),
                    title: worker.goal.clone(),
                    role: worker.role,
                    status: TaskStatus::Pending,
                    reason: Some("router gave no todos; one per worker".into()),
                    summary: None,
                    error: None,
                });
            }
            while todos.len() > cap {
                if let Some(index) = todos.iter().rposition(|t| t.role != primary) {
                    todos.remove(index);
                } else {
                    break;
                }
            }
        }
        (todos, ids)
    }

    fn dependencies(
        &mut self,
        decision: &Map<String, Value>,
        todos: &[Todo],
        ids: &HashMap<String, String>,
        primary: Role,
    ) -> Vec<TodoDependency> {
        let resolve = |raw: String| ids.get(&slug(&raw)).cloned().unwrap_or(raw);
        let mut edges = Vec::new();
        for item in array(decision, "dependencies") {
            let Some(object) = item.as_object() else {
                continue;
            };
            let (Some(from), Some(to)) = (
                first_text(object, &["from", "fromTodoId"]),
                first_text(object, &["to", "toTodoId"]),
            ) else {
                continue;
            };
            let (from, to) = (resolve(from), resolve(to));
            if from == to {
                continue;
            }
            edges.push(TodoDependency {
                from,
                to,
                reason: text(object.get("reason")),
            });
        }
        let normalized = normalize_dependencies_with_warnings(todos, &edges, primary);
        self.warnings.extend(normalized.warnings);
        normalized.edges
    }
}

/// Normalizes the router's decision object against the heuristic plan.
///
/// * Primary: `role` when it is a routed role, otherwise the heuristic primary.
/// * Workers: only valid routed roles, de-duplicated by role (the last entry wins); a
///   missing goal or reason comes from the heuristic worker of that role, else
///   "Handle <role> work." / "Router selected <role>."; rush is dropped unless it is the
///   primary; the primary is always present; at most `max_worker_agents` (the primary is
///   never the one cut).
/// * Todos: the first `max_todos` are considered; each needs a title (`title`, `task` or
///   `goal`); an invalid role becomes the primary; rush todos are dropped unless rush is the
///   primary; a todo whose role has no worker is reassigned to the primary; ids are
///   normalized (`todo-NN-role` when missing) and made unique. No todos at all: one per
///   worker.
/// * Dependencies: `from`/`to` or `fromTodoId`/`toTodoId`, with ids normalized the same way
///   todo ids are, then [`crate::normalize_dependencies`].
/// * Clarification: the router's when it is valid, otherwise the heuristic's.
/// * Confidence: a finite number clamped to [0, 1], otherwise none.
/// * requiresReview: the heuristic's value OR an explicit `requiresReview: true` from the
///   router. A router can ask for review but never remove one the heuristic requires.
/// * modelId (on a worker, or on the decision for the primary): kept only when the model is
///   already in that role's own chain; the role then runs on that model alone.
///
/// Everything dropped or changed is listed in the plan's warnings.
pub fn normalize_router_decision(
    raw: &Value,
    heuristic: &RoutingPlan,
    limits: &RoutingLimits,
    brain: &BrainModel,
) -> RoutingPlan {
    let Some(decision) = raw.as_object() else {
        let mut plan = heuristic.clone();
        plan.warnings
            .push("the router decision is not a JSON object; used the heuristic plan".into());
        return plan;
    };
    let mut normalizer = Normalizer {
        heuristic,
        limits,
        brain,
        warnings: Vec::new(),
    };
    let primary = normalizer.primary(decision);
    let workers = normalizer.workers(decision, primary);
    let (todos, ids) = normalizer.todos(decision, primary, &workers);
    let dependencies = normalizer.dependencies(decision, &todos, &ids, primary);
    let clarification = decision
        .get("clarification")
        .and_then(normalize_clarification)
        .unwrap_or_else(|| heuristic.clarification.clone());
    let confidence = decision
        .get("confidence")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite())
        .map(|c| c.clamp(0.0, 1.0));
    let router_wants_review = decision.get("requiresReview") == Some(&Value::Bool(true));
    RoutingPlan {
        primary,
        workers,
        todos,
        dependencies,
        requires_review: heuristic.requires_review || router_wants_review,
        clarification,
        confidence,
        reason: text(decision.get("reason"))
            .map(|r| clip_chars(&r, TITLE_MAX_CHARS))
            .unwrap_or_else(|| DEFAULT_ROUTER_REASON.to_string()),
        warnings: normalizer.warnings,
    }
}
