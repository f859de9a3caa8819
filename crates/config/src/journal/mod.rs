//! The session journal: `<home>/sessions/<id>.jsonl`, one JSON record per line.
//!
//! * [`JournalWriter`] appends whole lines atomically (`O_APPEND`, one `write(2)` per record)
//!   and fsyncs the records later runs depend on. No line is longer than
//!   [`MAX_RECORD_BYTES`], which is also what every reader accepts: a record with bigger text
//!   fields has them clipped (`…[clipped: N bytes]`, see [`clip_text`]).
//! * [`read_journal`] / [`scan_journal`] stream a journal front to back and report bad lines.
//! * [`list_sessions`], [`resolve_session`] and [`latest_session_for_project`] find sessions
//!   without reading whole files.
//! * [`session_snapshot`] distills the end of a journal for `@@id` references and session
//!   continuity, reading backwards from the end so its cost does not grow with the file.

mod clip;
mod distill;
mod handoff;
mod latest;
mod list;
mod reader;
mod recover;
pub(crate) mod scan;
mod snapshot;
mod writer;

use serde::{Deserialize, Serialize};

pub use clip::{clip_marker, clip_string, clip_text, fit_record, is_clipped};

/// The longest journal line, newline included: 1 MiB. The one limit shared by the writer
/// (which clips a record's longest text fields until its line fits, so it never writes a
/// line its readers would refuse) and every reader (forward scans, backward scans, listing,
/// snapshots, `sessions show --verify`). Big enough for any record Braincode writes in
/// normal use; a model reply or prompt larger than this is journaled clipped, with a
/// `…[clipped: N bytes]` marker.
pub const MAX_RECORD_BYTES: usize = 1024 * 1024;

pub use handoff::{
    HANDOFF_MAX_CHARS, HandoffDraft, TRANSCRIPT_MAX_CHARS, WrittenHandoff, append_handoff,
    build_handoff, draft_handoff, extend_handoff, fresh_handoff, report_turns, session_handoff,
    session_transcript, write_handoff,
};
pub use latest::latest_session_for_project;
pub use list::{ListOptions, SessionInfo, list_sessions, resolve_session};
pub use reader::{
    JournalRead, MAX_LISTED_PROBLEMS, ScanReport, SkippedLine, parse_journal_line, read_journal,
    scan_journal,
};
pub use recover::{LiveRun, hold_live_run, run_is_live, unclosed_last_run};
pub use scan::{MAX_LINE_BYTES, TAIL_BLOCK_BYTES};
pub use snapshot::{
    CONTINUITY_HEADER, EntryKind, OffsetProblem, SessionSnapshot, SnapshotEntry, SnapshotOptions,
    continuity_block, session_has_runs, session_snapshot,
};
pub use writer::{JournalWriter, now_ms};

/// State of a session, judged by its latest run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// The latest run ended with `run_end`.
    Completed,
    /// The latest run ended with a `run_error` that was not followed by a fallback.
    Failed,
    /// No run yet, or the latest run has not ended (still running, or the process died).
    Incomplete,
}

impl SessionStatus {
    /// `completed`, `failed` or `incomplete`.
    pub const fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::Incomplete => "incomplete",
        }
    }
}

impl std::fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a run record says about the session status, newest first: `None` when the record
/// does not settle it (not a run record, or a `run_error` that falls back to the next model).
pub(crate) fn status_from_record(record: &braincode_protocol::Record) -> Option<SessionStatus> {
    use braincode_protocol::Record;
    match record {
        Record::RunEnd(_) => Some(SessionStatus::Completed),
        Record::RunError(err) if err.will_fallback == Some(true) => None,
        Record::RunError(_) => Some(SessionStatus::Failed),
        Record::RunStart(_) => Some(SessionStatus::Incomplete),
        _ => None,
    }
}
