//! The plan's todos as the run moves them: each change journaled with every todo after it.

use braincode_protocol::{Record, Role, TaskStatus, TodoUpdate, WorkerPhase};

use super::state;

/// Why a read-only run's todo that asked for a change is not ticked.
pub const READ_ONLY_UNDONE: &str = "read-only: nothing was changed; allow edits (Shift+Tab in the TUI, or --allow-edits) and ask again";

/// Why a todo that asked for a change is not ticked when the run changed no file.
pub const NO_CHANGE_MADE: &str =
    "no file was changed: the answer may describe the change, but it was not made";

/// Journals a todo change with every todo after it (computed from the fold).
pub(crate) fn todo_update(
    shared: &state::RunShared,
    phase: WorkerPhase,
    role: Role,
    ids: &[String],
    status: TaskStatus,
    summary: Option<&str>,
    error: Option<&str>,
) {
    let todos = shared
        .live
        .with(|state| state.todos_after(ids, status, summary, error));
    shared.sink.record(Record::TodoUpdate(TodoUpdate {
        phase,
        role: Some(role),
        status,
        todo_ids: ids.to_vec(),
        todos,
        summary: summary.map(|s| braincode_context::clip_chars(s, 600)),
        error: error.map(str::to_string),
    }));
}
