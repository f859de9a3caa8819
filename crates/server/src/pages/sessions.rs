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
use crate::i18n::{t, texts, tf};
use crate::layout::{self, Section};

texts! {
    pub(crate) enum S {
        Title => "Sessions", "会话";
        Session => "Session", "会话";
        ListFailed => "listing the sessions failed: {0}", "列出会话失败：{0}";
        SearchHint => "Search every journal (prompts, answers, tool output…)", "搜索所有日志（提示、回答、工具输出…）";
        SearchLabel => "search", "搜索";
        Search => "Search", "搜索";
        Status => "Status", "状态";
        Request => "Request", "请求";
        Project => "Project", "项目";
        Updated => "Updated", "更新时间";
        Runs => "Runs", "运行次数";
        Size => "Size", "大小";
        NoSessions => "No sessions yet: `braincode run <task>` starts one.", "还没有会话：`braincode run <task>` 会开始一个。";
        NoSuch => "No such session", "没有这个会话";
        LastRun => "Last run:", "最近一次运行：";
        Skipped => "{0} unreadable line(s) and {1} malformed record(s) were skipped.", "跳过了 {0} 行无法读取的内容和 {1} 条格式错误的记录。";
        Conversation => "Conversation", "对话";
        WorkersOfLastRun => "Workers of the last run", "最近一次运行的工作者";
        RawRecords => "Raw records ({0})", "原始记录（{0}）";
        Newest => "The {0} newest of {1} records.", "共 {1} 条记录中最新的 {0} 条。";
        Time => "Time", "时间";
        Record => "Record", "记录";
        What => "What", "内容";
        You => "You", "你";
        Attempt => "↻ attempt {0}", "↻ 第 {0} 次尝试";
        With => "with", "使用";
        AttemptFailed => "attempt failed, trying the next model:", "尝试失败，正在换下一个模型：";
        Error => "Error", "错误";
        Starts => "starts:", "开始：";
        Failed => "failed", "失败";
        Done => "done", "完成";
        TryingNext => "(trying the next model)", "（正在尝试下一个模型）";
        Asks => "Braincode asks", "Braincode 提问";
        Review => "review:", "审查：";
        Warning => "warning:", "警告：";
        MergedBack => "writer merged back:", "写入者已合并回：";
        WriterIn => "writer, in its worktree", "写入者，在其工作树中";
        ItsPatch => "its patch:", "其补丁：";
        ItsChecks => "its checks, in its worktree:", "其检查（在其工作树中）：";
        NoEnd => "no end recorded", "没有记录结束";
        Ok => "ok", "成功";
        NoRecords => "This journal has no records yet.", "此日志还没有记录。";
        Completed => "completed", "已完成";
        FailedStatus => "failed", "失败";
        Aborted => "aborted", "已中止";
        Running => "running", "运行中";
        Interrupted => "interrupted", "已中断";
        RunningOrInterrupted => "running or interrupted", "运行中或已中断";
        NoWorkers => "No workers ran in this run.", "这次运行没有工作者。";
        TimelineLabel => "worker timeline", "工作者时间线";
        SoFar => "so far", "目前为止";
        Mention => "{0} session(s) of {1} mention {2}.", "{1} 个会话中有 {0} 个提到 {2}。";
        Matches => "{0} match(es)", "{0} 处匹配";
    }
}

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
        Err(err) => layout::problem(&tf(S::ListFailed, &[&err])),
        Ok((Err(err), _)) => layout::problem(&err.to_string()),
        Ok((Ok(sessions), hits)) => html! {
            form.search method="get" action="/sessions" {
                input type="search" name="q" value=(q) placeholder=(t(S::SearchHint)) aria-label=(t(S::SearchLabel));
                button type="submit" { (t(S::Search)) }
            }
            @if let Some(hits) = hits { (search::render(&q, &hits)) }
            table #sessions {
                colgroup { col.c-id; col.c-status; col.c-request; col.c-project; col.c-time; col.c-num; col.c-num; }
                thead { tr { th { (t(S::Session)) } th { (t(S::Status)) } th { (t(S::Request)) } th { (t(S::Project)) } th { (t(S::Updated)) } th.num { (t(S::Runs)) } th.num { (t(S::Size)) } } }
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
            @if sessions.is_empty() { p.muted { (t(S::NoSessions)) } }
        },
    };
    layout::page(Section::Sessions, t(S::Title), body)
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
                    t(S::NoSuch),
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
                t(S::Session),
                layout::problem(&err.to_string()),
            )
            .into_response();
        }
        Err(err) => {
            return layout::page(
                Section::Sessions,
                t(S::Session),
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
        p { (t(S::LastRun)) " " span #live-status class=(run_status.key()) data-run-status=(run_status.key()) { (run_status.label()) } }
        @if journal.skipped_count > 0 || journal.malformed_count > 0 {
            p.bad { (tf(S::Skipped, &[&journal.skipped_count, &journal.malformed_count])) }
        }
        section #conversation { h2 { (t(S::Conversation)) } (conversation::render(entries)) }
        h2 { (t(S::WorkersOfLastRun)) }
        div #timeline { (timeline::render(&entries[last_run..])) }
        details #raw {
            summary { (tf(S::RawRecords, &[&entries.len()])) }
            @if skip > 0 { p.muted { (tf(S::Newest, &[&SHOWN_RECORDS, &entries.len()])) } }
            table #records data-live-session=[running.then(|| format!("/api/sessions/{session}/events?offset={offset}"))] {
                colgroup { col.c-time; col.c-kind; col; }
                thead { tr { th { (t(S::Time)) } th { (t(S::Record)) } th { (t(S::What)) } } }
                tbody { @for entry in &entries[skip..] { (record_row(entry)) } }
            }
        }
    };
    layout::page(Section::Sessions, t(S::Session), body).into_response()
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
