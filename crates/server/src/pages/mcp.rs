//! MCP servers and hooks: what is configured, whether the project is trusted (an untrusted
//! project's servers and hooks never start), and a live health check of the servers.
//!
//! The trust verdict is `braincode_config::check_trust`, the one `braincode trust --status`
//! prints, in the same words (that command's wording lives in the CLI crate; the three states
//! are config's `TrustState`).

use axum::Router;
use axum::extract::State;
use axum::response::{Html, Response};
use axum::routing::{get, post};
use braincode_config::{ProjectTrust, TrustState, check_trust};
use braincode_runtime::{CHECK_BUDGET, McpServerCheck, McpSetup};
use maud::{Markup, html};
use serde_json::json;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::i18n::{t, texts};
use crate::layout::{self, Section};

texts! {
    pub(crate) enum S {
        Title => "MCP & hooks", "MCP 与钩子";
        NoServers => "No MCP servers are configured (user: ~/.braincode/mcp.json; project: .mcp.json).", "没有配置 MCP 服务器（用户：~/.braincode/mcp.json；项目：.mcp.json）。";
        Server => "Server", "服务器";
        Scope => "Scope", "范围";
        Transport => "Transport", "传输";
        Runs => "Runs", "运行";
        Status => "Status", "状态";
        Warning => "warning:", "警告：";
        CheckHealth => "Check health", "检查健康状况";
        CheckHint => "Each startable server is started in the sandbox, asked for its tools, then stopped (8 s each, in parallel).", "每个可启动的服务器都会在沙箱中启动、查询其工具，然后停止（每个 8 秒，并行）。";
        ThisProject => "This project", "此项目";
        NothingToTrust => "nothing to trust: no hooks, MCP servers, settings or checks", "无需信任：没有钩子、MCP 服务器、设置或检查";
        Trusted => "trusted", "已信任";
        TrustedWhat => "— its hooks, MCP servers, settings and checks may run.", "— 其钩子、MCP 服务器、设置和检查可以运行。";
        NotTrusted => "not trusted", "未信任";
        NotTrustedWhat => "— its hooks and MCP servers are listed, never started.", "— 其钩子和 MCP 服务器只列出，从不启动。";
        McpServers => "MCP servers", "MCP 服务器";
    }
}

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/mcp", get(page))
        .route("/api/mcp/health", post(health))
}

fn setup(state: &AppState, trust: &ProjectTrust) -> Result<McpSetup, String> {
    let settings = braincode_config::load_settings(&state.home).map_err(|err| err.to_string())?;
    Ok(McpSetup::read(
        &state.home,
        &state.project_root,
        trust,
        &settings,
    ))
}

fn servers_table(rows: &[McpServerCheck]) -> Markup {
    html! {
        @if rows.is_empty() {
            p.muted { (t(S::NoServers)) }
        } @else {
            table #mcp-servers {
                thead { tr { th { (t(S::Server)) } th { (t(S::Scope)) } th { (t(S::Transport)) } th { (t(S::Runs)) } th { (t(S::Status)) } } }
                tbody {
                    @for row in rows {
                        tr data-server=(row.name) {
                            td { code { (row.name) } }
                            td { (row.scope) }
                            td { (row.transport) }
                            td { small { (layout::breakable(row.command.as_deref().or(row.url.as_deref()).unwrap_or_default())) } }
                            td class=(layout::serde_name(&row.status)) { (layout::serde_name(&row.status)) @if let Some(reason) = &row.reason { " — " (reason) } }
                        }
                    }
                }
            }
        }
    }
}

/// The state's name, as `braincode trust --status --json` gives it.
fn trust_state(state: &TrustState) -> &'static str {
    match state {
        TrustState::NothingToTrust => "nothingToTrust",
        TrustState::Trusted => "trusted",
        TrustState::Untrusted { .. } => "untrusted",
    }
}

async fn page(State(state): State<AppState>) -> Html<String> {
    let (trust, trust_error) = check_trust(&state.home, &state.project_root);
    let servers = match setup(&state, &trust) {
        Err(err) => layout::problem(&err),
        Ok(setup) => {
            let rows: Vec<McpServerCheck> = setup.planned.iter().map(McpServerCheck::of).collect();
            html! {
                @for warning in &setup.warnings { p.bad { (t(S::Warning)) " " (warning) } }
                div #mcp-table { (servers_table(&rows)) }
                @if !rows.is_empty() {
                    button type="button" data-action="/api/mcp/health" data-body="{}" data-target="#mcp-table" { (t(S::CheckHealth)) }
                    p.muted { (t(S::CheckHint)) }
                }
            }
        }
    };
    let body = html! {
        section {
            h2 { (t(S::ThisProject)) }
            p #trust data-trust=(trust_state(&trust.state)) { code { (state.project_root.display()) } ": "
                @match &trust.state {
                    TrustState::NothingToTrust => { span.ok { (t(S::NothingToTrust)) } }
                    TrustState::Trusted => { span.ok { (t(S::Trusted)) } " " (t(S::TrustedWhat)) }
                    TrustState::Untrusted { .. } => { span.bad { (t(S::NotTrusted)) } " " (t(S::NotTrustedWhat)) }
                } }
            @if let Some(notice) = trust.notice() { p.muted { (notice) } }
            @if let Some(err) = trust_error { (layout::problem(&err.to_string())) }
        }
        section { h2 { (t(S::McpServers)) } (servers) }
        (super::hooks::section(&state, &trust))
    };
    layout::page(Section::Mcp, t(S::Title), body)
}

async fn health(State(state): State<AppState>) -> Result<Response, ApiError> {
    let (trust, _) = check_trust(&state.home, &state.project_root);
    let setup = setup(&state, &trust).map_err(ApiError::Internal)?;
    let rows = setup
        .check(
            &state.home,
            &state.project_root,
            &setup.planned,
            CHECK_BUDGET,
        )
        .await;
    Ok(api::ok(
        json!({"html": servers_table(&rows).into_string(), "servers": rows}),
    ))
}
