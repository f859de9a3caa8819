//! Routing preview: the plan a brain makes for a request, without running anything, with its
//! todos drawn as a dependency graph.

use std::collections::HashMap;

use axum::Router;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_brain::RuntimePlan;
use braincode_runtime::{RoutingChoice, RunRequest, RunServices, plan_only};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section};

texts! {
    pub(crate) enum S {
        Title => "Routing", "路由";
        Lede => "What a brain would plan for a request in {0}: the primary role, the isolated workers, the todos and their dependencies. Nothing runs and nothing is saved.", "大脑会如何为 {0} 中的请求做计划：主角色、隔离的工作者、待办及其依赖。不会运行也不会保存任何东西。";
        Request => "Request", "请求";
        RequestHint => "Add rate limiting to the login endpoint and a test for it", "为登录接口加上限流，并为它写一个测试";
        Brain => "Brain", "大脑";
        DefaultBrain => "(the default brain)", "（默认大脑）";
        HeuristicOnly => "Heuristic router only (no model call)", "只用启发式路由（不调用模型）";
        PreviewPlan => "Preview the plan", "预览计划";
        WritePlan => "write the request to plan", "请填写要计划的请求";
        RoutedBy => "Routed by", "路由方式";
        Confidence => "confidence", "置信度";
        Why => "Why", "原因";
        Fallback => "Router fallback", "路由回退";
        Primary => "Primary", "主角色";
        Review => "Review", "审查";
        ReviewWorker => "a review worker checks the result", "由审查工作者检查结果";
        NoReview => "none", "无";
        Clarification => "Clarification", "澄清";
        Workers => "Workers", "工作者";
        Role => "Role", "角色";
        Phase => "Phase", "阶段";
        Goal => "Goal", "目标";
        Models => "Models", "模型";
        Todos => "Todos and dependencies", "待办与依赖";
        Warning => "warning:", "警告：";
        GraphLabel => "todo dependency graph", "待办依赖图";
    }
}

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
    let mut seen = std::collections::HashSet::new();
    let brains: Vec<String> = presets
        .as_ref()
        .map(|presets| {
            presets
                .iter()
                .map(|p| p.id.clone())
                .filter(|id| seen.insert(id.clone()))
                .collect()
        })
        .unwrap_or_default();
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
        p.lede { (tf(S::Lede, &[&state.project_root.display()])) }
        form #routing-form data-api="/api/routing/preview" data-target="#plan" {
            label { (t(S::Request)) textarea name="task" rows="3" required placeholder=(t(S::RequestHint)) {} }
            div.grid {
                label { (t(S::Brain)) select name="brain" { option value="" { (t(S::DefaultBrain)) } @for id in &brains { option value=(id) { (id) } } } }
                label.check { input type="checkbox" name="heuristic" checked; " " (t(S::HeuristicOnly)) }
            }
            button type="submit" { (t(S::PreviewPlan)) }
            (layout::status_line())
        }
        div #plan {}
        (prompts)
    };
    layout::page(Section::Routing, t(S::Title), body)
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
        return Err(ApiError::at("task", t(S::WritePlan)));
    }
    let brain = body.brain.trim();
    let request = RunRequest {
        brain_id: (!brain.is_empty()).then(|| brain.to_string()),
        routing: if body.heuristic {
            RoutingChoice::HeuristicOnly
        } else {
            RoutingChoice::Auto
        },
        ..RunRequest::new(body.task, state.project_root.clone())
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
            dt { (t(S::Brain)) } dd { (plan.brain_name) " (" code { (plan.brain_id) } ", " (layout::serde_name(&plan.mode)) ")" }
            dt { (t(S::RoutedBy)) } dd { (layout::serde_name(&plan.source)) @if let Some(c) = plan.confidence { ", " (t(S::Confidence)) " " (format!("{c:.2}")) } }
            dt { (t(S::Why)) } dd { (plan.reason) }
            @if let Some(fallback) = &plan.fallback_reason { dt { (t(S::Fallback)) } dd.bad { (fallback) } }
            dt { (t(S::Primary)) } dd { code { (layout::serde_name(&plan.primary)) } }
            dt { (t(S::Review)) } dd { (t(if plan.requires_review { S::ReviewWorker } else { S::NoReview })) }
            @if plan.clarification.required {
                dt { (t(S::Clarification)) } dd.bad { (plan.clarification.question) }
            }
        }
        h2 { (t(S::Workers)) }
        table #workers {
            thead { tr { th { (t(S::Role)) } th { (t(S::Phase)) } th { (t(S::Goal)) } th { (t(S::Models)) } } }
            tbody {
                @for worker in &plan.workers {
                    tr { td { code { (layout::serde_name(&worker.role)) } } td { (layout::serde_name(&worker.phase)) } td { (worker.goal) } td { small { (worker.model_chain.join(" → ")) } } }
                }
            }
        }
        h2 { (t(S::Todos)) }
        (graph(plan))
        @for warning in &plan.warnings { p.bad { (t(S::Warning)) " " (warning) } }
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
        svg.graph #todo-graph xmlns="http://www.w3.org/2000/svg" width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) role="img" aria-label=(t(S::GraphLabel)) {
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
