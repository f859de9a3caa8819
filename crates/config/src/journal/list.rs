//! Listing sessions and turning an id prefix into one session.
//!
//! Listing reads only the head of each journal (for the first `run_start`) and its tail (for
//! the status of the latest run), so a directory of large journals lists quickly.

use std::fs::{self, File};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use braincode_protocol::{Record, RunStart, SessionId};
use serde::Serialize;

use super::reader::parse_journal_line;
use super::scan::{ReverseLines, read_line_capped, sniff_type};
use super::{SessionStatus, status_from_record};
use crate::text::{clip, one_line};
use crate::{Home, JournalError, LookupError};

/// How far into a journal listing and snapshots look for the first `run_start`.
pub(crate) const HEAD_SCAN_BYTES: u64 = 4 * 1024 * 1024;
/// How far back from the end listing looks for the latest run's status.
const LIST_TAIL_SCAN_BYTES: u64 = 1024 * 1024;
/// Journals up to this size get an exact run count; larger ones count what the head and tail
/// windows show (`runs_exact: false`).
const EXACT_RUN_COUNT_BYTES: u64 = 4 * 1024 * 1024;
/// Characters of the first prompt shown in a listing.
pub const PROMPT_PREVIEW_CHARS: usize = 80;

/// Options of [`list_sessions`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListOptions {
    /// At most this many sessions (default 25).
    pub limit: usize,
    /// Only sessions whose first run's project root is this directory or one of its
    /// ancestors.
    pub project: Option<PathBuf>,
    /// Every project (ignores `project`).
    pub all: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            limit: 25,
            project: None,
            all: false,
        }
    }
}

/// One session in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// Session id.
    pub id: SessionId,
    /// Status of the latest run.
    pub status: SessionStatus,
    /// First `run_start` prompt, on one line, clipped to 80 characters.
    pub prompt_preview: Option<String>,
    /// Project root of the first run (`run_start.projectSupport.root`).
    pub project_root: Option<String>,
    /// File modification time, epoch milliseconds.
    pub updated_at: i64,
    /// Timestamp of the first record, epoch milliseconds.
    pub started_at: Option<i64>,
    /// Number of runs (first attempts of `run_start`).
    pub runs: usize,
    /// Whether `runs` counts the whole file (false: only the head and tail were read).
    pub runs_exact: bool,
    /// Journal size in bytes.
    pub bytes: u64,
    /// The journal file.
    pub path: PathBuf,
}

/// What the start of a journal says.
#[derive(Debug, Default)]
pub(crate) struct HeadInfo {
    pub first_timestamp: Option<i64>,
    pub first_run_start: Option<RunStart>,
    pub runs: usize,
    pub reached_end: bool,
    pub bytes: u64,
}

fn is_first_attempt(start: &RunStart) -> bool {
    start.attempt.is_none_or(|a| a <= 1)
}

/// Reads lines from the start of `path` until the first `run_start` (or, with `count_runs`,
/// the end) or `budget` bytes.
pub(crate) fn scan_head(path: &Path, budget: u64, count_runs: bool) -> std::io::Result<HeadInfo> {
    let mut reader = BufReader::with_capacity(64 * 1024, File::open(path)?);
    let mut info = HeadInfo::default();
    let mut buf = Vec::new();
    let mut consumed = 0u64;
    loop {
        buf.clear();
        let (read, cut) = read_line_capped(&mut reader, &mut buf, super::MAX_LINE_BYTES)?;
        if read == 0 {
            info.reached_end = true;
            break;
        }
        consumed += read as u64;
        info.bytes = consumed;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let wanted = !cut
            && (info.first_timestamp.is_none() || sniff_type(line).as_deref() == Some("run_start"));
        if wanted && let Ok(Some(entry)) = parse_journal_line(line) {
            info.first_timestamp.get_or_insert(entry.timestamp);
            if let Record::RunStart(start) = entry.record {
                if is_first_attempt(&start) {
                    info.runs += 1;
                }
                if info.first_run_start.is_none() {
                    info.first_run_start = Some(start);
                    if !count_runs {
                        break;
                    }
                }
            }
        }
        if consumed >= budget {
            break;
        }
    }
    Ok(info)
}

/// Status of the latest run and the run starts seen, reading back at most `budget` bytes.
pub(crate) fn scan_tail_status(
    path: &Path,
    budget: u64,
) -> std::io::Result<(SessionStatus, usize, bool)> {
    let mut lines = ReverseLines::new(File::open(path)?)?;
    let mut status = None;
    let mut runs = 0;
    while let Some(line) = lines.next_line()? {
        if lines.bytes_read > budget && status.is_some() {
            break;
        }
        let ty = sniff_type(&line.bytes);
        if !matches!(ty.as_deref(), Some("run_start" | "run_end" | "run_error")) {
            if lines.bytes_read > budget {
                break;
            }
            continue;
        }
        if let Ok(Some(entry)) = parse_journal_line(&line.bytes) {
            if let Record::RunStart(start) = &entry.record
                && is_first_attempt(start)
            {
                runs += 1;
            }
            if status.is_none() {
                status = status_from_record(&entry.record);
            }
        }
        if lines.bytes_read > budget {
            break;
        }
    }
    Ok((
        status.unwrap_or(SessionStatus::Incomplete),
        runs,
        lines.at_start(),
    ))
}

/// Session ids and journal paths in `sessions/`, with their modification times, newest first.
pub(super) fn session_files(
    home: &Home,
) -> Result<Vec<(SessionId, PathBuf, i64, u64)>, LookupError> {
    let dir = home.sessions_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LookupError::Io { path: dir, source }),
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".jsonl"))
        else {
            continue;
        };
        let Ok(id) = SessionId::new(stem) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        files.push((id, path, mtime, meta.len()));
    }
    files.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    Ok(files)
}

/// Whether a session recorded with project root `recorded` belongs to directory `wanted`:
/// the root is `wanted` itself or one of its ancestors (symlinks resolved when possible).
fn root_covers(recorded: &str, wanted: &Path) -> bool {
    let recorded = Path::new(recorded);
    if !recorded.is_absolute() {
        return false;
    }
    if wanted.starts_with(recorded) {
        return true;
    }
    match (recorded.canonicalize(), wanted.canonicalize()) {
        (Ok(root), Ok(dir)) => dir.starts_with(root),
        _ => false,
    }
}

/// Describes one journal.
pub(crate) fn session_info(
    id: SessionId,
    path: PathBuf,
    updated_at: i64,
    bytes: u64,
) -> Result<SessionInfo, JournalError> {
    let io_err = |source| JournalError::Io {
        action: "read",
        path: path.clone(),
        source,
    };
    let exact = bytes <= EXACT_RUN_COUNT_BYTES;
    let head =
        scan_head(&path, if exact { u64::MAX } else { HEAD_SCAN_BYTES }, exact).map_err(io_err)?;
    let (status, tail_runs, tail_reached_start) =
        scan_tail_status(&path, LIST_TAIL_SCAN_BYTES).map_err(io_err)?;
    let runs = if exact {
        head.runs
    } else if tail_reached_start {
        tail_runs
    } else {
        head.runs.max(tail_runs)
    };
    let first = head.first_run_start;
    Ok(SessionInfo {
        id,
        status,
        prompt_preview: first
            .as_ref()
            .map(|s| clip(&one_line(&s.prompt), PROMPT_PREVIEW_CHARS)),
        project_root: first
            .as_ref()
            .and_then(|s| s.project_support.as_ref())
            .map(|p| p.root.clone()),
        updated_at,
        started_at: head.first_timestamp,
        runs,
        runs_exact: exact || tail_reached_start,
        bytes,
        path,
    })
}

/// Sessions, newest first (by file modification time). Without `all`, only sessions whose
/// first run's project root is `project` or an ancestor of it (when `project` is given).
pub fn list_sessions(home: &Home, options: &ListOptions) -> Result<Vec<SessionInfo>, JournalError> {
    let files = session_files(home).map_err(|err| match err {
        LookupError::Io { path, source } => JournalError::Io {
            action: "list",
            path,
            source,
        },
        other => JournalError::Io {
            action: "list",
            path: home.sessions_dir(),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    let project = options.project.as_ref().filter(|_| !options.all);
    let mut out = Vec::new();
    for (id, path, mtime, bytes) in files {
        if out.len() >= options.limit {
            break;
        }
        let info = match session_info(id, path, mtime, bytes) {
            Ok(info) => info,
            // A journal removed or unreadable mid-listing is left out, not fatal.
            Err(err) => {
                tracing::warn!("{err}");
                continue;
            }
        };
        if let Some(project) = project
            && !info
                .project_root
                .as_deref()
                .is_some_and(|root| root_covers(root, project))
        {
            continue;
        }
        out.push(info);
    }
    Ok(out)
}

/// Turns a session id, its short form ([`SessionId::short`]) or a unique prefix of either
/// into the session id.
pub fn resolve_session(home: &Home, id_or_prefix: &str) -> Result<SessionId, LookupError> {
    let query = id_or_prefix.trim();
    let exact = SessionId::new(query).map_err(|_| LookupError::InvalidId {
        query: query.to_string(),
    })?;
    if home.session_path(&exact).is_file() {
        return Ok(exact);
    }
    let matches: Vec<SessionId> = session_files(home)?
        .into_iter()
        .map(|(id, ..)| id)
        .filter(|id| {
            id.as_str().starts_with(query)
                || id.short().starts_with(query)
                // The `HHMMSS-xxxxxx` tail earlier versions showed in the status bar.
                || (query.contains('-') && id.as_str().ends_with(&format!("-{query}")))
        })
        .collect();
    match matches.len() {
        0 => Err(LookupError::NotFound {
            query: query.to_string(),
        }),
        1 => Ok(matches.into_iter().next().unwrap_or(exact)),
        total => Err(LookupError::Ambiguous {
            query: query.to_string(),
            total,
            candidates: matches
                .iter()
                .take(10)
                .map(|id| id.as_str().to_string())
                .collect(),
        }),
    }
}
