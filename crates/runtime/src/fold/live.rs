//! The live fold: the run's [`RunState`] kept current as a subscriber of its sink.

use std::sync::Mutex;

use braincode_protocol::RunEvent;

use super::RunState;
use crate::sink::EventSubscriber;

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
}

impl EventSubscriber for LiveState {
    fn on_event(&self, event: &RunEvent) {
        if let RunEvent::Record { entry, .. } = event {
            match self.state.lock() {
                Ok(mut state) => state.apply(entry),
                Err(poisoned) => poisoned.into_inner().apply(entry),
            }
        }
    }
}
