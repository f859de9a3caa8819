//! Fleet runs' journals on the journal stream: one subject per session, one message per
//! journal line, published in order as the run writes them; read back for `fleet watch` and
//! `fleet fetch --journal`, and by the worker that resumes a task another worker was running.
//!
//! A resumed run also needs the files the interrupted one had changed. So, before a
//! `file_change` line is published, the content it names (`afterHash`) is put in the result
//! store as `blobs/<sha256>`. A worker that resumes rebuilds the project from a fresh clone
//! and those blobs; a blob that is missing (the file changed again before it was read) makes
//! the resume refuse, never guess.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer;
use async_nats::jetstream::context::PublishErrorKind;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::nats::{Fleet, JOURNAL_PREFIX, JOURNAL_STREAM};

/// How long one read of a journal from the stream may take.
const READ_TIMEOUT: Duration = Duration::from_secs(15);
/// Reads of a journal tried before giving up (500 ms apart).
const READ_ATTEMPTS: u32 = 8;
/// Tries of one journal line before the run is given back to the queue (500 ms apart).
const PUBLISH_ATTEMPTS: u32 = 30;
/// The largest file whose content travels as a blob.
const MAX_BLOB_BYTES: u64 = 8 * 1024 * 1024;

/// The journal subject of `session`.
pub fn subject(session: &str) -> String {
    format!("{JOURNAL_PREFIX}.{session}")
}

/// Publishes the lines a run appends to its journal file. The stream is fenced: each line is
/// published only if the last line of the session on the stream is the one this publisher
/// put there (or read before it started), so two deliveries of a task never interleave lines
/// in one journal: the one that finds another's line there stops.
pub struct Publisher {
    fleet: Fleet,
    session: String,
    /// The delivery's id, in every message id (a retry of a line is stored once; another
    /// delivery's line of the same number is not taken for it).
    attempt: String,
    /// The stream sequence of the session's last line (0: none).
    last_sequence: u64,
    path: PathBuf,
    project: PathBuf,
    /// Bytes of the file already handled.
    offset: u64,
    /// Lines already published (the next line's number).
    lines: u64,
    /// Blobs already stored.
    stored: HashSet<String>,
}

impl Publisher {
    /// A publisher of `path`, the journal of `session` as delivery `attempt` runs it, whose
    /// run works in `project`. It expects the session to have no line on the stream yet.
    pub fn new(
        fleet: Fleet,
        session: &str,
        attempt: &str,
        path: &Path,
        project: &Path,
    ) -> Publisher {
        Publisher {
            fleet,
            session: session.to_string(),
            attempt: attempt.to_string(),
            last_sequence: 0,
            path: path.to_path_buf(),
            project: project.to_path_buf(),
            offset: 0,
            lines: 0,
            stored: HashSet::new(),
        }
    }

    /// The session's last line on the stream is at `sequence` (read before this run started):
    /// the next line goes after it.
    pub fn follow(&mut self, sequence: u64) {
        self.last_sequence = sequence;
    }

    /// The first `lines` lines of the file are on the stream already (an imported journal).
    pub fn skip_imported(&mut self, lines: u64) {
        self.offset = std::fs::metadata(&self.path).map_or(0, |m| m.len());
        self.lines = lines;
    }

    /// Publishes every complete line written since the last call, each acknowledged by the
    /// stream before the next (so the stream holds a prefix of the journal, in order).
    pub async fn pump(&mut self) -> Result<(), PumpError> {
        let new = self.unread();
        let Some(end) = new.iter().rposition(|b| *b == b'\n') else {
            return Ok(());
        };
        let new = new[..=end].to_vec();
        for line in new.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            self.store_blob(line).await.map_err(PumpError::Fleet)?;
            let mut headers = HeaderMap::new();
            headers.insert(
                "Nats-Msg-Id",
                format!("{}:{}:{}", self.session, self.attempt, self.lines).as_str(),
            );
            headers.insert(
                "Nats-Expected-Last-Subject-Sequence",
                self.last_sequence.to_string().as_str(),
            );
            // A cluster between leaders refuses for a few seconds: the same message (the
            // same id, so never twice on the stream) is sent again until it is stored.
            let mut attempt = 0;
            loop {
                let sent = async {
                    self.fleet
                        .js
                        .publish_with_headers(
                            subject(&self.session),
                            headers.clone(),
                            Bytes::copy_from_slice(line),
                        )
                        .await?
                        .await
                }
                .await;
                match sent {
                    Ok(ack) => {
                        self.last_sequence = ack.sequence;
                        break;
                    }
                    Err(err) if err.kind() == PublishErrorKind::WrongLastSequence => {
                        return Err(PumpError::Superseded);
                    }
                    Err(err) if attempt >= PUBLISH_ATTEMPTS => {
                        return Err(PumpError::Fleet(format!("publishing the journal: {err}")));
                    }
                    Err(_) => {
                        attempt += 1;
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
            self.lines += 1;
        }
        self.offset += new.len() as u64;
        Ok(())
    }

    /// What the journal file holds past the part already published (read from there, not
    /// from the start: a long run's journal is read once in all, not once per look).
    fn unread(&self) -> Vec<u8> {
        use std::io::{Read, Seek, SeekFrom};
        let mut bytes = Vec::new();
        if let Ok(mut file) = std::fs::File::open(&self.path)
            && file.seek(SeekFrom::Start(self.offset)).is_ok()
        {
            let _ = file.read_to_end(&mut bytes);
        }
        bytes
    }

    /// For a `file_change` line: the file's content, into the result store, when it still
    /// is the content the line names.
    async fn store_blob(&mut self, line: &[u8]) -> Result<(), String> {
        let Some((path, Some(hash))) = file_change(line) else {
            return Ok(());
        };
        if self.stored.contains(&hash) {
            return Ok(());
        }
        let Ok(bytes) =
            braincode_sandbox::beneath::read_file(&self.project, Path::new(&path), MAX_BLOB_BYTES)
        else {
            return Ok(());
        };
        if sha256_hex(&bytes) != hash {
            return Ok(());
        }
        self.fleet
            .put_object(&format!("blobs/{hash}"), &bytes)
            .await?;
        self.stored.insert(hash);
        Ok(())
    }
}

/// A `file_change` line's path and content hash (`None` hash: the file was deleted).
fn file_change(line: &[u8]) -> Option<(String, Option<String>)> {
    let value: Value = serde_json::from_slice(line).ok()?;
    if value.get("type")?.as_str()? != "file_change" {
        return None;
    }
    let path = value.get("path")?.as_str()?.to_string();
    let hash = value
        .get("afterHash")
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((path, hash))
}

/// Why a journal line was not published.
#[derive(Debug)]
pub enum PumpError {
    /// NATS did not store it (the run goes back to the queue).
    Fleet(String),
    /// Another delivery of the task wrote the session's journal meanwhile: this run stops.
    Superseded,
}

/// SHA-256, lowercase hex.
fn sha256_hex(bytes: &[u8]) -> String {
    braincode_protocol::lower_hex(&Sha256::digest(bytes))
}

/// Every line of `session`'s journal on the stream, in order (empty: none). Retried for a
/// while when the stream is between leaders (a cluster that just lost a server).
pub async fn read(fleet: &Fleet, session: &str) -> Result<Vec<Vec<u8>>, String> {
    read_with_last(fleet, session).await.map(|(lines, _)| lines)
}

/// Like [`read`], with the stream sequence of the last line (0: none), where a run that goes
/// on with the journal publishes after.
pub async fn read_with_last(fleet: &Fleet, session: &str) -> Result<(Vec<Vec<u8>>, u64), String> {
    let mut attempt = 0;
    loop {
        // A consumer can stall without an error while a cluster fails over: each try is
        // bounded, and another is made on a fresh consumer.
        let tried = tokio::time::timeout(READ_TIMEOUT, read_once(fleet, session))
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "reading journal {session} took over {READ_TIMEOUT:?}"
                ))
            });
        match tried {
            Ok(lines) => return Ok(lines),
            Err(why) if attempt >= READ_ATTEMPTS => return Err(why),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

async fn read_once(fleet: &Fleet, session: &str) -> Result<(Vec<Vec<u8>>, u64), String> {
    let stream = fleet
        .js
        .get_stream(JOURNAL_STREAM)
        .await
        .map_err(|err| format!("NATS at {}: the journal stream: {err}", fleet.url))?;
    let last = match stream
        .get_last_raw_message_by_subject(&subject(session))
        .await
    {
        Ok(message) => message.sequence,
        Err(_) => return Ok((Vec::new(), 0)),
    };
    let mut lines = Vec::new();
    let mut messages = follow(fleet, session).await?;
    while let Some((sequence, line)) = messages.next().await.transpose()? {
        lines.push(line);
        if sequence >= last {
            break;
        }
    }
    Ok((lines, last))
}

/// The lines of `session`'s journal from the first, then live as they are published.
pub async fn follow(
    fleet: &Fleet,
    session: &str,
) -> Result<impl futures::Stream<Item = Result<(u64, Vec<u8>), String>>, String> {
    let stream = fleet
        .js
        .get_stream(JOURNAL_STREAM)
        .await
        .map_err(|err| format!("NATS at {}: the journal stream: {err}", fleet.url))?;
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: subject(session),
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|err| format!("NATS at {}: reading journal {session}: {err}", fleet.url))?;
    let messages = consumer
        .messages()
        .await
        .map_err(|err| format!("NATS at {}: reading journal {session}: {err}", fleet.url))?;
    Ok(messages.map(|message| {
        let message = message.map_err(|err| format!("reading the journal: {err}"))?;
        let sequence = message
            .info()
            .map(|info| info.stream_sequence)
            .map_err(|err| format!("reading the journal: {err}"))?;
        Ok((sequence, message.payload.to_vec()))
    }))
}

/// A journal brought from the stream.
#[derive(Debug)]
pub struct Imported {
    /// Its lines (all on the stream already).
    pub lines: u64,
    /// The report of its last run, when that run had ended: the worker that ran it died
    /// after its answer and before recording the task's result, so nothing is run again.
    pub report: Option<braincode_protocol::FinalReport>,
}

/// Brings an interrupted run's journal (its `lines`, read from the stream) into `journal_path`, pointed at
/// `project` (a fresh clone), and writes into `project` the files the run had changed.
/// `Ok(None)`: the stream holds no run of this session (it is started afresh).
pub async fn import(
    fleet: &Fleet,
    lines: &[Vec<u8>],
    journal_path: &Path,
    project: &Path,
) -> Result<Option<Imported>, String> {
    let mut out = Vec::new();
    let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut started = false;
    let mut report = None;
    for line in lines {
        let mut value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(_) => {
                out.extend_from_slice(line);
                out.push(b'\n');
                continue;
            }
        };
        match value.get("type").and_then(Value::as_str) {
            Some("run_start") => {
                started = true;
                report = None;
                // The run goes on in this worker's clone.
                if let Some(root) = value.pointer_mut("/projectSupport/root") {
                    *root = Value::String(project.to_string_lossy().into_owned());
                }
            }
            Some("final_report") => {
                report = value
                    .get("finalReport")
                    .and_then(|r| serde_json::from_value(r.clone()).ok());
            }
            Some("file_change") => {
                if let Some((path, hash)) = file_change(line) {
                    files.insert(path, hash);
                }
            }
            _ => {}
        }
        let text = serde_json::to_vec(&value).map_err(|err| err.to_string())?;
        out.extend_from_slice(&text);
        out.push(b'\n');
    }
    if !started {
        return Ok(None);
    }
    for (path, hash) in &files {
        let relative = Path::new(path);
        match hash {
            None => braincode_sandbox::beneath::remove_file(project, relative)
                .map_err(|err| format!("{path}: {err}"))?,
            Some(hash) => {
                let bytes = fleet
                    .get_object(&format!("blobs/{hash}"))
                    .await?
                    .ok_or_else(|| format!("the content {path} had is not in the result store"))?;
                if sha256_hex(&bytes) != *hash {
                    return Err(format!(
                        "the stored content of {path} does not match its hash"
                    ));
                }
                braincode_sandbox::beneath::write_file(project, relative, &bytes, 0o644)
                    .map_err(|err| format!("{path}: {err}"))?;
            }
        }
    }
    if let Some(dir) = journal_path.parent() {
        std::fs::create_dir_all(dir).map_err(|err| format!("{}: {err}", dir.display()))?;
    }
    let temp = journal_path.with_extension("jsonl.import");
    std::fs::write(&temp, &out).map_err(|err| format!("{}: {err}", temp.display()))?;
    std::fs::rename(&temp, journal_path)
        .map_err(|err| format!("{}: {err}", journal_path.display()))?;
    Ok(Some(Imported {
        lines: lines.len() as u64,
        report,
    }))
}

/// What [`mirror`] copied.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Mirrored {
    /// Sessions written.
    pub sessions: usize,
    /// Journal lines written.
    pub lines: u64,
}

/// Copies every fleet journal on the stream into `sessions_dir` (one `<session>.jsonl` each,
/// rewritten from its first line), so `braincode sessions`, `replay` and the control panel of
/// this machine see fleet runs. With `follow`, goes on with new lines as they are published
/// (until the future is dropped); otherwise stops once it has caught up.
pub async fn mirror(fleet: &Fleet, sessions_dir: &Path, follow: bool) -> Result<Mirrored, String> {
    use std::io::Write;
    let mut stream = fleet
        .js
        .get_stream(JOURNAL_STREAM)
        .await
        .map_err(|err| format!("NATS at {}: the journal stream: {err}", fleet.url))?;
    let last = stream
        .info()
        .await
        .map_err(|err| format!("NATS at {}: the journal stream: {err}", fleet.url))?
        .state
        .last_sequence;
    let mut done = Mirrored::default();
    if last == 0 && !follow {
        return Ok(done);
    }
    std::fs::create_dir_all(sessions_dir)
        .map_err(|err| format!("{}: {err}", sessions_dir.display()))?;
    let consumer = stream
        .create_consumer(consumer::pull::OrderedConfig {
            filter_subject: format!("{JOURNAL_PREFIX}.>"),
            deliver_policy: consumer::DeliverPolicy::All,
            ..Default::default()
        })
        .await
        .map_err(|err| format!("NATS at {}: reading the journals: {err}", fleet.url))?;
    let mut messages = consumer
        .messages()
        .await
        .map_err(|err| format!("NATS at {}: reading the journals: {err}", fleet.url))?;
    let mut files: std::collections::HashMap<String, std::fs::File> = Default::default();
    while let Some(message) = messages.next().await {
        let message = message.map_err(|err| format!("reading the journals: {err}"))?;
        let sequence = message.info().map(|i| i.stream_sequence).unwrap_or(0);
        let session = message
            .subject
            .strip_prefix(&format!("{JOURNAL_PREFIX}."))
            .filter(|s| crate::task::valid_task_id(s))
            .map(str::to_string);
        if let Some(session) = session {
            if !files.contains_key(&session) {
                let path = sessions_dir.join(format!("{session}.jsonl"));
                let file = std::fs::File::create(&path)
                    .map_err(|err| format!("{}: {err}", path.display()))?;
                files.insert(session.clone(), file);
                done.sessions += 1;
            }
            if let Some(file) = files.get_mut(&session) {
                file.write_all(&message.payload)
                    .and_then(|()| file.write_all(b"\n"))
                    .map_err(|err| format!("{session}: {err}"))?;
                done.lines += 1;
            }
        }
        if !follow && sequence >= last {
            break;
        }
    }
    Ok(done)
}
