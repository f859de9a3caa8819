//! Reading a journal front to back, one line at a time.
//!
//! A journal is append-only JSONL written by possibly crashing processes, so a reader must
//! survive anything: blank lines are ignored, lines that are not a JSON record are skipped and
//! reported with their line number, and an unparseable last line without a trailing newline
//! is reported as a torn tail (a writer died mid-line) rather than as corruption.
//!
//! Records of a known type whose fields do not have the expected shape are **kept** (as
//! [`Record::Unknown`], verbatim, so nothing is lost and tools can still show them) **and
//! reported** in [`JournalRead::malformed`], so the reader can tell the user about them.

use std::fs::File;
use std::io::BufReader;
use std::ops::ControlFlow;
use std::path::Path;

use braincode_protocol::{JournalEntry, Record};
use serde::Serialize;

use crate::JournalError;
use crate::journal::scan::{MAX_LINE_BYTES, read_line_capped};

/// At most this many skipped or malformed lines are listed; the counts stay exact.
pub const MAX_LISTED_PROBLEMS: usize = 1_000;

/// A line that was not used as-is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    /// Why (clipped to 200 characters).
    pub reason: String,
}

/// What reading a journal found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JournalRead {
    /// Every parsed record, in file order (malformed known-type records included, as
    /// [`Record::Unknown`]).
    pub entries: Vec<JournalEntry>,
    /// Lines that are not a JSON record (first [`MAX_LISTED_PROBLEMS`]).
    pub skipped: Vec<SkippedLine>,
    /// Total number of skipped lines.
    pub skipped_count: usize,
    /// Known-type records with a bad shape, kept in `entries` (first [`MAX_LISTED_PROBLEMS`]).
    pub malformed: Vec<SkippedLine>,
    /// Total number of malformed known-type records.
    pub malformed_count: usize,
    /// Whether the last line was cut off (no trailing newline and not parseable).
    pub torn_tail: bool,
    /// Number of lines in the file (including blank and bad ones).
    pub lines: usize,
}

/// The problems found by [`scan_journal`] (everything of [`JournalRead`] but the entries).
pub type ScanReport = JournalRead;

fn clip_reason(reason: String) -> String {
    if reason.chars().count() <= 200 {
        return reason;
    }
    let mut clipped: String = reason.chars().take(199).collect();
    clipped.push('…');
    clipped
}

/// Parses one journal line (without its newline). `Ok(None)` for a blank line.
pub fn parse_journal_line(bytes: &[u8]) -> Result<Option<JournalEntry>, String> {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let text = std::str::from_utf8(bytes).map_err(|err| format!("not UTF-8 text ({err})"))?;
    serde_json::from_str::<JournalEntry>(text)
        .map(Some)
        .map_err(|err| clip_reason(format!("not a journal record: {err}")))
}

/// Streams the journal at `path`, calling `on_entry(line_number, entry)` for every record
/// (return `ControlFlow::Break` to stop early). Memory use is one line at a time.
pub fn scan_journal(
    path: &Path,
    mut on_entry: impl FnMut(usize, JournalEntry) -> ControlFlow<()>,
) -> Result<ScanReport, JournalError> {
    let io_err = |source| JournalError::Io {
        action: "read",
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut report = ScanReport::default();
    let mut buf = Vec::with_capacity(4096);
    loop {
        buf.clear();
        let (read, cut) =
            read_line_capped(&mut reader, &mut buf, MAX_LINE_BYTES).map_err(io_err)?;
        if read == 0 {
            break;
        }
        report.lines += 1;
        let line_no = report.lines;
        let complete = buf.last() == Some(&b'\n');
        let line = if complete {
            &buf[..buf.len() - 1]
        } else {
            &buf[..]
        };
        let parsed = if cut {
            Err(format!("line longer than {MAX_LINE_BYTES} bytes"))
        } else {
            parse_journal_line(line)
        };
        match parsed {
            Ok(None) => {}
            Ok(Some(entry)) => {
                if entry.record.is_malformed_known() {
                    report.malformed_count += 1;
                    if report.malformed.len() < MAX_LISTED_PROBLEMS {
                        report.malformed.push(SkippedLine {
                            line: line_no,
                            reason: malformed_reason(&entry.record),
                        });
                    }
                }
                if on_entry(line_no, entry).is_break() {
                    break;
                }
            }
            Err(_) if !complete && !cut => report.torn_tail = true,
            Err(reason) => {
                report.skipped_count += 1;
                if report.skipped.len() < MAX_LISTED_PROBLEMS {
                    report.skipped.push(SkippedLine {
                        line: line_no,
                        reason,
                    });
                }
            }
        }
    }
    Ok(report)
}

/// Why a known-type record did not take its typed shape.
pub(crate) fn malformed_reason(record: &Record) -> String {
    if !matches!(record, Record::Unknown(_)) {
        return String::new();
    }
    let detail = record
        .parse_error()
        .unwrap_or_else(|| "its fields do not match the record type".into());
    clip_reason(format!(
        "{} record kept verbatim: {detail}",
        record.type_name()
    ))
}

/// Reads the whole journal into memory (streaming the file; the entries are what is kept).
pub fn read_journal(path: &Path) -> Result<JournalRead, JournalError> {
    let mut entries = Vec::new();
    let mut report = scan_journal(path, |_, entry| {
        entries.push(entry);
        ControlFlow::Continue(())
    })?;
    report.entries = entries;
    Ok(report)
}
