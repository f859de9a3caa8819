//! How a run begins: its session and run ids, whether the session continues earlier runs, and
//! where its records go (the journal file, memory or nowhere). The first record itself is
//! made once the run is set up (`setup::start_record`).

use braincode_config::{Home, JournalWriter, continuity_block, session_has_runs};
use braincode_protocol::{JournalEntry, SessionId};

use super::RunRequest;
use crate::sink::JournalAppend;
use crate::tape::Tape;

/// A fresh, sortable session id: `YYYYMMDD-HHMMSS-xxxxxx`.
pub fn new_session_id() -> SessionId {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let suffix: String = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .take(6)
        .collect();
    // The format only produces [0-9a-f-], which is always a valid id.
    SessionId::new(format!("{stamp}-{suffix}")).unwrap_or_else(|_| fallback_session_id())
}

fn fallback_session_id() -> SessionId {
    match SessionId::new(uuid::Uuid::new_v4().simple().to_string()) {
        Ok(id) => id,
        Err(_) => unreachable_id(),
    }
}

#[allow(clippy::panic)]
fn unreachable_id() -> SessionId {
    // A UUID's simple form is 32 hex digits, which SessionId always accepts.
    panic!("a UUID was rejected as a session id")
}

/// A fresh run id: the seed of the run's context ids (8 hex digits).
pub(super) fn new_run_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// The session journal on disk, as the sink appends to it.
struct JournalFile(JournalWriter);

impl JournalAppend for JournalFile {
    fn append(&mut self, entry: &JournalEntry) -> std::io::Result<()> {
        self.0.append_entry(entry).map_err(std::io::Error::other)
    }
}

/// Whether a run continues earlier runs of its session, decided before the run's own first
/// record lands in the journal.
pub(super) struct History {
    pub(super) continuing: bool,
    /// The continuity block to lead the request with (none for a new session, or when the
    /// prompt references this session with `@@` itself).
    pub(super) block: Option<String>,
    /// The session's handoff so far (empty for a new session): this run's end extends it.
    pub(super) handoff: String,
}

impl History {
    pub(super) fn probe(
        home: &Home,
        request: &RunRequest,
        session_id: &SessionId,
        tape: Option<&Tape>,
    ) -> History {
        // A replay or a resume knows from the journal whether the run continued others.
        let continuing = tape.map_or_else(
            || request.session_id.is_some() && session_has_runs(home, session_id),
            Tape::continues,
        );
        let block = if continuing && !request.prompt.contains(&format!("@@{session_id}")) {
            continuity_block(home, session_id)
        } else {
            None
        };
        let handoff = if continuing {
            braincode_config::journal::read_journal(&home.session_path(session_id))
                .map(|read| braincode_config::journal::build_handoff(&read.entries))
                .unwrap_or_default()
        } else {
            String::new()
        };
        History {
            continuing,
            block,
            handoff,
        }
    }
}

/// The run's journal, opened: where its records go, and what opening it found to say.
pub(super) struct OpenedJournal {
    /// The records' destination (none: the run is not saved).
    pub journal: Option<Box<dyn JournalAppend>>,
    /// Said as the run's first warnings (the journal could not be opened).
    pub warnings: Vec<String>,
    /// Shown live, not journaled (the session's previous run was closed as interrupted).
    pub notices: Vec<String>,
    /// Marks the run live while it is held (its lock file), so nobody closes it meanwhile.
    _live_run: Option<braincode_config::journal::LiveRun>,
}

/// Opens where the run's records go: the session's journal file (closing an earlier run that
/// ended without its closing record, and marking this one live), memory, or nowhere.
pub(super) fn open_journal(
    services: &super::RunServices,
    session_id: &SessionId,
    run_id: &str,
) -> OpenedJournal {
    let mut opened = OpenedJournal {
        journal: None,
        warnings: Vec::new(),
        notices: Vec::new(),
        _live_run: None,
    };
    opened.journal = match &services.journal {
        super::JournalTarget::Session => match JournalWriter::open(&services.home, session_id) {
            Ok(mut writer) => {
                // Not journaled as this run's warning (a replay of this run could not say it
                // again): shown live; the closing record itself says what happened.
                if let Some(notice) = close_unclosed_run(&services.home, session_id, &mut writer)
                    && services.tape.is_none()
                {
                    opened.notices.push(notice);
                }
                opened._live_run =
                    braincode_config::journal::hold_live_run(&services.home, session_id, run_id)
                        .ok();
                Some(Box::new(JournalFile(writer)))
            }
            Err(err) => {
                opened.warnings.push(format!(
                    "the session journal could not be opened ({err}); this run will not be saved"
                ));
                None
            }
        },
        super::JournalTarget::Memory(memory) => Some(Box::new(memory.clone())),
        super::JournalTarget::Disabled => None,
    };
    opened
}

/// Closes the session's last run when it ended without its closing record (its journal could
/// not be written to the end, or its process died) and nobody runs it any more: a `run_error`
/// (status `aborted`, kind `interrupted`) written before this run's `run_start`, so the session
/// lists it as ended and `run --resume` can take it up. Returns the warning that says so.
fn close_unclosed_run(
    home: &braincode_config::Home,
    id: &braincode_protocol::SessionId,
    writer: &mut braincode_config::JournalWriter,
) -> Option<String> {
    // A run journaled before runs had ids cannot be resumed; it is left as it is.
    let run_id = braincode_config::journal::unclosed_last_run(home, id).ok()???;
    if braincode_config::journal::run_is_live(home, id, &run_id) {
        return None;
    }
    let record = braincode_protocol::Record::RunError(braincode_protocol::RunError {
        error: format!(
            "run {run_id} ended without its closing record (its journal could not be written to the end, or its process died); closed when the session was next opened"
        ),
        kind: Some("interrupted".into()),
        attempt: None,
        will_fallback: Some(false),
        duration_ms: None,
        status: Some(braincode_protocol::FinalStatus::Aborted),
    });
    writer.append(&record).ok()?;
    Some(format!(
        "the session's previous run ({run_id}) had no closing record; it is now marked interrupted, and `braincode run --resume {id}` takes it up"
    ))
}
