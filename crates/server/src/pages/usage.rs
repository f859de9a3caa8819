//! Usage: tokens and cost across sessions (the `braincode usage` engine), as a chart and a
//! table, by day, role, model, project or session.

use axum::Router;
use axum::extract::{Query, State};
use axum::response::{Html, Response};
use axum::routing::get;
use braincode_config::usage::{
    UsageCall, UsageGroup, UsageQuery, UsageRow, UsageSummary, catalog_prices, parse_since,
    summarize_usage,
};
use maud::{Markup, html};
use serde::Deserialize;

use crate::AppState;
use crate::api::{self, ApiError};
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section, thousands};

/// How many of the most recent calls the page lists.
const RECENT_CALLS: usize = 20;

texts! {
    pub(crate) enum S {
        Title => "Usage", "用量";
        By => "By", "分组";
        Since => "Since", "起始";
        SinceHint => "e.g. 7d or 2026-11-01", "例如 7d 或 2026-11-01";
        Show => "Show", "显示";
        Day => "Day", "日期";
        Model => "Model", "模型";
        Role => "Role", "角色";
        Phase => "Phase", "阶段";
        Project => "Project", "项目";
        Session => "Session", "会话";
        NotGrouping => "{0} is not a grouping: use day, role, phase, model, project or session", "{0} 不是分组方式：请使用 day、role、phase、model、project 或 session";
        Calls => "Model calls", "模型调用";
        TokensInOut => "Tokens in / out", "输入 / 输出令牌";
        OfThemReasoning => "of them reasoning", "其中推理";
        CacheReadWrite => "Cache read / write", "缓存读 / 写";
        CacheHit => "Cache hit", "缓存命中";
        CacheHitWhat => "of prompt tokens served from the provider's cache", "的提示令牌由提供方缓存提供";
        Cost => "Cost", "费用";
        Sessions => "Sessions", "会话数";
        KibOfJournals => "KiB of journals", "KiB 日志";
        NoCalls => "No model calls recorded in that time.", "这段时间内没有记录到模型调用。";
        Tokens => "Tokens", "令牌";
        Key => "Key", "键";
        CallsShort => "Calls", "调用";
        Input => "Input", "输入";
        Output => "Output", "输出";
        Reasoning => "Reasoning", "推理";
        CacheRead => "Cache read", "缓存读";
        CacheWrite => "Cache write", "缓存写";
        NoPrice => "No price for: {0}. Add \"pricing\" to their models.json entries to cost them.", "以下模型没有价格：{0}。在 models.json 的条目中加入 \"pricing\" 即可计算费用。";
        Recent => "Recent calls (newest first)", "最近的调用（最新在前）";
        Time => "Time", "时间";
        Cached => "Cached", "缓存";
        Latency => "Latency", "耗时";
        ReadingJournals => "reading {0}: {1}", "读取 {0} 时出错：{1}";
        Catalogue => "the model catalogue (for prices): {0}", "模型目录（用于价格）：{0}";
    }
}

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

const GROUPS: [(&str, S); 6] = [
    ("day", S::Day),
    ("model", S::Model),
    ("role", S::Role),
    ("phase", S::Phase),
    ("project", S::Project),
    ("session", S::Session),
];

async fn summary(state: &AppState, params: &UsageParams) -> Result<UsageSummary, ApiError> {
    let by = if params.by.is_empty() {
        UsageGroup::Day
    } else {
        UsageGroup::parse(&params.by)
            .ok_or_else(|| ApiError::at("by", tf(S::NotGrouping, &[&format!("{:?}", params.by)])))?
    };
    let since_ms = match params.since.trim() {
        "" => None,
        text => Some(
            parse_since(text, chrono::Utc::now().timestamp_millis())
                .map_err(|err| ApiError::at("since", err))?,
        ),
    };
    let home = state.home.clone();
    // The messages are chosen here: the blocking thread is outside the request's language.
    let (catalogue_error, reading_error) = (t(S::Catalogue), t(S::ReadingJournals));
    tokio::task::spawn_blocking(move || {
        let catalog = braincode_config::load_models(&home)
            .map_err(|err| ApiError::Internal(catalogue_error.replace("{0}", &err.to_string())))?;
        summarize_usage(
            &home,
            &UsageQuery {
                since_ms,
                by,
                recent: RECENT_CALLS,
            },
            &catalog_prices(&catalog),
        )
        .map_err(|err| {
            ApiError::Internal(
                reading_error
                    .replace("{0}", &home.sessions_dir().display().to_string())
                    .replace("{1}", &err.to_string()),
            )
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
            label { (t(S::By)) select name="by" { @for (value, label) in GROUPS { option value=(value) selected[value == current] { (t(label)) } } } }
            label { (t(S::Since)) input name="since" value=(params.since) placeholder=(t(S::SinceHint)); }
            button type="submit" { (t(S::Show)) }
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
                p.muted { (tf(S::NoPrice, &[&summary.unpriced_models.join(", ")])) }
            }
            (recent(&summary.recent))
        },
    };
    layout::page(Section::Usage, t(S::Title), body)
}

fn percent(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

fn totals(summary: &UsageSummary) -> Markup {
    let total = &summary.total;
    html! {
        dl.summary #usage-totals {
            dt { (t(S::Calls)) } dd data-total="calls" { (thousands(total.calls)) }
            dt { (t(S::TokensInOut)) } dd { (thousands(total.usage.input)) " / " (thousands(total.usage.output)) " (" (t(S::OfThemReasoning)) " " (thousands(total.usage.reasoning)) ")" }
            dt { (t(S::CacheReadWrite)) } dd { (thousands(total.usage.cache_read)) " / " (thousands(total.usage.cache_write)) }
            dt { (t(S::CacheHit)) } dd data-total="cache-hit" { @match total.cache_hit_ratio { Some(ratio) => { (percent(ratio)) " " (t(S::CacheHitWhat)) }, None => "—" } }
            dt { (t(S::Cost)) } dd data-total="cost" { (if total.cost_usd > 0.0 { cost(total.cost_usd) } else { "$0".to_string() }) }
            dt { (t(S::Sessions)) } dd { (summary.sessions) " (" (thousands(summary.bytes_read / 1024)) " " (t(S::KibOfJournals)) ")" }
        }
    }
}

/// Horizontal bars: cost when anything was costed, tokens otherwise.
fn chart(rows: &[UsageRow], by_session: bool) -> Markup {
    if rows.is_empty() {
        return html! { p.muted { (t(S::NoCalls)) } };
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
            figcaption { (t(if by_cost { S::Cost } else { S::Tokens })) }
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
            thead { tr { th { (t(S::Key)) } th.num { (t(S::CallsShort)) } th.num { (t(S::Input)) } th.num { (t(S::Output)) } th.num { (t(S::Reasoning)) } th.num { (t(S::CacheRead)) } th.num { (t(S::CacheWrite)) } th.num { (t(S::CacheHit)) } th.num { (t(S::Cost)) } } }
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
                        td.num { (row.cache_hit_ratio.map_or_else(|| "—".to_string(), percent)) }
                        td.num { (if row.unpriced_tokens > 0 && row.cost_usd == 0.0 { "—".to_string() } else { cost(row.cost_usd) }) }
                    }
                }
            }
        }
    }
}

/// The most recent calls, newest first: when, which role and model, tokens, cost, latency.
fn recent(calls: &[UsageCall]) -> Markup {
    if calls.is_empty() {
        return html! {};
    }
    let latency = |ms: u64| {
        if ms < 1_000 {
            format!("{ms} ms")
        } else {
            format!("{:.1} s", ms as f64 / 1000.0)
        }
    };
    html! {
        h2 { (t(S::Recent)) }
        table #recent-calls {
            thead { tr { th { (t(S::Time)) } th { (t(S::Role)) } th { (t(S::Phase)) } th { (t(S::Model)) } th.num { (t(S::Input)) } th.num { (t(S::Output)) } th.num { (t(S::Cached)) } th.num { (t(S::Cost)) } th.num { (t(S::Latency)) } } }
            tbody {
                @for call in calls {
                    tr {
                        td.when { (chrono::DateTime::from_timestamp_millis(call.timestamp).map_or_else(|| "?".to_string(), |at| at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M:%S").to_string())) }
                        td { (call.role.as_deref().unwrap_or("—")) }
                        td { (call.phase.as_deref().unwrap_or("—")) }
                        td { code { (call.model) } }
                        td.num { (thousands(call.usage.input)) }
                        td.num { (thousands(call.usage.output)) }
                        td.num { (thousands(call.usage.cache_read)) }
                        td.num { (call.cost_usd.map_or_else(|| "—".to_string(), cost)) }
                        td.num { (call.duration_ms.map_or_else(|| "—".to_string(), latency)) }
                    }
                }
            }
        }
    }
}
