//! Sessions: the journals, full-text search across them, one journal with a timeline of its
//! last run's workers, and a live view that follows a running session (the records it
//! appends arrive over server-sent events).

use std::path::{Path as FsPath, PathBuf};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use braincode_config::journal::parse_journal_line;
use braincode_config::{ListOptions, list_sessions, read_journal, resolve_session};
use braincode_protocol::{JournalEntry, Record};
use maud::{Markup, html};
use serde::Deserialize;

use crate::AppState;
use crate::layout::{self, Section};

mod conversation;
mod live;
mod search;
mod status;
mod timeline;

pub(super) fn routes() -> Router<AppState> {
    Router::new()
        .route("/sessions", get(index))
        .route("/sessions/{id}", get(session_page))
        .route("/api/sessions/{id}/events", get(live::events))
}

/// Local time of an epoch-millisecond timestamp.
pub(crate) fn local_time(ms: i64, format: &str) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || "?".to_string(),
        |t| t.with_timezone(&chrono::Local).format(format).to_string(),
    )
}

#[derive(Deserialize)]
struct IndexQuery {
    #[serde(default)]
    q: String,
}

async fn index(State(state): State<AppState>, Query(query): Query<IndexQuery>) -> Html<String> {
    let home = state.home.clone();
    let q = query.q.trim().to_string();
    let searched = q.clone();
    let found = tokio::task::spawn_blocking(move || {
        let sessions = list_sessions(
            &home,
            &ListOptions {
                limit: 200,
                project: None,
                all: true,
            },
        );
        let hits = (!searched.is_empty()).then(|| search::search(&home.sessions_dir(), &searched));
        let sessions = sessions.map(|sessions| {
            sessions
                .into_iter()
                .map(|info| {
                    let status = status::of_listed(&home, &info.id, &info.path, info.status);
                    (info, status)
                })
                .collect::<Vec<_>>()
        });
        (sessions, hits)
    })
    .await;
    let body = match found {
        Err(err) => layout::problem(&format!("listing the sessions failed: {err}")),
        Ok((Err(err), _)) => layout::problem(&err.to_string()),
        Ok((Ok(sessions), hits)) => html! {
            form.search method="get" action="/sessions" {
                input type="search" name="q" value=(q) placeholder="Search every journal (prompts, answers, tool output…)" aria-label="search";
                button type="submit" { "Search" }
            }
            @if let Some(hits) = hits { (search::render(&q, &hits)) }
            table #sessions {
                colgroup { col.c-id; col.c-status; col.c-request; col.c-project; col.c-time; col.c-num; col.c-num; }
                thead { tr { th { "Session" } th { "Status" } th { "Request" } th { "Project" } th { "Updated" } th.num { "Runs" } th.num { "Size" } } }
                tbody {
                    @for (session, status) in &sessions {
                        tr data-session=(session.id) {
                            td { a href=(format!("/sessions/{}", session.id)) title=(session.id) { code { (session.id.short()) } } }
                            td class=(status.key()) data-status=(status.key()) { (status.label()) }
                            td { (session.prompt_preview.as_deref().unwrap_or_default()) }
                            td { small { (layout::breakable(session.project_root.as_deref().unwrap_or_default())) } }
                            td { (local_time(session.updated_at, "%Y-%m-%d %H:%M")) }
                            td.num { (session.runs) @if !session.runs_exact { "+" } }
                            td.num { (kib(session.bytes)) }
                        }
                    }
                }
            }
            @if sessions.is_empty() { p.muted { "No sessions yet: `braincode run <task>` starts one." } }
        },
    };
    layout::page(Section::Sessions, "Sessions", body)
}

fn kib(bytes: u64) -> String {
    if bytes < 10 * 1024 {
        format!("{bytes} B")
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

/// At most this many records are shown in a journal's table (the newest).
const SHOWN_RECORDS: usize = 300;

async fn session_page(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let session = match resolve_session(&state.home, &id) {
        Ok(session) => session,
        Err(err) => {
            return (
                StatusCode::NOT_FOUND,
                layout::page(
                    Section::Sessions,
                    "No such session",
                    layout::problem(&err.to_string()),
                ),
            )
                .into_response();
        }
    };
    let path = state.home.session_path(&session);
    let read = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            read_journal(&path).map(|read| (read, offset))
        })
        .await
    };
    let (journal, offset) = match read {
        Ok(Ok(found)) => found,
        Ok(Err(err)) => {
            return layout::page(
                Section::Sessions,
                "Session",
                layout::problem(&err.to_string()),
            )
            .into_response();
        }
        Err(err) => {
            return layout::page(
                Section::Sessions,
                "Session",
                layout::problem(&err.to_string()),
            )
            .into_response();
        }
    };
    let entries = &journal.entries;
    let last_run = entries
        .iter()
        .rposition(|e| matches!(e.record, Record::RunStart(_)))
        .unwrap_or(0);
    let run_status = status::of_entries(&state.home, &session, entries);
    let running = run_status.may_be_running();
    let skip = entries.len().saturating_sub(SHOWN_RECORDS);
    let body = html! {
        p.lede { code title=(session) { (session.short()) } " · " small { (layout::breakable(&path_display(&path))) } }
        p { "Last run: " span #live-status class=(run_status.key()) data-run-status=(run_status.key()) { (run_status.label()) } }
        @if journal.skipped_count > 0 || journal.malformed_count > 0 {
            p.bad { (journal.skipped_count) " unreadable line(s) and " (journal.malformed_count) " malformed record(s) were skipped." }
        }
        section #conversation { h2 { "Conversation" } (conversation::render(entries)) }
        h2 { "Workers of the last run" }
        div #timeline { (timeline::render(&entries[last_run..])) }
        details #raw {
            summary { "Raw records (" (entries.len()) ")" }
            @if skip > 0 { p.muted { "The " (SHOWN_RECORDS) " newest of " (entries.len()) " records." } }
            table #records data-live-session=[running.then(|| format!("/api/sessions/{session}/events?offset={offset}"))] {
                colgroup { col.c-time; col.c-kind; col; }
                thead { tr { th { "Time" } th { "Record" } th { "What" } } }
                tbody { @for entry in &entries[skip..] { (record_row(entry)) } }
            }
        }
    };
    layout::page(Section::Sessions, "Session", body).into_response()
}

fn path_display(path: &FsPath) -> String {
    PathBuf::from(path).display().to_string()
}

/// One record as a table row (also what the live view appends).
pub(crate) fn record_row(entry: &JournalEntry) -> Markup {
    let kind = entry.record.type_name();
    html! {
        tr data-type=(kind) {
            td { (local_time(entry.timestamp, "%H:%M:%S%.3f")) }
            td { code { (kind) } }
            td { (summary(entry)) }
        }
    }
}

/// What a record says, in one line (the raw view: its fields as JSON).
fn summary(entry: &JournalEntry) -> String {
    let text = match &entry.record {
        Record::WorkerStart(start) => format!(
            "{} ({}) starts: {}",
            start.worker.as_str(),
            layout::serde_name(&start.phase),
            start.goal
        ),
        Record::WorkerEnd(end) => format!(
            "{} ({}) ends{}",
            end.worker.as_str(),
            layout::serde_name(&end.phase),
            end.result
                .as_ref()
                .map(|r| format!(": {}", r.summary))
                .unwrap_or_default()
        ),
        _ => {
            let mut value = serde_json::to_value(entry).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.remove("timestamp");
                map.remove("type");
            }
            value.to_string()
        }
    };
    layout::clip(&text, 180)
}

/// Parses one journal line (for the live view); a bad line gives `None`.
pub(crate) fn parse_line(line: &[u8]) -> Option<JournalEntry> {
    parse_journal_line(line).ok().flatten()
}
