//! Appending records to `<home>/sessions/<id>.jsonl`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use braincode_protocol::{JournalEntry, Record, SessionId};

use super::{MAX_RECORD_BYTES, fit_record};
use crate::json_io::create_private_dir;
use crate::{Home, JournalError};

fn ends_without_newline(file: &File) -> std::io::Result<bool> {
    use std::os::unix::fs::FileExt;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1)?;
    Ok(last[0] != b'\n')
}

/// The journal is text that outlives the run: no registered secret lands in it, however it
/// got into a record (a tool's output, an error message, a hook's context).
fn redacted(line: Vec<u8>) -> Vec<u8> {
    if let Ok(text) = std::str::from_utf8(&line)
        && let std::borrow::Cow::Owned(redacted) = braincode_protocol::secrets::redact_secrets(text)
    {
        return redacted.into_bytes();
    }
    line
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Appends records to one session journal.
///
/// The file is opened with `O_APPEND` and every record goes out as one whole line in a single
/// `write(2)`, so processes appending to the same session at the same time never interleave
/// parts of lines (the kernel positions and writes each append atomically on a local file
/// system). Nothing is buffered in this process: after `append` returns, the line is in the
/// kernel. Records that later runs depend on (`run_end`, `run_error`, `handoff`) are also
/// fsynced before `append` returns.
#[derive(Debug)]
pub struct JournalWriter {
    file: File,
    path: PathBuf,
    /// Set when a write came up short: the next append starts with a newline so the torn line
    /// cannot swallow the next record.
    needs_newline: bool,
}

impl JournalWriter {
    /// Opens (creating when needed) the journal of `id`. Creates `sessions/` (0700) and the
    /// file (0600: prompts and answers are private).
    pub fn open(home: &Home, id: &SessionId) -> Result<JournalWriter, JournalError> {
        Self::open_path(&home.session_path(id))
    }

    /// Opens a journal at an explicit path (benchmarks, tools).
    pub fn open_path(path: &Path) -> Result<JournalWriter, JournalError> {
        let io_err = |action, source| JournalError::Io {
            action,
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            create_private_dir(dir).map_err(|source| io_err("create the directory of", source))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)
            .map_err(|source| io_err("open", source))?;
        // A previous writer may have died mid-line; start on a fresh line so the torn half
        // cannot swallow the first record of this writer.
        let needs_newline = ends_without_newline(&file).map_err(|source| io_err("read", source))?;
        Ok(JournalWriter {
            file,
            path: path.to_path_buf(),
            needs_newline,
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record` stamped with the current time and returns the written entry.
    pub fn append(&mut self, record: &Record) -> Result<JournalEntry, JournalError> {
        let entry = JournalEntry::new(now_ms(), record.clone());
        self.append_entry(&entry)?;
        Ok(entry)
    }

    /// Appends an entry with its own timestamp. A record whose line would be longer than
    /// [`MAX_RECORD_BYTES`] has its longest text fields clipped first (see [`fit_record`]).
    pub fn append_entry(&mut self, entry: &JournalEntry) -> Result<(), JournalError> {
        let encode_error = |source| JournalError::Encode {
            record_type: entry.record.type_name().to_string(),
            path: self.path.clone(),
            source,
        };
        let mut body = redacted(serde_json::to_vec(entry).map_err(encode_error)?);
        if body.len() >= MAX_RECORD_BYTES {
            let record = match serde_json::to_value(entry).map_err(encode_error)? {
                serde_json::Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            body = fit_record(record, redacted).map_err(encode_error)?;
        }
        let mut line = Vec::with_capacity(body.len() + 2);
        if self.needs_newline {
            line.push(b'\n');
        }
        line.extend_from_slice(&body);
        drop(body);
        line.push(b'\n');
        let io_err = |action, source| JournalError::Io {
            action,
            path: self.path.clone(),
            source,
        };
        // One write(2) for the whole line. A regular file only writes less than asked when the
        // disk is full or a signal interrupts a huge write; then the line is torn, which
        // readers detect, and the next append starts on a fresh line.
        let written = self
            .file
            .write(&line)
            .map_err(|source| io_err("append to", source))?;
        if written < line.len() {
            self.needs_newline = true;
            return Err(io_err(
                "append to",
                std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    format!("short write: {written} of {} bytes", line.len()),
                ),
            ));
        }
        self.needs_newline = false;
        if entry.record.is_durability_point() {
            self.file
                .sync_data()
                .map_err(|source| io_err("sync", source))?;
        }
        Ok(())
    }

    /// Forces everything written so far to disk.
    pub fn sync(&mut self) -> Result<(), JournalError> {
        self.file.sync_data().map_err(|source| JournalError::Io {
            action: "sync",
            path: self.path.clone(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{MAX_RECORD_BYTES, read_journal};
    use braincode_protocol::RunEnd;

    #[test]
    fn a_record_too_big_for_a_line_is_clipped_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut writer = JournalWriter::open_path(&path).unwrap();
        let answer = "é".repeat(3 * MAX_RECORD_BYTES);
        writer
            .append(&Record::RunEnd(RunEnd {
                summary: answer,
                ..RunEnd::default()
            }))
            .unwrap();
        writer
            .append(&Record::RunEnd(RunEnd {
                summary: "small".into(),
                ..RunEnd::default()
            }))
            .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes
                .split_inclusive(|b| *b == b'\n')
                .all(|line| line.len() <= MAX_RECORD_BYTES)
        );
        let read = read_journal(&path).unwrap();
        assert_eq!((read.entries.len(), read.skipped_count), (2, 0));
        let Record::RunEnd(end) = &read.entries[0].record else {
            panic!("{:?}", read.entries[0].record);
        };
        assert!(end.summary.starts_with("éé"));
        assert!(end.summary.ends_with(" bytes]"), "marked as clipped");
        assert!(end.summary.contains("…[clipped: "));
    }
}
