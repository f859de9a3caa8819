//! Usage: tokens and cost across sessions (the `braincode usage` engine), as a chart and a
//! table, by day, role, model, project or session.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::routing::get;
use braincode_config::usage::{
    UsageGroup, UsageQuery, UsageRow, UsageSummary, catalog_prices, parse_since, summarize_usage,
};
use maud::{Markup, html};
use serde::Deserialize;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::layout::{self, Section, thousands};

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/usage", get(page))
        .route("/api/usage", get(data))
}

#[derive(Deserialize, Default)]
struct UsageParams {
    #[serde(default)]
    by: String,
    #[serde(default)]
    since: String,
}

const GROUPS: [(&str, &str); 5] = [
    ("day", "Day"),
    ("model", "Model"),
    ("role", "Role"),
    ("project", "Project"),
    ("session", "Session"),
];

async fn summary(state: &AppState, params: &UsageParams) -> Result<UsageSummary, ApiError> {
    let by = if params.by.is_empty() {
        UsageGroup::Day
    } else {
        UsageGroup::parse(&params.by).ok_or_else(|| {
            ApiError::at(
                "by",
                format!(
                    "{:?} is not a grouping: use {}",
                    params.by,
                    UsageGroup::CHOICES
                ),
            )
        })?
    };
    let since_ms = match params.since.trim() {
        "" => None,
        text => Some(
            parse_since(text, chrono::Utc::now().timestamp_millis())
                .map_err(|err| ApiError::at("since", err))?,
        ),
    };
    let home = state.home.clone();
    tokio::task::spawn_blocking(move || {
        let catalog = braincode_config::load_models(&home).map_err(|err| {
            ApiError::Internal(format!("the model catalogue (for prices): {err}"))
        })?;
        summarize_usage(
            &home,
            &UsageQuery {
                since_ms,
                by,
                recent: 0,
            },
            &catalog_prices(&catalog),
        )
        .map_err(|err| {
            ApiError::Internal(format!("reading {}: {err}", home.sessions_dir().display()))
        })
    })
    .await
    .map_err(|err| ApiError::Internal(err.to_string()))?
}

async fn data(
    State(state): State<AppState>,
    Query(params): Query<UsageParams>,
) -> Result<Response, ApiError> {
    Ok(api::ok(summary(&state, &params).await?))
}

fn cost(usd: f64) -> String {
    braincode_session::report::fmt_cost(usd)
}

async fn page(State(state): State<AppState>, Query(params): Query<UsageParams>) -> Html<String> {
    let current = if params.by.is_empty() {
        "day"
    } else {
        params.by.as_str()
    };
    let filter = html! {
        form.filters method="get" action="/usage" {
            label { "By " select name="by" { @for (value, label) in GROUPS { option value=(value) selected[value == current] { (label) } } } }
            label { "Since " input name="since" value=(params.since) placeholder="7d, 2026-11-01…"; }
            button type="submit" { "Show" }
        }
    };
    let body = match summary(&state, &params).await {
        Err(err) => html! { (filter) (layout::problem(&err.to_string())) },
        Ok(summary) => html! {
            (filter)
            (totals(&summary))
            (chart(&summary.rows, current == "session"))
            (table(&summary, current == "session"))
            @if !summary.unpriced_models.is_empty() {
                p.muted { "No price for: " (summary.unpriced_models.join(", ")) ". Add \"pricing\" to their models.json entries to cost them." }
            }
        },
    };
    layout::page(Section::Usage, "Usage", body)
}

fn totals(summary: &UsageSummary) -> Markup {
    let t = &summary.total;
    html! {
        dl.summary #usage-totals {
            dt { "Model calls" } dd data-total="calls" { (thousands(t.calls)) }
            dt { "Tokens in / out" } dd { (thousands(t.usage.input)) " / " (thousands(t.usage.output)) " (" (thousands(t.usage.reasoning)) " of them reasoning)" }
            dt { "Cache read / write" } dd { (thousands(t.usage.cache_read)) " / " (thousands(t.usage.cache_write)) }
            dt { "Cost" } dd data-total="cost" { (if t.cost_usd > 0.0 { cost(t.cost_usd) } else { "$0".to_string() }) }
            dt { "Sessions" } dd { (summary.sessions) " (" (thousands(summary.bytes_read / 1024)) " KiB of journals)" }
        }
    }
}

/// Horizontal bars: cost when anything was costed, tokens otherwise.
fn chart(rows: &[UsageRow], by_session: bool) -> Markup {
    if rows.is_empty() {
        return html! { p.muted { "No model calls recorded in that time." } };
    }
    let by_cost = rows.iter().any(|r| r.cost_usd > 0.0);
    let value = |row: &UsageRow| {
        if by_cost {
            row.cost_usd
        } else {
            (row.usage.input + row.usage.output + row.usage.cache_read + row.usage.cache_write)
                as f64
        }
    };
    let shown: Vec<&UsageRow> = rows.iter().take(40).collect();
    let max = shown
        .iter()
        .map(|r| value(r))
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let (width, label, bar_w, row_h) = (760.0, 200.0, 440.0, 22.0);
    let height = shown.len() as f64 * row_h + 8.0;
    html! {
        figure {
            figcaption { (if by_cost { "Cost" } else { "Tokens" }) }
            svg.chart #usage-chart xmlns="http://www.w3.org/2000/svg" width=(width) height=(height) viewBox=(format!("0 0 {width} {height}")) role="img" aria-label="usage chart" {
                @for (i, row) in shown.iter().enumerate() {
                    @let y = i as f64 * row_h + 4.0;
                    @let w = (value(row) / max * bar_w).max(1.0);
                    text x="4" y=(y + 14.0) { (layout::clip(if by_session { braincode_protocol::short_form(&row.key) } else { &row.key }, 28)) }
                    rect.bar x=(label) y=(y + 2.0) width=(format!("{w:.1}")) height=(row_h - 6.0) rx="2" { title { (row.key) } }
                    text x=(format!("{:.1}", label + w + 6.0)) y=(y + 14.0) {
                        (if by_cost { cost(row.cost_usd) } else { thousands(value(row) as u64) })
                    }
                }
            }
        }
    }
}

/// The table; grouped by session, a row names its session by the short id (the whole id in
/// its title) and links to it.
fn table(summary: &UsageSummary, by_session: bool) -> Markup {
    html! {
        table #usage {
            thead { tr { th { "Key" } th.num { "Calls" } th.num { "Input" } th.num { "Output" } th.num { "Reasoning" } th.num { "Cache read" } th.num { "Cache write" } th.num { "Cost" } } }
            tbody {
                @for row in &summary.rows {
                    tr {
                        @if by_session {
                            td { a href=(format!("/sessions/{}", row.key)) title=(row.key) { code { (braincode_protocol::short_form(&row.key)) } } }
                        } @else {
                            td { (row.key) }
                        }
                        td.num { (thousands(row.calls)) }
                        td.num { (thousands(row.usage.input)) }
                        td.num { (thousands(row.usage.output)) }
                        td.num { (thousands(row.usage.reasoning)) }
                        td.num { (thousands(row.usage.cache_read)) }
                        td.num { (thousands(row.usage.cache_write)) }
                        td.num { (if row.unpriced_tokens > 0 && row.cost_usd == 0.0 { "—".to_string() } else { cost(row.cost_usd) }) }
                    }
                }
            }
        }
    }
}
