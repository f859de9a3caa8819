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
use crate::i18n::{Text, t, texts, tf};
use crate::layout::{self, Section};

texts! {
    pub(crate) enum S {
        Title => "Permissions", "权限";
        RulesFrom => "Rules are read from {0}.", "规则读取自 {0}。";
        NotThere => "It is not there yet: the defaults apply.", "该文件还不存在：使用默认规则。";
        BuiltInFirst => "The built-in rules always come first; a deny cannot be overruled by --yes.", "内置规则总是优先；拒绝规则不能被 --yes 推翻。";
        CheckCall => "Check a call", "检查一次调用";
        Tool => "Tool", "工具";
        Path => "Path", "路径";
        Command => "Command", "命令";
        Tools => "Tools", "工具";
        Enabled => "Enabled", "启用";
        Permission => "Permission", "权限";
        Risk => "Risk", "风险";
        Approval => "Approval", "审批";
        YourRules => "Your rules", "你的规则";
        NameTool => "name the tool", "请给出工具名";
        GivePath => "Give the path a file tool would touch, or the command a shell tool would run.", "请给出文件工具会访问的路径，或 shell 工具会运行的命令。";
        Denied => "denied", "拒绝";
        NeedsApproval => "needs approval", "需要批准";
        Allowed => "allowed", "允许";
        ModeDecides => "needs approval (no rule; the tool's mode decides)", "需要批准（无规则；由工具的模式决定）";
        NoRule => "runs without approval (no rule)", "无需批准即可运行（无规则）";
        Verdict => "Verdict:", "结论：";
    }
}

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
                p.lede { (tf(S::RulesFrom, &[&state.home.tools_path().display()]))
                    @if !from_file { " " (t(S::NotThere)) }
                    " " (t(S::BuiltInFirst)) }
                section {
                    h2 { (t(S::CheckCall)) }
                    form #permission-check data-api="/api/permissions/check" data-target="#explanation" data-live {
                        div.grid {
                            label { (t(S::Tool)) input name="tool" list="tool-names" value="exec_command" required; }
                            label { (t(S::Path)) input name="path" placeholder="src/main.rs"; }
                            label { (t(S::Command)) input name="command" placeholder="git push --force"; }
                        }
                        datalist #tool-names { @for tool in &tools.tools { option value=(tool.name) {} } }
                        (layout::status_line())
                    }
                    div #explanation {}
                }
                section {
                    h2 { (t(S::Tools)) }
                    table #tools {
                        thead { tr { th { (t(S::Tool)) } th { (t(S::Enabled)) } th { (t(S::Permission)) } th { (t(S::Risk)) } th { (t(S::Approval)) } } }
                        tbody {
                            @for tool in &tools.tools {
                                tr { td { code { (tool.name) } } td { (t(if tool.enabled { layout::L::Yes } else { layout::L::No })) } td { (layout::serde_name(&tool.permissions)) } td { (layout::serde_name(&tool.risk)) } td { (layout::serde_name(&tool.approval_policy)) } }
                            }
                        }
                    }
                }
                section { h2 { (t(S::YourRules)) } pre { (rules) } }
            }
        }
    };
    layout::page(Section::Permissions, t(S::Title), body)
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
        return Err(ApiError::at("tool", t(S::NameTool)));
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
            "html": html! { p.muted { (t(S::GivePath)) } }.into_string()
        })));
    }
    let (config_path, policy) =
        load_policy_in(&state.home).map_err(|err| ApiError::Internal(err.to_string()))?;
    let explanation = explain_with(&input, config_path, &policy);
    let evaluation = &explanation.evaluation;
    let (class, verdict) = match evaluation.decision {
        Some(PolicyDecision::Deny) => ("bad", S::Denied),
        Some(PolicyDecision::Ask) => ("warn", S::NeedsApproval),
        Some(PolicyDecision::Allow) => ("ok", S::Allowed),
        None if explanation.approval => ("warn", S::ModeDecides),
        None => ("ok", S::NoRule),
    };
    let html = html! {
        p class=(format!("verdict {class}")) data-verdict=(verdict.en()) { (t(S::Verdict)) " " strong { (t(verdict)) }
            @if let Some(message) = evaluation.denial_message() { " — " (message) } }
        pre { (explanation.text) }
    };
    Ok(api::ok(
        json!({"html": html.into_string(), "explanation": explanation.json(&input)}),
    ))
}
