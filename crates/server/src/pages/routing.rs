//! Routing preview: the plan a brain makes for a request, without running anything, with its
//! todos drawn as a dependency graph.

use std::collections::HashMap;

use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_brain::RuntimePlan;
use braincode_runtime::{PermissionMode, RoutingChoice, RunRequest, RunServices, plan_only};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::layout::{self, Section};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/routing", get(page))
        .route("/api/routing/preview", post(preview))
}

#[derive(Deserialize, Default)]
struct PageParams {
    #[serde(default)]
    brain: String,
}

async fn page(State(state): State<AppState>, Query(params): Query<PageParams>) -> Html<String> {
    let presets = braincode_config::load_brains(&state.home);
    let mut brains: Vec<String> = presets
        .as_ref()
        .map(|presets| presets.iter().map(|p| p.id.clone()).collect())
        .unwrap_or_default();
    brains.dedup();
    let chosen = match params.brain.trim() {
        "" => braincode_config::load_settings(&state.home)
            .map(|s| s.default_brain_id)
            .unwrap_or_else(|_| braincode_brain::DEFAULT_BRAIN_ID.to_string()),
        id => id.to_string(),
    };
    let prompts = match &presets {
        Ok(presets) => super::prompts::section(&state, presets, &chosen),
        Err(err) => layout::problem(&err.to_string()),
    };
    let body = html! {
        p.lede { "What a brain would plan for a request in " code { (state.project_root.display()) } ": the primary role, the isolated workers, the todos and their dependencies. Nothing runs and nothing is saved." }
        form #routing-form data-api="/api/routing/preview" data-target="#plan" {
            label { "Request" textarea name="task" rows="3" required placeholder="Add rate limiting to the login endpoint and a test for it" {} }
            div.grid {
                label { "Brain" select name="brain" { option value="" { "(the default brain)" } @for id in &brains { option value=(id) { (id) } } } }
                label.check { input type="checkbox" name="heuristic" checked; " Heuristic router only (no model call)" }
            }
            button type="submit" { "Preview the plan" }
            (layout::status_line())
        }
        div #plan {}
        (prompts)
    };
    layout::page(Section::Routing, "Routing preview", body)
}

#[derive(Deserialize)]
struct PreviewBody {
    task: String,
    #[serde(default)]
    brain: String,
    #[serde(default)]
    heuristic: bool,
}

async fn preview(
    State(state): State<AppState>,
    body: Result<axum::Json<PreviewBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    if body.task.trim().is_empty() {
        return Err(ApiError::at("task", "write the request to plan"));
    }
    let brain = body.brain.trim();
    let request = RunRequest {
        prompt: body.task,
        project_root: state.project_root.clone(),
        session_id: None,
        brain_id: (!brain.is_empty()).then(|| brain.to_string()),
        mode: None,
        permission: PermissionMode::ReadOnly,
        allow_network: false,
        fetch_deps: false,
        network_allowlist: false,
        routing: if body.heuristic {
            RoutingChoice::HeuristicOnly
        } else {
            RoutingChoice::Auto
        },
        budget: Default::default(),
        images: Vec::new(),
    };
    let plan = plan_only(request, RunServices::new(state.home.clone()))
        .await
        .map_err(|err| ApiError::invalid(err.to_string()))?;
    Ok(api::ok(json!({
        "html": render(&plan).into_string(),
        "plan": plan,
    })))
}

fn render(plan: &RuntimePlan) -> Markup {
    html! {
        dl.summary {
            dt { "Brain" } dd { (plan.brain_name) " (" code { (plan.brain_id) } ", " (layout::serde_name(&plan.mode)) ")" }
            dt { "Routed by" } dd { (layout::serde_name(&plan.source)) @if let Some(c) = plan.confidence { ", confidence " (format!("{c:.2}")) } }
            dt { "Why" } dd { (plan.reason) }
            @if let Some(fallback) = &plan.fallback_reason { dt { "Router fallback" } dd.bad { (fallback) } }
            dt { "Primary" } dd { code { (layout::serde_name(&plan.primary)) } }
            dt { "Review" } dd { (if plan.requires_review { "a review worker checks the result" } else { "none" }) }
            @if plan.clarification.required {
                dt { "Clarification" } dd.bad { (plan.clarification.question) }
            }
        }
        h2 { "Workers" }
        table #workers {
            thead { tr { th { "Role" } th { "Phase" } th { "Goal" } th { "Models" } } }
            tbody {
                @for worker in &plan.workers {
                    tr { td { code { (layout::serde_name(&worker.role)) } } td { (layout::serde_name(&worker.phase)) } td { (worker.goal) } td { small { (worker.model_chain.join(" → ")) } } }
                }
            }
        }
        h2 { "Todos and dependencies" }
        (graph(plan))
        @for warning in &plan.warnings { p.bad { "warning: " (warning) } }
    }
}

const NODE_W: i64 = 210;
const NODE_H: i64 = 46;
const GAP_X: i64 = 60;
const GAP_Y: i64 = 18;

/// Columns by dependency depth; an edge goes from a todo to the one that waits for it.
fn graph(plan: &RuntimePlan) -> Markup {
    let index: HashMap<&str, usize> = plan
        .todos
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut depth = vec![0usize; plan.todos.len()];
    // Longest path by relaxation; bounded so a cycle cannot loop forever.
    for _ in 0..plan.todos.len() {
        let mut changed = false;
        for dep in &plan.dependencies {
            if let (Some(&from), Some(&to)) =
                (index.get(dep.from.as_str()), index.get(dep.to.as_str()))
                && depth[to] <= depth[from]
            {
                depth[to] = depth[from] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut row_in_column: HashMap<usize, i64> = HashMap::new();
    let positions: Vec<(i64, i64)> = depth
        .iter()
        .map(|&d| {
            let row = row_in_column.entry(d).or_insert(0);
            let at = (d as i64 * (NODE_W + GAP_X) + 8, *row * (NODE_H + GAP_Y) + 8);
            *row += 1;
            at
        })
        .collect();
    let width = positions.iter().map(|p| p.0).max().unwrap_or(0) + NODE_W + 16;
    let height = positions.iter().map(|p| p.1).max().unwrap_or(0) + NODE_H + 16;
    html! {
        svg.graph #todo-graph xmlns="http://www.w3.org/2000/svg" width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) role="img" aria-label="todo dependency graph" {
            defs { marker #arrow viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" { path d="M 0 0 L 10 5 L 0 10 z" {} } }
            @for dep in &plan.dependencies {
                @if let (Some(&from), Some(&to)) = (index.get(dep.from.as_str()), index.get(dep.to.as_str())) {
                    line.edge x1=(positions[from].0 + NODE_W) y1=(positions[from].1 + NODE_H / 2) x2=(positions[to].0) y2=(positions[to].1 + NODE_H / 2) marker-end="url(#arrow)" {
                        @if let Some(reason) = &dep.reason { title { (reason) } }
                    }
                }
            }
            @for (todo, (x, y)) in plan.todos.iter().zip(&positions) {
                g.node data-todo=(todo.id) {
                    title { (todo.title) }
                    rect x=(x) y=(y) width=(NODE_W) height=(NODE_H) rx="4" {}
                    text x=(x + 8) y=(y + 18) { (layout::clip(&todo.title, 30)) }
                    text.role x=(x + 8) y=(y + 36) { (layout::serde_name(&todo.role)) " · " (todo.id) }
                }
            }
        }
    }
}
