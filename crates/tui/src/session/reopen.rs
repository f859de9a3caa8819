//! Reopening a session (`--session`, `--continue`, `/resume`): its earlier runs are folded
//! back into the transcript from the journal.

use braincode_config::Home;
use braincode_protocol::{RunEvent, SessionId};
use braincode_session::fold::{RunState, split_runs};

use crate::app::App;

/// Replays `session_id`'s journal into `app`, one turn per run; the lines to show about it.
pub(super) fn show_session(app: &mut App, home: &Home, session_id: &SessionId) -> Vec<String> {
    let path = home.session_path(session_id);
    let mut lines = vec![format!(
        "continuing session {}: new requests see a summary of its earlier runs",
        session_id.short()
    )];
    match braincode_config::journal::read_journal(&path) {
        Ok(read) => {
            let session = session_id.to_string();
            for run in split_runs(&read.entries) {
                let mut state = RunState::new(session.clone());
                for entry in run {
                    state.apply(entry);
                    app.on_event(&RunEvent::Record {
                        session_id: session.clone(),
                        entry: Box::new(entry.clone()),
                    });
                }
                app.on_event(&RunEvent::Final {
                    report: Box::new(state.report()),
                });
            }
            let unread = read.skipped_count + read.malformed_count;
            if unread > 0 {
                lines.push(format!(
                    "{unread} line(s) of its journal could not be read and are not shown"
                ));
            }
        }
        Err(err) => lines.push(format!("its journal could not be read: {err}")),
    }
    lines
}
