//! Shared helpers for the brain integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use braincode_brain::{BrainModel, DEFAULT_BRAIN_ID, default_brains, select_brain};

/// The default (local) brain.
pub fn default_brain() -> BrainModel {
    select_brain(&default_brains(), DEFAULT_BRAIN_ID).unwrap()
}

/// The default brain with `maxParallelAgents` raised so no mode cap applies.
pub fn uncapped_brain() -> BrainModel {
    let mut brain = default_brain();
    brain.routing.max_parallel_agents = 16;
    brain
}

/// A counter-based id source: `id-0`, `id-1`, …
pub fn counter() -> impl FnMut() -> String {
    let mut next = 0;
    move || {
        let id = format!("id-{next}");
        next += 1;
        id
    }
}
