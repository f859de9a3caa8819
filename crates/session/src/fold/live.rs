//! The live fold: the run's [`RunState`] kept current as its records are emitted (the run's
//! sink applies each one; readers take the state under the same lock).

use std::sync::Mutex;

use braincode_protocol::JournalEntry;

use super::RunState;

/// The live fold: a sink subscriber that applies every record as it is emitted.
#[derive(Debug, Default)]
pub struct LiveState {
    state: Mutex<RunState>,
}

impl LiveState {
    /// A live fold for `session_id`.
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            state: Mutex::new(RunState::new(session_id)),
        }
    }

    /// Reads the state.
    pub fn with<T>(&self, read: impl FnOnce(&RunState) -> T) -> T {
        match self.state.lock() {
            Ok(state) => read(&state),
            Err(poisoned) => read(&poisoned.into_inner()),
        }
    }

    /// Applies one record, as it is emitted.
    pub fn apply(&self, entry: &JournalEntry) {
        match self.state.lock() {
            Ok(mut state) => state.apply(entry),
            Err(poisoned) => poisoned.into_inner().apply(entry),
        }
    }
}
