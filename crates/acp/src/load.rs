//! `session/load`: a journaled session's conversation, replayed as the updates its turns
//! sent live (each prompt, the plan, workers, tool calls with their diffs, the answer).

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::SessionUpdate;
use braincode_config::{Home, read_journal};
use braincode_protocol::{Record, SessionId};

use crate::updates::{Telling, Translator, message};

/// The updates that tell session `id` again, in journal order.
pub fn replay_updates(
    home: &Home,
    id: &str,
    project_root: &std::path::Path,
) -> Result<Vec<SessionUpdate>, Error> {
    let session = SessionId::new(id)
        .map_err(|err| Error::invalid_params().data(format!("session id {id:?}: {err}")))?;
    let path = home.session_path(&session);
    if !path.is_file() {
        return Err(Error::new(
            agent_client_protocol::ErrorCode::RESOURCE_NOT_FOUND,
            format!(
                "no journaled session {id} in {} (`braincode sessions list --all` lists them)",
                home.sessions_dir().display()
            ),
        ));
    }
    let read = read_journal(&path).map_err(|err| {
        Error::internal_error().data(format!("{} could not be read: {err}", path.display()))
    })?;
    let mut updates = Vec::new();
    let mut translator = Translator::new(Telling::Again, home.root(), id, project_root);
    for entry in &read.entries {
        if let Record::RunStart(_) = &entry.record {
            // A run's ids are its own: a new translator per run.
            translator = Translator::new(Telling::Again, home.root(), id, project_root);
        }
        updates.extend(translator.record(&entry.record));
        match &entry.record {
            Record::RunEnd(end) => updates.extend(translator.answer(&end.summary)),
            Record::RunError(error) if error.will_fallback != Some(true) => {
                updates.push(message(format!("The run failed: {}", error.error)));
            }
            _ => {}
        }
    }
    Ok(updates)
}
