//! Runs that ended without their closing record.
//!
//! A run's journal ends with `run_end` or a `run_error` that carries a status. A run whose
//! journal could not be written to the end (a full disk) or whose process died (`kill -9`, a
//! power cut) has none. While a run runs it holds an exclusive lock on a small file in
//! `~/.braincode/live/`; the next run that opens the session finds the unclosed run, sees that
//! nobody holds its lock, and appends a closing `run_error` for it (status `aborted`, kind
//! `interrupted`) before its own `run_start`, so the session lists that run as ended and
//! `run --resume` can take it up, even after later runs of the session have ended.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::PathBuf;

use super::scan::{ReverseLines, sniff_type};
use braincode_protocol::SessionId;

use crate::Home;

/// The lock a running run holds; dropping it (the run ended, or its process died) frees it.
#[derive(Debug)]
pub struct LiveRun {
    file: File,
    path: PathBuf,
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        let _ = self.file.unlock();
        let _ = fs::remove_file(&self.path);
    }
}

fn live_path(home: &Home, session: &SessionId, run_id: &str) -> PathBuf {
    let safe: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    home.root()
        .join("live")
        .join(format!("{}.{safe}.lock", session.as_str()))
}

/// Marks run `run_id` of `session` as running until the returned guard is dropped.
pub fn hold_live_run(home: &Home, session: &SessionId, run_id: &str) -> io::Result<LiveRun> {
    let path = live_path(home, session, run_id);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    file.try_lock().map_err(io::Error::other)?;
    Ok(LiveRun { file, path })
}

/// Whether run `run_id` of `session` is running now (some process holds its lock).
pub fn run_is_live(home: &Home, session: &SessionId, run_id: &str) -> bool {
    let Ok(file) = File::open(live_path(home, session, run_id)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

/// The last run of a journal when it has no closing record: its `runId` (none for runs
/// journaled before runs had ids). Reads backwards from the end only as far as that run's
/// `run_start`.
pub fn unclosed_last_run(home: &Home, session: &SessionId) -> io::Result<Option<Option<String>>> {
    let file = match File::open(home.session_path(session)) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let mut lines = ReverseLines::new(file)?;
    while let Some(line) = lines.next_line()? {
        if line.oversized {
            continue;
        }
        match sniff_type(&line.bytes).as_deref() {
            Some("run_end") => return Ok(None),
            Some("run_error") => {
                // Only the run's last error carries a status; an attempt's does not.
                let value: serde_json::Value =
                    serde_json::from_slice(&line.bytes).unwrap_or_default();
                if !value["status"].is_null() {
                    return Ok(None);
                }
            }
            Some("run_start") => {
                let value: serde_json::Value =
                    serde_json::from_slice(&line.bytes).unwrap_or_default();
                return Ok(Some(value["runId"].as_str().map(str::to_string)));
            }
            _ => {}
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().to_path_buf());
        fs::create_dir_all(home.sessions_dir()).unwrap();
        (dir, home)
    }

    #[test]
    fn an_unclosed_run_is_found_and_a_closed_one_is_not() {
        let (_dir, home) = home();
        let id = SessionId::new("20260101-000000-abcdef").unwrap();
        let path = home.session_path(&id);
        let start = r#"{"timestamp":1,"type":"run_start","prompt":"p","runId":"r1"}"#;
        let attempt = r#"{"timestamp":2,"type":"run_error","error":"x","willFallback":true}"#;
        fs::write(&path, format!("{start}\n{attempt}\n{{\"timestamp\":3,\"ty")).unwrap();
        assert_eq!(
            unclosed_last_run(&home, &id).unwrap(),
            Some(Some("r1".into()))
        );
        let closing = r#"{"timestamp":4,"type":"run_error","error":"x","status":"failed"}"#;
        fs::write(&path, format!("{start}\n{closing}\n")).unwrap();
        assert_eq!(unclosed_last_run(&home, &id).unwrap(), None);
        let end = r#"{"timestamp":4,"type":"run_end","summary":"s"}"#;
        fs::write(&path, format!("{start}\n{end}\n{start}\n")).unwrap();
        assert_eq!(
            unclosed_last_run(&home, &id).unwrap(),
            Some(Some("r1".into()))
        );
        fs::remove_file(&path).unwrap();
        assert_eq!(unclosed_last_run(&home, &id).unwrap(), None);
    }

    #[test]
    fn a_held_run_is_live_until_its_guard_goes() {
        let (_dir, home) = home();
        let id = SessionId::new("20260101-000000-abcdef").unwrap();
        assert!(!run_is_live(&home, &id, "r1"));
        let guard = hold_live_run(&home, &id, "r1").unwrap();
        assert!(run_is_live(&home, &id, "r1"));
        assert!(!run_is_live(&home, &id, "r2"));
        drop(guard);
        assert!(!run_is_live(&home, &id, "r1"));
    }
}
