//! Mechanical session snapshots: the compact text an `@@id` reference or a follow-up prompt
//! gets instead of the whole journal.
//!
//! Cost does not grow with the journal: the end of the file is read backwards in 64 KiB
//! blocks until the last `max_entries` relevant records, the status of the latest run and the
//! latest summary are known (or a fixed byte budget is spent), and the initial prompt is read
//! from the head. Layout:
//!
//! ```text
//! Session <id> · status <status> · updated <ISO time>
//! Scope: compact session context only (distilled records, not the full transcript).
//!
//! Initial prompt:            (≤ 6,144 chars)
//! Latest summary:            (≤ 6,144 chars, newest run_end or handoff)
//! Recent records (oldest first):
//! - (earlier records omitted)
//! - [time] run / worker / todo / check / review / handoff / error lines, per-field caps
//! ```
//!
//! The whole text is at most [`SESSION_SNAPSHOT_MAX_CHARS`] characters. When the records do
//! not fit, the oldest ones are dropped first (the newest activity matters most to a
//! follow-up), and the omission is said.

use std::fs::File;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use braincode_protocol::{JournalEntry, Record, SessionId};
use serde::Serialize;

use super::distill::{distill, latest_summary_of};
use super::list::{HEAD_SCAN_BYTES, scan_head, scan_tail_status};
use super::reader::parse_journal_line;
use super::scan::{ReverseLines, sniff_type};
use super::{SessionStatus, status_from_record};
use crate::text::{clip, iso_time};

pub use super::distill::{EntryKind, SnapshotEntry};
use crate::{Home, JournalError};

pub use crate::budgets::{SESSION_SNAPSHOT_MAX_CHARS, SNAPSHOT_FIELD_MAX_CHARS};

/// How far back from the end [`session_has_runs`] looks before reading the head.
const HAS_RUNS_TAIL_BYTES: u64 = 1024 * 1024;
/// How far back from the end a snapshot reads at most.
const TAIL_SCAN_BYTES: u64 = 16 * 1024 * 1024;

/// First line of [`continuity_block`].
pub const CONTINUITY_HEADER: &str =
    "Conversation so far (most recent session activity, for continuity with this follow-up):";

/// Record types a snapshot distills.
const RELEVANT_TYPES: [&str; 12] = [
    "run_start",
    "run_end",
    "run_error",
    "worker_end",
    "worker_error",
    "todo_plan",
    "todo_update",
    "check_summary",
    "review_decision",
    "handoff",
    "clarification_request",
    "dynamic_dispatch",
];

/// Options of [`session_snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotOptions {
    /// Keep at most this many distilled records (default 24).
    pub max_entries: usize,
}

impl Default for SnapshotOptions {
    fn default() -> Self {
        Self { max_entries: 24 }
    }
}

/// A line near the end of the journal that could not be used, by byte offset (line numbers
/// are unknown when reading backwards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffsetProblem {
    /// Byte offset of the line start.
    pub offset: u64,
    /// Why.
    pub reason: String,
}

/// A session snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot {
    /// The session.
    pub id: SessionId,
    /// The snapshot text (≤ [`SESSION_SNAPSHOT_MAX_CHARS`] characters).
    pub text: String,
    /// Status of the latest run.
    pub status: SessionStatus,
    /// Whether earlier records were left out.
    pub truncated: bool,
    /// Number of records in the text.
    pub entries: usize,
    /// The distilled records in the text, oldest first.
    pub records: Vec<SnapshotEntry>,
    /// File modification time, epoch milliseconds.
    pub updated_at: i64,
    /// Bytes read to build the snapshot.
    pub bytes_read: u64,
    /// Lines in the scanned window that were not records (or were malformed records).
    pub skipped: Vec<OffsetProblem>,
    /// Whether the last line is cut off (a writer died mid-line).
    pub torn_tail: bool,
}

/// What the backward scan collected.
#[derive(Default)]
struct TailScan {
    /// Distilled entries, newest first.
    entries: Vec<SnapshotEntry>,
    status: Option<SessionStatus>,
    latest_summary: Option<String>,
    /// Prompt of the oldest `run_start` seen (the first one when `reached_start`).
    oldest_prompt: Option<String>,
    more_before: bool,
    reached_start: bool,
    bytes_read: u64,
    skipped: Vec<OffsetProblem>,
    torn_tail: bool,
}

fn scan_tail(file: File, max_entries: usize) -> std::io::Result<TailScan> {
    let mut lines = ReverseLines::new(file)?;
    let mut scan = TailScan::default();
    let mut first_line = true;
    while let Some(line) = lines.next_line()? {
        let is_last_line = std::mem::take(&mut first_line);
        if line.oversized {
            scan.skip(
                line.offset,
                format!("line longer than {} bytes", super::MAX_LINE_BYTES),
            );
            continue;
        }
        if line.bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if is_last_line && !line.terminated {
            // The last line has no newline: either a complete record whose newline was lost,
            // or a line a writer was cut off in the middle of.
            match parse_journal_line(&line.bytes) {
                Ok(Some(entry)) => {
                    if RELEVANT_TYPES.contains(&entry.record.type_name())
                        && !entry.record.is_malformed_known()
                    {
                        scan.take(&entry, max_entries);
                    }
                }
                Ok(None) => {}
                Err(_) => scan.torn_tail = true,
            }
            continue;
        }
        let Some(ty) = sniff_type(&line.bytes) else {
            scan.skip(line.offset, "not a journal record".into());
            continue;
        };
        if RELEVANT_TYPES.contains(&ty.as_str()) {
            match parse_journal_line(&line.bytes) {
                Ok(Some(entry)) if !entry.record.is_malformed_known() => {
                    scan.take(&entry, max_entries);
                }
                Ok(_) => scan.skip(line.offset, format!("malformed {ty} record")),
                Err(reason) => scan.skip(line.offset, reason),
            }
        }
        let settled = scan.more_before && scan.status.is_some() && scan.latest_summary.is_some();
        if settled {
            break;
        }
        if lines.bytes_read >= TAIL_SCAN_BYTES {
            break;
        }
    }
    scan.reached_start = lines.at_start();
    if !scan.reached_start && scan.entries.len() >= max_entries {
        scan.more_before = true;
    }
    scan.bytes_read = lines.bytes_read;
    Ok(scan)
}

impl TailScan {
    fn skip(&mut self, offset: u64, reason: String) {
        if self.skipped.len() < super::MAX_LISTED_PROBLEMS {
            self.skipped.push(OffsetProblem { offset, reason });
        }
    }

    fn take(&mut self, entry: &JournalEntry, max_entries: usize) {
        if self.status.is_none() {
            self.status = status_from_record(&entry.record);
        }
        if let Record::RunStart(start) = &entry.record {
            self.oldest_prompt = Some(start.prompt.clone());
        }
        let is_latest_summary = match latest_summary_of(&entry.record) {
            Some(summary) if self.latest_summary.is_none() => {
                self.latest_summary = Some(summary.to_string());
                true
            }
            _ => false,
        };
        if self.entries.len() >= max_entries {
            self.more_before = true;
            return;
        }
        if let Some(distilled) = distill(entry, is_latest_summary) {
            self.entries.push(distilled);
        }
    }
}

fn mtime_ms(path: &std::path::Path) -> i64 {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Builds the snapshot of session `id` (see the module docs for the layout and budgets).
pub fn session_snapshot(
    home: &Home,
    id: &SessionId,
    options: &SnapshotOptions,
) -> Result<SessionSnapshot, JournalError> {
    let path = home.session_path(id);
    snapshot_of_path(id, path, options)
}

fn snapshot_of_path(
    id: &SessionId,
    path: PathBuf,
    options: &SnapshotOptions,
) -> Result<SessionSnapshot, JournalError> {
    let io_err = |source| JournalError::Io {
        action: "read",
        path: path.clone(),
        source,
    };
    let file = File::open(&path).map_err(io_err)?;
    let updated_at = mtime_ms(&path);
    let mut scan = scan_tail(file, options.max_entries.max(1)).map_err(io_err)?;
    let mut bytes_read = scan.bytes_read;
    let initial_prompt = if scan.reached_start {
        scan.oldest_prompt.take()
    } else {
        let head = scan_head(&path, HEAD_SCAN_BYTES, false).map_err(io_err)?;
        bytes_read += head.bytes;
        head.first_run_start.map(|s| s.prompt)
    };
    let status = scan.status.unwrap_or(SessionStatus::Incomplete);
    let mut entries = std::mem::take(&mut scan.entries);
    entries.reverse();

    let mut head = format!(
        "Session {id} · status {status} · updated {}\nScope: compact session context only (distilled records, not the full transcript).\n",
        iso_time(updated_at)
    );
    if let Some(prompt) = initial_prompt.as_deref().filter(|p| !p.trim().is_empty()) {
        head.push_str(&format!(
            "\nInitial prompt:\n{}\n",
            clip(prompt.trim(), SNAPSHOT_FIELD_MAX_CHARS)
        ));
    }
    if let Some(summary) = scan.latest_summary.as_deref() {
        head.push_str(&format!(
            "\nLatest summary:\n{}\n",
            clip(summary.trim(), SNAPSHOT_FIELD_MAX_CHARS)
        ));
    }
    const OMITTED: &str = "- (earlier records omitted)\n";
    const RECORDS_HEADER: &str = "\nRecent records (oldest first):\n";
    let budget = SESSION_SNAPSHOT_MAX_CHARS;
    let fixed = head.chars().count() + RECORDS_HEADER.chars().count() + OMITTED.chars().count();
    let mut truncated = scan.more_before;
    // Keep the newest records that fit; drop older ones first.
    let mut kept: Vec<String> = Vec::new();
    let mut used = fixed;
    let mut first_kept = entries.len();
    for (i, entry) in entries.iter().enumerate().rev() {
        let line = format!("- [{}] {}\n", iso_time(entry.timestamp), entry.text);
        let len = line.chars().count();
        if used + len > budget {
            truncated = true;
            break;
        }
        used += len;
        kept.push(line);
        first_kept = i;
    }
    kept.reverse();
    let records: Vec<SnapshotEntry> = entries.split_off(first_kept.min(entries.len()));
    let mut text = head;
    if !kept.is_empty() || truncated {
        text.push_str(RECORDS_HEADER);
        if truncated {
            text.push_str(OMITTED);
        }
        for line in &kept {
            text.push_str(line);
        }
    }
    let text = clip(&text, budget);
    Ok(SessionSnapshot {
        id: id.clone(),
        text,
        status,
        truncated,
        entries: records.len(),
        records,
        updated_at,
        bytes_read,
        skipped: scan.skipped,
        torn_tail: scan.torn_tail,
    })
}

/// Whether session `id` has at least one run (its journal holds a run record).
pub fn session_has_runs(home: &Home, id: &SessionId) -> bool {
    let path = home.session_path(id);
    let Ok(file) = File::open(&path) else {
        return false;
    };
    drop(file);
    match scan_tail_status(&path, HAS_RUNS_TAIL_BYTES) {
        Ok((status, runs, _)) if runs > 0 || status != SessionStatus::Incomplete => true,
        Ok((_, _, true)) => false,
        _ => scan_head(&path, HEAD_SCAN_BYTES, false).is_ok_and(|h| h.first_run_start.is_some()),
    }
}

/// The block prepended to a follow-up prompt in a session that already has runs, or `None`
/// for a new session.
pub fn continuity_block(home: &Home, id: &SessionId) -> Option<String> {
    if !session_has_runs(home, id) {
        return None;
    }
    let snapshot = session_snapshot(home, id, &SnapshotOptions::default()).ok()?;
    Some(format!("{CONTINUITY_HEADER}\n{}", snapshot.text))
}
