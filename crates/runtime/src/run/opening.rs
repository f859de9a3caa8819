//! How a run begins: its session and context ids, the journal file, whether the session
//! continues earlier runs, and the `run_start` record written before anything else.

use braincode_config::journal::clip_text;
use braincode_config::{Home, JournalWriter, continuity_block, session_has_runs};
use braincode_protocol::{JournalEntry, Record, RunStart, SessionId};

use super::RunRequest;
use super::record_parts::brain_ref;
use super::state::RunBase;
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
pub(super) struct JournalFile(pub(super) JournalWriter);

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

/// The run's first record: the prompt as the user gave it (clipped to
/// [`JOURNALED_PROMPT_BYTES`](super::finish::JOURNALED_PROMPT_BYTES)), the project, the run id
/// and how it runs (brain, permission, routing), so that a run interrupted at any point is
/// listed with its prompt and can be resumed or replayed.
pub(super) fn opening_record(
    request: &RunRequest,
    run_id: &str,
    tape: Option<&Tape>,
    shared: Option<&RunBase>,
) -> Record {
    Record::RunStart(RunStart {
        prompt: clip_text(&request.prompt, super::finish::JOURNALED_PROMPT_BYTES).into_owned(),
        project_support: Some(shared.map_or_else(
            || braincode_protocol::ProjectSupportSummary {
                root: request.project_root.display().to_string(),
                ..Default::default()
            },
            |shared| shared.support_summary.clone(),
        )),
        model: None,
        attempt: None,
        run_id: Some(run_id.to_string()),
        brain: shared.map(|s| brain_ref(&s.brain_id, &s.brain.name, s.mode)),
        permission: Some(request.permission.as_str().to_string()),
        routing_choice: Some(request.routing.as_str().to_string()),
        resume_of: tape.and_then(Tape::resume_of).map(str::to_string),
        max_tokens: request.budget.max_tokens,
        max_cost_usd: request.budget.max_cost_usd,
    })
}

/// Closes the session's last run when it ended without its closing record (its journal could
/// not be written to the end, or its process died) and nobody runs it any more: a `run_error`
/// (status `aborted`, kind `interrupted`) written before this run's `run_start`, so the session
/// lists it as ended and `run --resume` can take it up. Returns the warning that says so.
pub(super) fn close_unclosed_run(
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
