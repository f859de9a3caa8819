//! A session's real status: how its latest run ended, or whether it is still running.
//!
//! The listing's `SessionInfo.status` (`completed` / `failed` / `incomplete`) says whether
//! the latest run closed; the closing record says how: a run that was cancelled or whose
//! process died closes with status `aborted` (a `run_end` or a `run_error`), and an unclosed
//! run is running only while its process holds the run's live lock.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use braincode_config::journal::{parse_journal_line, run_is_live};
use braincode_config::{Home, SessionStatus};
use braincode_protocol::{FinalStatus, JournalEntry, Record, SessionId};

use super::S;
use crate::i18n::{Lang, Text};

/// How a session's latest run stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RunStatus {
    /// It answered; `detail` is its final status (`approved`, `changes_requested`, …).
    Completed { detail: Option<&'static str> },
    /// It failed.
    Failed,
    /// It was cancelled, or its process died and a later run closed it.
    Aborted,
    /// It has not ended and its process is running it now.
    Running,
    /// It has not ended and no process is running it (killed, power cut).
    Interrupted,
    /// It has not ended and the journal cannot say whether it runs (a run without a run id,
    /// or a journal that could not be read).
    Unknown,
}

impl RunStatus {
    /// The key used as CSS class and `data-status`.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            RunStatus::Completed { .. } => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Aborted => "aborted",
            RunStatus::Running => "running",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Unknown => "incomplete",
        }
    }

    /// What the page says, in the request's language.
    pub(crate) fn label(&self) -> String {
        self.label_in(Lang::current())
    }

    /// What the page says, in `lang` (a live stream is read after its request returned).
    pub(crate) fn label_in(&self, lang: Lang) -> String {
        let word = |key: S| key.in_lang(lang);
        match self {
            RunStatus::Completed {
                detail: Some(detail),
            } => format!("{} · {}", word(S::Completed), detail.replace('_', " ")),
            RunStatus::Completed { detail: None } => word(S::Completed).to_string(),
            RunStatus::Failed => word(S::FailedStatus).to_string(),
            RunStatus::Aborted => word(S::Aborted).to_string(),
            RunStatus::Running => word(S::Running).to_string(),
            RunStatus::Interrupted => word(S::Interrupted).to_string(),
            RunStatus::Unknown => word(S::RunningOrInterrupted).to_string(),
        }
    }

    /// Whether the run may still be appending records (the page follows it live). An
    /// interrupted run is not: nobody runs it.
    pub(crate) fn may_be_running(&self) -> bool {
        matches!(self, RunStatus::Running | RunStatus::Unknown)
    }

    /// What the listing's status says when the journal's end cannot be read.
    fn from_listing(status: SessionStatus) -> RunStatus {
        match status {
            SessionStatus::Completed => RunStatus::Completed { detail: None },
            SessionStatus::Failed => RunStatus::Failed,
            SessionStatus::Incomplete => RunStatus::Unknown,
        }
    }
}

/// Whether `record` closes a run: its `run_end`, or a `run_error` that does not fall back to
/// the next model.
pub(crate) fn closes(record: &Record) -> bool {
    match record {
        Record::RunEnd(_) => true,
        Record::RunError(error) => error.will_fallback != Some(true),
        _ => false,
    }
}

/// Whether `record` settles the latest run's status, read newest first: a closing record, or
/// the run's start (nothing closed it). An attempt's error that falls back does not.
fn settles(record: &Record) -> bool {
    matches!(record, Record::RunStart(_)) || closes(record)
}

/// The status `last` (the settling record, if any) gives the run.
pub(crate) fn status_of(home: &Home, session: &SessionId, last: Option<&Record>) -> RunStatus {
    match last {
        Some(Record::RunEnd(end)) => match end.status {
            Some(FinalStatus::Aborted) => RunStatus::Aborted,
            Some(FinalStatus::Failed) => RunStatus::Failed,
            status => RunStatus::Completed {
                detail: status.map(FinalStatus::as_str),
            },
        },
        Some(Record::RunError(error)) => {
            let aborted = error.status == Some(FinalStatus::Aborted)
                || matches!(
                    error.kind.as_deref(),
                    Some("aborted" | "interrupted" | "cancelled")
                );
            if aborted {
                RunStatus::Aborted
            } else {
                RunStatus::Failed
            }
        }
        Some(Record::RunStart(start)) => match &start.run_id {
            Some(run) if run_is_live(home, session, run) => RunStatus::Running,
            Some(_) => RunStatus::Interrupted,
            None => RunStatus::Unknown,
        },
        _ => RunStatus::Unknown,
    }
}

/// The status of the latest run among `entries` (a whole journal, oldest first).
pub(crate) fn of_entries(home: &Home, session: &SessionId, entries: &[JournalEntry]) -> RunStatus {
    let last = entries.iter().rev().map(|e| &e.record).find(|r| settles(r));
    status_of(home, session, last)
}

/// The status of a listed session: its journal is read back from the end only as far as
/// the record that settles it; `listed` is what the listing said, used when that read fails.
pub(crate) fn of_listed(
    home: &Home,
    session: &SessionId,
    path: &Path,
    listed: SessionStatus,
) -> RunStatus {
    match last_settling_record(path) {
        Ok(Some(record)) => status_of(home, session, Some(&record)),
        Ok(None) if listed == SessionStatus::Incomplete => RunStatus::Unknown,
        _ => RunStatus::from_listing(listed),
    }
}

/// Read back from the end in blocks of this size…
const BLOCK: u64 = 64 * 1024;
/// …at most this far (a run's closing record with its worker results is well under it).
const MAX_BACK: u64 = 8 * 1024 * 1024;

/// The newest record that settles the latest run's status, reading backwards.
fn last_settling_record(path: &Path) -> std::io::Result<Option<Record>> {
    let mut file = File::open(path)?;
    let mut end = file.metadata()?.len();
    let mut carry: Vec<u8> = Vec::new();
    let mut read = 0u64;
    while end > 0 && read < MAX_BACK {
        let start = end.saturating_sub(BLOCK);
        let mut chunk = vec![0u8; usize::try_from(end - start).unwrap_or(0)];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        read += end - start;
        chunk.extend_from_slice(&carry);
        let mut lines: Vec<&[u8]> = chunk.split(|&b| b == b'\n').collect();
        // The first piece may be the end of a line that starts in an earlier block.
        let first = if start > 0 {
            Some(lines.remove(0))
        } else {
            None
        };
        for line in lines.iter().rev() {
            let interesting = [&b"\"run_end\""[..], b"\"run_error\"", b"\"run_start\""]
                .iter()
                .any(|kind| line.windows(kind.len()).any(|w| w == *kind));
            if !interesting {
                continue;
            }
            if let Ok(Some(entry)) = parse_journal_line(line)
                && settles(&entry.record)
            {
                return Ok(Some(entry.record));
            }
        }
        carry = first.map(<[u8]>::to_vec).unwrap_or_default();
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_settling_record_is_found_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let filler = format!(
            "{{\"timestamp\":2,\"type\":\"warning\",\"message\":\"{}\"}}\n",
            "x".repeat(1000)
        );
        let mut text = String::from(
            "{\"timestamp\":1,\"type\":\"run_start\",\"prompt\":\"p\",\"runId\":\"r\"}\n",
        );
        text.push_str(&format!(
            "{{\"timestamp\":3,\"type\":\"run_end\",\"summary\":\"{}\",\"status\":\"aborted\"}}\n",
            "y".repeat(100_000)
        ));
        for _ in 0..200 {
            text.push_str(&filler);
        }
        text.push_str(
            "{\"timestamp\":4,\"type\":\"run_error\",\"error\":\"e\",\"willFallback\":true}\n",
        );
        std::fs::write(&path, &text).unwrap();
        let record = last_settling_record(&path).unwrap().unwrap();
        assert!(
            matches!(&record, Record::RunEnd(end) if end.status == Some(FinalStatus::Aborted)),
            "{record:?}"
        );
        std::fs::write(&path, filler.as_bytes()).unwrap();
        assert_eq!(last_settling_record(&path).unwrap(), None);
    }
}
