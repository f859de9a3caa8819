//! The live view: follows a session's journal from a byte offset and sends each record it
//! appends as a server-sent event (`record`, with the table row), then `end` (with the run's
//! status) when the run ends. The journal is the run's record stream, so a run in another process shows here as
//! it happens.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use braincode_config::resolve_session;
use braincode_protocol::SessionId;
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::i18n::Lang;

/// How often the journal is looked at.
const POLL: Duration = Duration::from_millis(200);
/// At most this much is read per look (a burst is sent over several looks).
const READ_CHUNK: u64 = 1 << 20;

#[derive(Deserialize)]
pub(super) struct EventsQuery {
    #[serde(default)]
    offset: u64,
}

struct Follow {
    session: SessionId,
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
    queued: VecDeque<Event>,
    ended: bool,
    state: AppState,
    /// The request's language: the stream is read after the request's handler returned.
    lang: Lang,
}

impl Follow {
    /// Reads what was appended since the last look; complete lines become events.
    fn look(&mut self) -> std::io::Result<()> {
        let mut file = std::fs::File::open(&self.path)?;
        let len = file.metadata()?.len();
        if len < self.offset {
            // The file is never rewritten; a shorter one is another file: start over.
            self.offset = 0;
            self.partial.clear();
        }
        if len == self.offset {
            return Ok(());
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        file.take(READ_CHUNK).read_to_end(&mut bytes)?;
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(());
        };
        let complete: Vec<u8> = self.partial.drain(..=last_newline).collect();
        for line in complete.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Some(entry) = super::parse_line(line) else {
                continue;
            };
            let ends = super::status::closes(&entry.record);
            let data = json!({
                "type": entry.record.type_name(),
                "timestamp": entry.timestamp,
                "html": super::record_row(&entry).into_string(),
            });
            self.queued
                .push_back(Event::default().event("record").data(data.to_string()));
            if ends {
                // The run's status, in the words and class the page uses.
                let status =
                    super::status::status_of(&self.state.home, &self.session, Some(&entry.record));
                let data = json!({"status": status.key(), "label": status.label_in(self.lang)});
                self.queued
                    .push_back(Event::default().event("end").data(data.to_string()));
                self.ended = true;
                break;
            }
        }
        Ok(())
    }
}

pub(super) async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
) -> Response {
    let session = match resolve_session(&state.home, &id) {
        Ok(session) => session,
        Err(err) => return (StatusCode::NOT_FOUND, err.to_string()).into_response(),
    };
    let follow = Follow {
        path: state.home.session_path(&session),
        session,
        offset: query.offset,
        partial: Vec::new(),
        queued: VecDeque::new(),
        ended: false,
        state,
        lang: Lang::current(),
    };
    let stream = futures::stream::unfold(follow, |mut follow| async move {
        loop {
            if let Some(event) = follow.queued.pop_front() {
                return Some((Ok::<Event, Infallible>(event), follow));
            }
            if follow.ended {
                return None;
            }
            let shutdown = follow.state.shutdown.clone();
            tokio::select! {
                () = shutdown.cancelled() => return None,
                () = tokio::time::sleep(POLL) => {}
            }
            if let Err(err) = follow.look() {
                let message = format!("cannot read the journal: {err}");
                follow.ended = true;
                return Some((Ok(Event::default().event("failed").data(message)), follow));
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}
