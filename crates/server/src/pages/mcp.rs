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
use crate::layout::{self, Section};

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
            p.muted { "No MCP servers are configured (user: ~/.braincode/mcp.json; project: .mcp.json)." }
        } @else {
            table #mcp-servers {
                thead { tr { th { "Server" } th { "Scope" } th { "Transport" } th { "Runs" } th { "Status" } } }
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
                @for warning in &setup.warnings { p.bad { "warning: " (warning) } }
                div #mcp-table { (servers_table(&rows)) }
                @if !rows.is_empty() {
                    button type="button" data-action="/api/mcp/health" data-body="{}" data-target="#mcp-table" { "Check health" }
                    p.muted { "Each startable server is started in the sandbox, asked for its tools, then stopped (8 s each, in parallel)." }
                }
            }
        }
    };
    let body = html! {
        section {
            h2 { "This project" }
            p #trust data-trust=(trust_state(&trust.state)) { code { (state.project_root.display()) } ": "
                @match &trust.state {
                    TrustState::NothingToTrust => { span.ok { "nothing to trust: no hooks, MCP servers, settings or checks" } }
                    TrustState::Trusted => { span.ok { "trusted" } " — its hooks, MCP servers, settings and checks may run." }
                    TrustState::Untrusted { .. } => { span.bad { "not trusted" } " — its hooks and MCP servers are listed, never started." }
                } }
            @if let Some(notice) = trust.notice() { p.muted { (notice) } }
            @if let Some(err) = trust_error { (layout::problem(&err.to_string())) }
        }
        section { h2 { "MCP servers" } (servers) }
        (super::hooks::section(&state, &trust))
    };
    layout::page(Section::Mcp, "MCP & hooks", body)
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
