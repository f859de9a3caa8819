//! Tools and permissions: the tools agents get, the user's rules, and the policy's verdict
//! for a call explained live as the user types (the `braincode permissions check` engine).

use axum::Router;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_runtime::{ExplainInput, explain_permission_with as explain_with, load_policy_in};
use braincode_tools::{PolicyDecision, PolicyEvaluationExt};
use maud::html;
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::layout::{self, Section};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/permissions", get(page))
        .route("/api/permissions/check", post(check))
}

async fn page(State(state): State<AppState>) -> Html<String> {
    let tools = braincode_runtime::read_tools_file(&state.home);
    let body = match tools {
        Err(err) => layout::problem(&err.to_string()),
        Ok(tools) => {
            let from_file = tools.is_some();
            let tools = tools.unwrap_or_default();
            let rules = serde_json::to_string_pretty(&tools.permissions).unwrap_or_default();
            html! {
                p.lede { "Rules are read from " code { (state.home.tools_path().display()) }
                    (if from_file { "" } else { " (not there yet: the defaults apply)" })
                    ". The built-in rules always come first; a deny cannot be overruled by --yes." }
                section {
                    h2 { "Check a call" }
                    form #permission-check data-api="/api/permissions/check" data-target="#explanation" data-live {
                        div.grid {
                            label { "Tool" input name="tool" list="tool-names" value="exec_command" required; }
                            label { "Path" input name="path" placeholder="src/main.rs"; }
                            label { "Command" input name="command" placeholder="git push --force"; }
                        }
                        datalist #tool-names { @for tool in &tools.tools { option value=(tool.name) {} } }
                        (layout::status_line())
                    }
                    div #explanation {}
                }
                section {
                    h2 { "Tools" }
                    table #tools {
                        thead { tr { th { "Tool" } th { "Enabled" } th { "Permission" } th { "Risk" } th { "Approval" } } }
                        tbody {
                            @for tool in &tools.tools {
                                tr { td { code { (tool.name) } } td { (if tool.enabled { "yes" } else { "no" }) } td { (layout::serde_name(&tool.permissions)) } td { (layout::serde_name(&tool.risk)) } td { (layout::serde_name(&tool.approval_policy)) } }
                            }
                        }
                    }
                }
                section { h2 { "Your rules" } pre { (rules) } }
            }
        }
    };
    layout::page(Section::Permissions, "Tools & permissions", body)
}

#[derive(Deserialize)]
struct CheckBody {
    tool: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    command: String,
}

fn non_empty(text: String) -> Option<String> {
    (!text.trim().is_empty()).then_some(text)
}

async fn check(
    State(state): State<AppState>,
    body: Result<axum::Json<CheckBody>, JsonRejection>,
) -> Result<Response, ApiError> {
    let body = api::body(body)?;
    if body.tool.trim().is_empty() {
        return Err(ApiError::at("tool", "name the tool"));
    }
    let input = ExplainInput {
        tool: body.tool.trim().to_string(),
        path: non_empty(body.path),
        command: non_empty(body.command),
        project: state.project_root.clone(),
        ..ExplainInput::default()
    };
    if input.path.is_none() && input.command.is_none() {
        return Ok(api::ok(json!({
            "html": html! { p.muted { "Give the path a file tool would touch, or the command a shell tool would run." } }.into_string()
        })));
    }
    let (config_path, policy) =
        load_policy_in(&state.home).map_err(|err| ApiError::Internal(err.to_string()))?;
    let explanation = explain_with(&input, config_path, &policy);
    let evaluation = &explanation.evaluation;
    let (class, verdict) = match evaluation.decision {
        Some(PolicyDecision::Deny) => ("bad", "denied"),
        Some(PolicyDecision::Ask) => ("warn", "needs approval"),
        Some(PolicyDecision::Allow) => ("ok", "allowed"),
        None if explanation.approval => {
            ("warn", "needs approval (no rule; the tool's mode decides)")
        }
        None => ("ok", "runs without approval (no rule)"),
    };
    let html = html! {
        p class=(format!("verdict {class}")) data-verdict=(verdict) { "Verdict: " strong { (verdict) }
            @if let Some(message) = evaluation.denial_message() { " — " (message) } }
        pre { (explanation.text) }
    };
    Ok(api::ok(
        json!({"html": html.into_string(), "explanation": explanation.json(&input)}),
    ))
}
