//! A run again, from its journal: `braincode replay` (everything from the journal, compared
//! record by record) and `braincode run --resume` (what finished is reused, the rest runs).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use braincode_config::Home;
use braincode_config::journal::read_journal;
use braincode_llm::{ChatRequest, ErrorKind, ModelClient, ModelError, ModelStream};
use braincode_protocol::{
    FinalReport, FinalStatus, JournalEntry, ModelDefinition, Record, RunStart, SessionId,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::approval::PermissionMode;
use crate::config::{LoadOptions, RunConfig};
use crate::fold::RunState;
use crate::models::ClientOverride;
use crate::run::{JournalTarget, RoutingChoice, RunRequest, RunServices, StartError, run_loaded};
use crate::sink::MemoryJournal;
use crate::tape::{Tape, TapeMode, comparable};

/// Why a journaled run cannot be replayed or resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The journal could not be read.
    #[error("the journal of session {session} could not be read: {reason}")]
    Unreadable {
        /// The session.
        session: String,
        /// Why.
        reason: String,
    },
    /// The session has no run (or not the one asked for).
    #[error("session {session} has no run {which}")]
    NoSuchRun {
        /// The session.
        session: String,
        /// Which run was asked for, as the message says it.
        which: String,
    },
    /// The run was journaled before runs had ids (it cannot be keyed).
    #[error(
        "run {index} of session {session} was journaled by an older version without a run id; it cannot be replayed or resumed"
    )]
    NoRunId {
        /// The session.
        session: String,
        /// 1-based run number.
        index: usize,
    },
    /// `--resume` of a run that answered.
    #[error(
        "run {index} of session {session} already ended ({status}); only an interrupted or cancelled run can be resumed (continue the conversation with `braincode run --session {session}`)"
    )]
    Finished {
        /// The session.
        session: String,
        /// 1-based run number.
        index: usize,
        /// How it ended.
        status: String,
    },
}

/// One run of a session's journal, ready to run again.
#[derive(Debug, Clone)]
pub struct JournaledRun {
    /// 1-based number of the run in its session.
    pub index: usize,
    /// Its run id.
    pub run_id: String,
    /// The request it ran, rebuilt from its `run_start`.
    pub request: RunRequest,
    /// How it ended (none: interrupted).
    pub status: Option<FinalStatus>,
    /// Its records (from its `run_start` to the next run's).
    pub entries: Vec<JournalEntry>,
    /// Index of its `run_start` in `session_entries`.
    pub first: usize,
    /// Every record of the session (the tape is built from all runs with this run id).
    pub session_entries: Vec<JournalEntry>,
}

impl JournaledRun {
    /// Reads run `which` (1-based; `None` = the latest) of `session`.
    pub fn load(
        home: &Home,
        session: &SessionId,
        which: Option<usize>,
    ) -> Result<JournaledRun, ReplayError> {
        let read =
            read_journal(&home.session_path(session)).map_err(|err| ReplayError::Unreadable {
                session: session.to_string(),
                reason: err.to_string(),
            })?;
        Self::from_entries(session, read.entries, which)
    }

    /// The run of `session` that `run --resume` takes up: the latest run whose latest attempt
    /// did not answer (interrupted, cancelled, or closed on a later open because its journal
    /// was cut) — not only the session's last run, so a run cut by a full disk can still be
    /// resumed after later runs of the session ended. When none can be, the last run (whose
    /// [`JournaledRun::check_resumable`] then says why).
    pub fn load_resumable(home: &Home, session: &SessionId) -> Result<JournaledRun, ReplayError> {
        let read =
            read_journal(&home.session_path(session)).map_err(|err| ReplayError::Unreadable {
                session: session.to_string(),
                reason: err.to_string(),
            })?;
        let starts: Vec<(usize, Option<&str>)> = (read.entries.iter().enumerate())
            .filter_map(|(i, e)| match &e.record {
                Record::RunStart(start) => Some((i, start.run_id.as_deref())),
                _ => None,
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut pick = None;
        for (n, (first, run_id)) in starts.iter().enumerate().rev() {
            let Some(run_id) = run_id else { continue };
            if !seen.insert(*run_id) {
                continue;
            }
            let end = starts.get(n + 1).map_or(read.entries.len(), |(i, _)| *i);
            let mut state = RunState::new(session.to_string());
            for entry in &read.entries[*first..end] {
                state.apply(entry);
            }
            let status = state.is_finished().then(|| state.report().status);
            if matches!(status, None | Some(FinalStatus::Aborted)) {
                pick = Some(n + 1);
                break;
            }
        }
        Self::from_entries(session, read.entries, pick)
    }

    /// Run `which` of a session's records (1-based, in journal order; `None` = the last one,
    /// which may itself be a resume: its tape then holds every earlier run of the same id).
    pub fn from_entries(
        session: &SessionId,
        entries: Vec<JournalEntry>,
        which: Option<usize>,
    ) -> Result<JournaledRun, ReplayError> {
        let starts: Vec<(usize, &RunStart)> = entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.record {
                Record::RunStart(start) => Some((i, start)),
                _ => None,
            })
            .collect();
        let no_run = || {
            ReplayError::NoSuchRun {
            session: session.to_string(),
            which: which.map_or_else(
                || "yet (its journal holds no run_start)".to_string(),
                |n| format!("number {n} (runs are numbered from 1; `braincode sessions show` lists them)"),
            ),
        }
        };
        let position = match which {
            None => starts.len().checked_sub(1).ok_or_else(no_run)?,
            Some(n) if n >= 1 && n <= starts.len() => n - 1,
            Some(_) => return Err(no_run()),
        };
        let (first, start) = starts[position];
        let end = starts
            .get(position + 1)
            .map_or(entries.len(), |(index, _)| *index);
        let run_id = start.run_id.clone().ok_or(ReplayError::NoRunId {
            session: session.to_string(),
            index: position + 1,
        })?;
        let mut state = RunState::new(session.to_string());
        for entry in &entries[first..end] {
            state.apply(entry);
        }
        let status = state.is_finished().then(|| state.report().status);
        let request = RunRequest {
            session_id: Some(session.clone()),
            brain_id: start.brain.as_ref().map(|b| b.id.clone()),
            mode: start.brain.as_ref().map(|b| b.mode),
            permission: start
                .permission
                .as_deref()
                .and_then(PermissionMode::from_name)
                .unwrap_or(PermissionMode::ReadOnly),
            // The budget the run had: a budget-stopped run stops at the same record again.
            budget: crate::run::RunBudget {
                max_tokens: start.max_tokens,
                max_cost_usd: start.max_cost_usd,
            },
            routing: start
                .routing_choice
                .as_deref()
                .and_then(RoutingChoice::from_name)
                .unwrap_or_default(),
            ..RunRequest::new(
                start.prompt.clone(),
                start
                    .project_support
                    .as_ref()
                    .map_or_else(PathBuf::new, |s| PathBuf::from(&s.root)),
            )
        };
        Ok(JournaledRun {
            index: position + 1,
            run_id,
            request,
            status,
            entries: entries[first..end].to_vec(),
            first,
            session_entries: entries,
        })
    }

    /// The error of a run that never started — its `run_start` names no brain (its
    /// configuration, or the model it needed, was missing) and it planned nothing before its
    /// failed `run_error` — which its replay fails with again, whatever the home holds now.
    pub fn refused_start(&self) -> Option<String> {
        let mut records = self.entries.iter().map(|e| &e.record);
        if !matches!(records.next(), Some(Record::RunStart(start)) if start.brain.is_none()) {
            return None;
        }
        let mut error = None;
        for record in records {
            match record {
                Record::Routing(_) | Record::WorkerStart(_) => return None,
                Record::RunError(end) if end.status == Some(FinalStatus::Failed) => {
                    error = Some(end.error.clone());
                }
                _ => {}
            }
        }
        error
    }

    /// Why a replay of this run cannot be exact, if it cannot: the journal had to clip the
    /// prompt or a model reply to fit a line.
    pub fn inexact_reason(&self) -> Option<String> {
        let clipped_prompt = self.entries.iter().any(|e| {
            matches!(&e.record, Record::RunStart(start) if braincode_config::journal::is_clipped(&start.prompt))
        });
        if clipped_prompt {
            return Some("the journal holds the prompt clipped to fit a line".into());
        }
        let stopped_by_guard = self.entries.iter().any(|e| {
            matches!(&e.record, Record::RunError(error) if error.error.starts_with(crate::protect::PROTECTED_CHANGED))
        });
        if stopped_by_guard {
            return Some(
                "the run was stopped by a change to protected paths, which a replay (running no command) cannot meet again"
                    .into(),
            );
        }
        let clipped_reply = self
            .session_entries
            .iter()
            .any(|e| matches!(&e.record, Record::ModelReply(reply) if reply.clipped));
        clipped_reply.then(|| "the journal holds a model reply clipped to fit a line".into())
    }

    /// The tape of this run (its records and those of earlier resumes of it).
    pub fn tape(&self, mode: TapeMode) -> Tape {
        let target = (mode == TapeMode::Replay).then_some(self.first);
        Tape::from_entries(mode, &self.run_id, &self.session_entries, target)
    }

    /// Checks that this run can be resumed: it did not answer (no terminal record, or it was
    /// cancelled).
    pub fn check_resumable(&self, session: &SessionId) -> Result<(), ReplayError> {
        match self.status {
            None | Some(FinalStatus::Aborted) => Ok(()),
            Some(status) => Err(ReplayError::Finished {
                session: session.to_string(),
                index: self.index,
                status: status.as_str().to_string(),
            }),
        }
    }
}

/// Model clients for a replay: every model is "available" without credentials, and none is
/// ever called (a call the journal cannot answer is a divergence before it gets here).
pub struct ReplayClients;

impl ClientOverride for ReplayClients {
    fn client(&self, definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(Arc::new(NoModel(definition.id.clone())))
    }

    fn supplies(&self, _definition: &ModelDefinition) -> bool {
        true
    }
}

struct NoModel(String);

#[async_trait]
impl ModelClient for NoModel {
    async fn stream(
        &self,
        _request: ChatRequest,
        _cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        Err(ModelError::new(
            ErrorKind::Config,
            format!("replay never calls a model ({} was asked)", self.0),
        )
        .with_model(self.0.clone()))
    }
}

/// The first difference between a run's records and its replay's.
#[derive(Debug, Clone, PartialEq)]
pub struct Divergence {
    /// 1-based position of the differing record in the original run (or in the replay, when
    /// the replay has a record the original lacks).
    pub position: usize,
    /// The stream the record belongs to (`run`, or one agent or tool call).
    pub lane: String,
    /// The original record (none: the replay has an extra one).
    pub expected: Option<Value>,
    /// The replayed record (none: the replay lacks it).
    pub actual: Option<Value>,
}

/// What a replay found.
#[derive(Debug, Clone)]
pub struct ReplayOutcome {
    /// The replay's report (the fold of its records).
    pub report: FinalReport,
    /// Records of the original run.
    pub original_records: usize,
    /// Records of the replay.
    pub replayed_records: usize,
    /// The first difference, or none: identical.
    pub divergence: Option<Divergence>,
    /// Why the comparison cannot be exact (clipped journal lines), if so.
    pub inexact: Option<String>,
}

/// Replays run `which` of `session` with no network, no model, no tool and no hook: every
/// reply and result comes from the journal; the records are compared with the original's.
pub async fn replay(
    home: &Home,
    session: &SessionId,
    which: Option<usize>,
    mut services: RunServices,
) -> Result<ReplayOutcome, ReplayError> {
    let journaled = JournaledRun::load(home, session, which)?;
    let memory = MemoryJournal::default();
    services.journal = JournalTarget::Memory(memory.clone());
    services.tape = Some(Arc::new(journaled.tape(TapeMode::Replay)));
    services.client_override = Some(Arc::new(ReplayClients));
    services.approver = None;
    // A run that could not start fails the same way again, whatever the home holds now.
    let loaded = match journaled.refused_start() {
        Some(reason) => Err(StartError::Refused(reason)),
        None => RunConfig::load(&services.home, &LoadOptions::from(&journaled.request))
            .map_err(StartError::from),
    };
    let report = Box::pin(run_loaded(journaled.request.clone(), services, loaded)).await;
    let replayed = memory.entries();
    Ok(ReplayOutcome {
        report,
        original_records: journaled.entries.len(),
        replayed_records: replayed.len(),
        divergence: first_divergence(&journaled.entries, &replayed),
        inexact: journaled.inexact_reason(),
    })
}

/// Records that depend on the transport, not on the orchestration: a replay makes no call,
/// so it has none of them (nor the network connections of commands it does not run). An
/// `undo` is appended later by `braincode undo`, not by the run.
fn is_transport_record(record: &Record) -> bool {
    matches!(
        record,
        Record::ModelRetry(_) | Record::Undo(_) | Record::NetworkAccess(_)
    )
}

/// The stream a record belongs to. Agents run concurrently, so records of different
/// agents (and of different tool calls of one turn) may interleave differently from run to
/// run; within one stream the order is the orchestration's.
fn lane(record: &Record) -> String {
    let context = |agent_session: &str| match agent_session.rsplit_once('-') {
        Some((context, attempt)) if attempt.bytes().all(|b| b.is_ascii_digit()) => {
            context.to_string()
        }
        _ => agent_session.to_string(),
    };
    match record {
        Record::ModelReply(reply) => format!("agent {}", context(&reply.agent_session_id)),
        Record::TokenUsage(usage) => format!(
            "agent {}",
            context(usage.agent_session_id.as_deref().unwrap_or_default())
        ),
        Record::ToolApprovalDecision(tool) => format!("tool {}", tool.tool_call_id),
        Record::ToolExecutionSummary(tool) => format!("tool {}", tool.tool_call_id),
        Record::WorkerStart(start) => match &start.handoff {
            Some(handoff) => format!("agent {}", handoff.task.id),
            None => format!(
                "agent {}",
                context(start.agent_session_id.as_deref().unwrap_or_default())
            ),
        },
        Record::WorkerEnd(end) => match &end.result {
            Some(result) => format!("agent {}", result.task_id),
            None => format!("worker {}", end.worker),
        },
        Record::WorkerError(error) => format!("worker {}", error.worker),
        Record::AgentMessage(message) => format!("worker {}", message.worker),
        Record::HookSubagentStart(hook) | Record::HookSubagentStop(hook) => {
            format!("hook {}", hook.matcher.as_deref().unwrap_or_default())
        }
        Record::HookPreToolUse(hook)
        | Record::HookPermissionRequest(hook)
        | Record::HookPostToolUse(hook) => {
            format!("tool {}", hook.tool_call_id.as_deref().unwrap_or_default())
        }
        Record::HookPreCompact(hook) | Record::HookPostCompact(hook) => format!(
            "agent {}",
            context(hook.agent_session_id.as_deref().unwrap_or_default())
        ),
        Record::DynamicDispatch(dispatch) => format!("dispatch {}", dispatch.context_id),
        // Servers settle in the background, at any point of the run.
        Record::McpConnect(_) => "mcp".to_string(),
        _ => "run".to_string(),
    }
}

/// The first record where `replayed` differs from `original`, comparing each stream in
/// order and ignoring wall-clock fields.
pub fn first_divergence(
    original: &[JournalEntry],
    replayed: &[JournalEntry],
) -> Option<Divergence> {
    let lanes = |entries: &[JournalEntry]| {
        let mut lanes: BTreeMap<String, Vec<(usize, Value)>> = BTreeMap::new();
        for (index, entry) in entries.iter().enumerate() {
            if is_transport_record(&entry.record) {
                continue;
            }
            lanes
                .entry(lane(&entry.record))
                .or_default()
                .push((index + 1, comparable(&entry.record)));
        }
        lanes
    };
    let expected = lanes(original);
    let actual = lanes(replayed);
    let mut first: Option<Divergence> = None;
    let mut consider = |candidate: Divergence| {
        if first
            .as_ref()
            .is_none_or(|current| candidate.position < current.position)
        {
            first = Some(candidate);
        }
    };
    for (name, records) in &expected {
        let other = actual.get(name).map_or(&[][..], Vec::as_slice);
        for (n, (position, value)) in records.iter().enumerate() {
            match other.get(n) {
                Some((_, replayed)) if replayed == value => {}
                replayed => {
                    consider(Divergence {
                        position: *position,
                        lane: name.clone(),
                        expected: Some(value.clone()),
                        actual: replayed.map(|(_, v)| v.clone()),
                    });
                    break;
                }
            }
        }
        if let Some((position, extra)) = other.get(records.len()) {
            consider(Divergence {
                position: *position,
                lane: name.clone(),
                expected: None,
                actual: Some(extra.clone()),
            });
        }
    }
    for (name, records) in &actual {
        if !expected.contains_key(name)
            && let Some((position, extra)) = records.first()
        {
            consider(Divergence {
                position: *position,
                lane: name.clone(),
                expected: None,
                actual: Some(extra.clone()),
            });
        }
    }
    first
}
