//! The deterministic router: a plan from keywords alone, no model call.
//!
//! Used when the routeBrain router is off, fails or is skipped, and as the baseline the
//! router's decision is normalized against. It is pure and needs no network, so a plan
//! always exists.
//!
//! Limits: the reference heuristic ignored the mode's budgets, so auto mode could plan four
//! or more support workers. [`heuristic_route`] caps the plan like a router decision
//! (workers, the primary included, to `maxWorkerAgents`; todos to `maxTodos`), dropping
//! support workers in the order given by [`SUPPORT_KEEP_ORDER`]. The review worker the
//! runtime appends when review is required is not counted: a budget never removes a safety
//! gate. [`heuristic_route_uncapped`] keeps the reference behaviour; the spec's worked
//! example ("implement a secure frontend login flow" → frontend with librarian, backend and
//! security) is what it returns, and what [`heuristic_route`] returns whenever the brain's
//! budget allows four workers (radical mode, or `maxParallelAgents` ≥ 4). With the default
//! brain in auto mode (two workers) the same prompt plans frontend plus security, and the
//! runtime appends the review.

use braincode_protocol::{Clarification, Mode, Role, TaskStatus, Todo, TodoDependency};
use serde::{Deserialize, Serialize};

use crate::clarify::assess_clarification;
use crate::keywords::Signals;
use crate::modes::{RoutingLimits, routing_limits};
use crate::schema::BrainModel;
use crate::todos::{fallback_todo_id, normalize_dependencies};

/// One worker a plan asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedWorker {
    /// The role it runs as.
    pub role: Role,
    /// Its self-contained goal.
    pub goal: String,
    /// Why the plan includes it.
    pub reason: String,
    /// A model the router pinned for it (already checked against the role's own chain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
}

/// A routing decision: who works on the request, on what, in which order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingPlan {
    /// The role that acts and answers.
    pub primary: Role,
    /// Every worker, the primary included (primary first in heuristic plans).
    pub workers: Vec<PlannedWorker>,
    /// Todos in execution order.
    pub todos: Vec<Todo>,
    /// Dependency edges between todos.
    pub dependencies: Vec<TodoDependency>,
    /// Whether a review worker must check the result.
    pub requires_review: bool,
    /// The clarification gate's verdict.
    pub clarification: Clarification,
    /// Router confidence in [0, 1] (none for heuristic plans).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why this plan.
    pub reason: String,
    /// What was dropped or adjusted while building the plan.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl RoutingPlan {
    /// The worker of `role`, if the plan has one.
    pub fn worker(&self, role: Role) -> Option<&PlannedWorker> {
        self.workers.iter().find(|w| w.role == role)
    }

    /// Whether the plan has a worker of `role`.
    pub fn has_worker(&self, role: Role) -> bool {
        self.worker(role).is_some()
    }
}

/// What a role does for the request, completing "Complete the request by …" or "Support the
/// primary agent by …".
fn goal_clause(role: Role) -> &'static str {
    match role {
        Role::Frontend => "building or adjusting the UI, client state and accessibility it needs",
        Role::Backend => "implementing the API, service and validation changes it needs",
        Role::Designer => "defining the flows, states, layout and copy it needs",
        Role::ImageMaker => "generating the requested image asset",
        Role::Dba => "planning the schema, migration and query changes it needs",
        Role::Devops => "handling the git, CI, build or environment work it needs",
        Role::Security => "assessing the auth, permission, secret and injection risks in it",
        Role::Qa => "defining and running the verification it needs",
        Role::Review => {
            "independently reviewing the result for defects, regressions and security issues"
        }
        Role::Summarize => "writing a handoff-ready summary",
        Role::Oracle => "reasoning through the hard decisions and trade-offs in it",
        Role::Librarian => "mapping the relevant files, symbols and architecture",
        Role::Rush => "answering briefly and directly",
        Role::RouteBrain | Role::Pet => "handling its part",
    }
}

/// The heuristic goal of `role` as primary or as support.
pub fn heuristic_goal(role: Role, primary: bool) -> String {
    if primary {
        format!("Complete the request by {}.", goal_clause(role))
    } else {
        format!("Support the primary agent by {}.", goal_clause(role))
    }
}

/// The fixed todo of a role: (id, title).
fn fixed_todo(role: Role) -> Option<(&'static str, &'static str)> {
    Some(match role {
        Role::Librarian => ("map-context", "Map the relevant code and context"),
        Role::Designer => ("design-experience", "Design the flows, states and copy"),
        Role::Dba => ("plan-data", "Plan the data changes"),
        Role::Security => ("assess-security", "Assess the security risks"),
        Role::Backend => ("build-backend", "Build the backend changes"),
        Role::Frontend => ("build-frontend", "Build the frontend changes"),
        Role::Devops => ("handle-workspace", "Handle the workspace operation"),
        Role::Qa => ("verify-behavior", "Verify the behaviour"),
        Role::Review => ("review-result", "Review the result"),
        Role::ImageMaker => ("generate-image", "Generate the image"),
        _ => return None,
    })
}

/// Emission order of the fixed todos.
const TODO_ORDER: [Role; 10] = [
    Role::Librarian,
    Role::Designer,
    Role::Dba,
    Role::Security,
    Role::Backend,
    Role::Frontend,
    Role::Devops,
    Role::Qa,
    Role::Review,
    Role::ImageMaker,
];

/// Id of the report todo the primary owns when the request asks for a summary.
const REPORT_TODO: &str = "final-report";

fn new_todo(id: &str, title: &str, role: Role) -> Todo {
    Todo {
        id: id.to_string(),
        title: title.to_string(),
        role,
        status: TaskStatus::Pending,
        reason: None,
        summary: None,
        error: None,
    }
}

fn primary_role(s: &Signals) -> (Role, &'static str) {
    if s.image {
        (Role::ImageMaker, "the request asks for a generated image")
    } else if s.review && !s.file_edit {
        // An audit asks for findings, not changes: the reviewer (or the security specialist,
        // when it is about security) leads, whatever code domain it names.
        if s.security {
            (Role::Security, "a security audit that asks for no change")
        } else {
            (Role::Review, "a review that asks for no change")
        }
    } else if s.workspace && !s.has_domain() {
        (
            Role::Devops,
            "it is a workspace operation with no domain keyword",
        )
    } else if s.frontend {
        (Role::Frontend, "frontend keywords matched")
    } else if s.backend {
        (Role::Backend, "backend keywords matched")
    } else if s.dba {
        (Role::Dba, "database keywords matched")
    } else if s.designer {
        (Role::Designer, "design keywords matched")
    } else if s.security {
        (Role::Security, "security keywords matched")
    } else if s.qa {
        (Role::Qa, "verification keywords matched")
    } else if s.review {
        (Role::Review, "review keywords matched")
    } else if s.summary {
        (Role::Summarize, "summary keywords matched")
    } else if s.workspace {
        (Role::Devops, "workspace keywords matched")
    } else if s.file_edit && !s.docs {
        // A change to code with no domain keyword ("rename main to start in main.rs"): an
        // agent that edits code, never the brief answerer.
        (
            Role::Backend,
            "a change request with no domain keyword: an agent that edits code",
        )
    } else {
        (Role::Rush, "no specialist keyword matched")
    }
}

/// Support workers in the heuristic's order, with why each was added.
fn support_roles(s: &Signals, primary: Role) -> Vec<(Role, &'static str)> {
    if primary == Role::ImageMaker {
        return Vec::new();
    }
    let candidates = [
        (
            Role::Librarian,
            s.file_edit
                && !matches!(
                    primary,
                    Role::Rush | Role::Devops | Role::Review | Role::Summarize
                ),
            "file-edit wording: map the code before changing it",
        ),
        (
            Role::Librarian,
            s.codebase && primary == Role::Rush,
            "a question about the code base: map it before answering",
        ),
        (Role::Designer, s.designer, "design keywords matched"),
        (Role::Backend, s.backend, "backend keywords matched"),
        (Role::Frontend, s.frontend, "frontend keywords matched"),
        (Role::Dba, s.dba, "database keywords matched"),
        (Role::Security, s.security, "security keywords matched"),
        (Role::Qa, s.qa, "verification keywords matched"),
        (
            Role::Review,
            s.review && s.file_edit,
            "review requested for a file-editing change",
        ),
    ];
    candidates
        .into_iter()
        .filter(|(role, wanted, _)| *wanted && *role != primary)
        .map(|(role, _, why)| (role, why))
        .collect()
}

fn is_implementation(todo: &Todo) -> bool {
    todo.id != REPORT_TODO
        && !matches!(
            todo.role,
            Role::Librarian | Role::Designer | Role::Qa | Role::Review
        )
}

fn heuristic_edges(todos: &[Todo]) -> Vec<TodoDependency> {
    let has = |id: &str| todos.iter().any(|t| t.id == id);
    let mut edges = Vec::new();
    let mut add = |from: &str, to: &str, reason: &str| {
        if has(from) && has(to) {
            edges.push(TodoDependency {
                from: from.to_string(),
                to: to.to_string(),
                reason: Some(reason.to_string()),
            });
        }
    };
    let implementation: Vec<&Todo> = todos.iter().filter(|t| is_implementation(t)).collect();
    for todo in &implementation {
        add(
            "map-context",
            &todo.id,
            "implementation starts from the code map",
        );
    }
    add(
        "design-experience",
        "build-frontend",
        "the UI follows the design",
    );
    add(
        "plan-data",
        "build-backend",
        "the backend follows the data plan",
    );
    add(
        "assess-security",
        "build-backend",
        "the backend applies the security findings",
    );
    add(
        "build-backend",
        "build-frontend",
        "the UI uses the backend contract",
    );
    for todo in &implementation {
        add(
            &todo.id,
            "verify-behavior",
            "verification needs the implementation",
        );
        add(&todo.id, "review-result", "review needs the implementation");
        add(
            &todo.id,
            REPORT_TODO,
            "the report covers the implementation",
        );
    }
    add(
        "verify-behavior",
        REPORT_TODO,
        "the report includes verification",
    );
    edges
}

/// The reference heuristic (spec Appendix C), without any mode cap.
///
/// Kept public for diagnostics and for tests of the reference behaviour; runs use
/// [`heuristic_route`], which applies the mode's worker and todo limits.
pub fn heuristic_route_uncapped(prompt: &str, brain: &BrainModel) -> RoutingPlan {
    let mut signals = Signals::detect(prompt);
    // A path, a back-ticked name or a `call()` is about the code even without a keyword.
    signals.codebase |= crate::fast_path::mentions_workspace_artifact(prompt);
    let (primary, primary_why) = primary_role(&signals);

    let mut workers = vec![PlannedWorker {
        role: primary,
        goal: heuristic_goal(primary, true),
        reason: format!("Deterministic fallback: primary because {primary_why}."),
        model_id: None,
    }];
    for (role, why) in support_roles(&signals, primary) {
        workers.push(PlannedWorker {
            role,
            goal: heuristic_goal(role, false),
            reason: format!("Deterministic fallback: {why}."),
            model_id: None,
        });
    }

    let mut todos: Vec<Todo> = TODO_ORDER
        .iter()
        .filter(|role| workers.iter().any(|w| w.role == **role))
        .filter_map(|role| fixed_todo(*role).map(|(id, title)| new_todo(id, title, *role)))
        .collect();
    if signals.summary && primary != Role::Summarize {
        todos.push(new_todo(REPORT_TODO, "Report the outcome", primary));
    }
    // The primary always owns a todo, so the implicit support -> primary edges have a target.
    if !todos.iter().any(|t| t.role == primary) {
        let id = fallback_todo_id(todos.len(), primary);
        todos.push(new_todo(&id, &heuristic_goal(primary, true), primary));
    }

    let dependencies = normalize_dependencies(&todos, &heuristic_edges(&todos), primary);
    RoutingPlan {
        primary,
        workers,
        todos,
        dependencies,
        requires_review: brain.routing.require_review_for_file_edits && signals.file_edit,
        clarification: assess_clarification(prompt),
        confidence: None,
        reason: format!(
            "Deterministic plan from keyword rules (no router model): {primary} is primary because {primary_why}."
        ),
        warnings: Vec::new(),
    }
}

/// Which support roles are dropped first when a plan exceeds the mode's limits: the last
/// role here goes first. Specialists whose domain the request names are kept longest
/// (security first, as its findings change what is built); the librarian's map, QA and an
/// in-plan review go first, because the primary can orient itself, checks still run, and
/// the runtime appends a review worker anyway whenever the plan requires review.
pub const SUPPORT_KEEP_ORDER: [Role; 8] = [
    Role::Security,
    Role::Backend,
    Role::Frontend,
    Role::Dba,
    Role::Designer,
    Role::Librarian,
    Role::Qa,
    Role::Review,
];

fn keep_rank(role: Role) -> usize {
    SUPPORT_KEEP_ORDER
        .iter()
        .position(|r| *r == role)
        .unwrap_or(SUPPORT_KEEP_ORDER.len())
}

/// Caps a plan to `limits`: at most `max_worker_agents` workers (the primary always kept)
/// and at most `max_todos` todos. Support workers are dropped in reverse
/// [`SUPPORT_KEEP_ORDER`] together with their todos and edges; each drop is recorded in the
/// plan's warnings.
pub fn cap_plan(mut plan: RoutingPlan, limits: &RoutingLimits, mode: Mode) -> RoutingPlan {
    let primary = plan.primary;
    let primary_todos = plan.todos.iter().filter(|t| t.role == primary).count();
    let support_todos =
        |role: Role, todos: &[Todo]| todos.iter().filter(|t| t.role == role).count();

    let mut supports: Vec<Role> = plan
        .workers
        .iter()
        .map(|w| w.role)
        .filter(|r| *r != primary)
        .collect();
    supports.sort_by_key(|r| keep_rank(*r));
    let mut kept: Vec<Role> = Vec::new();
    let mut todo_count = primary_todos;
    let worker_room = limits.max_worker_agents.max(1) - 1;
    for role in supports {
        let needed = support_todos(role, &plan.todos);
        if kept.len() < worker_room && todo_count + needed <= limits.max_todos {
            kept.push(role);
            todo_count += needed;
        }
    }

    let dropped: Vec<Role> = plan
        .workers
        .iter()
        .map(|w| w.role)
        .filter(|r| *r != primary && !kept.contains(r))
        .collect();
    if dropped.is_empty() {
        return plan;
    }
    plan.workers
        .retain(|w| w.role == primary || kept.contains(&w.role));
    plan.todos.retain(|t| !dropped.contains(&t.role));
    // Only the primary's todos may remain above the cap (they are never dropped).
    let ids: Vec<&str> = plan.todos.iter().map(|t| t.id.as_str()).collect();
    let edges: Vec<TodoDependency> = plan
        .dependencies
        .iter()
        .filter(|e| ids.contains(&e.from.as_str()) && ids.contains(&e.to.as_str()))
        .cloned()
        .collect();
    plan.dependencies = normalize_dependencies(&plan.todos, &edges, primary);
    let names: Vec<&str> = dropped.iter().map(|r| r.as_str()).collect();
    plan.warnings.push(format!(
        "{mode} mode allows {} worker(s) including the primary and {} todo(s); dropped support \
         worker(s): {}",
        limits.max_worker_agents.max(1),
        limits.max_todos,
        names.join(", ")
    ));
    plan
}

/// The heuristic plan for `prompt`, capped to the limits of `mode` under `brain` (see
/// [`cap_plan`]). With the default brain, auto mode allows two workers: the primary and the
/// most important support worker.
pub fn heuristic_route(prompt: &str, brain: &BrainModel, mode: Mode) -> RoutingPlan {
    let limits = routing_limits(&brain.routing, mode);
    cap_plan(heuristic_route_uncapped(prompt, brain), &limits, mode)
}
