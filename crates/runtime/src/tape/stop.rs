//! A replay of a run that stopped at its budget: where it stopped, and how the replay gets
//! there whatever the order parallel agents are served in.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Tape;

/// Where the replayed run stopped at its budget: the `token_usage` record that crossed it
/// (its agent session and turn) and the reason journaled right after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetStop {
    /// The crossing call's agent session.
    pub agent_session_id: String,
    /// The crossing record's `turnId`.
    pub turn_id: String,
    /// The journaled reason (`budget reached: …`).
    pub reason: String,
}

/// How long a replay of a budget-stopped run waits, at a call its journal does not have,
/// for the rest of the journal to be served before it stops anyway (a divergence, then).
const STOP_WATCHDOG: Duration = Duration::from_secs(20);

/// A replay of a run that stopped at its budget: the live run was cut wherever each agent
/// was when the crossing call cancelled it, so the replay serves every reply and result the
/// journal has, parks every call it does not have, and stops the run once the crossing was
/// replayed and nothing journaled is left to serve — however the agents interleave.
#[derive(Debug)]
pub(super) struct StopReplay {
    pub(super) stop: BudgetStop,
    /// The run's own served items (model replies, tool results) the journal has.
    pub(super) own_items: HashSet<String>,
    pub(super) served: Mutex<HashSet<String>>,
    pub(super) reached: AtomicBool,
    pub(super) cancel: OnceLock<CancellationToken>,
}

impl StopReplay {
    pub(super) fn served(&self, key: String) {
        if self.own_items.contains(&key) {
            lock(&self.served).insert(key);
            self.maybe_stop();
        }
    }

    fn maybe_stop(&self) {
        if self.reached.load(Ordering::SeqCst)
            && lock(&self.served).len() >= self.own_items.len()
            && let Some(cancel) = self.cancel.get()
        {
            cancel.cancel();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

pub(super) fn reply_key(agent_session: &str, call: u32) -> String {
    format!("reply {agent_session} {call}")
}

pub(super) fn tool_key(agent_session: &str, call_id: &str) -> String {
    format!("tool {agent_session} {call_id}")
}

impl Tape {
    /// Where the replayed run stopped at its budget, if it did (a replay only).
    pub fn budget_stop(&self) -> Option<&BudgetStop> {
        self.stop.as_ref().map(|s| &s.stop)
    }

    /// Gives a replay of a budget-stopped run the run's cancellation, which it fires once
    /// the crossing call was replayed and everything journaled was served.
    pub fn arm_stop(&self, cancel: CancellationToken) {
        if let Some(stop) = &self.stop {
            let _ = stop.cancel.set(cancel);
        }
    }

    /// The crossing call was replayed: the run stops as soon as nothing journaled is left.
    pub fn stop_reached(&self) {
        if let Some(stop) = &self.stop {
            stop.reached.store(true, Ordering::SeqCst);
            stop.maybe_stop();
        }
    }

    /// Whether a call the journal does not have is where the live run was cut by its budget
    /// (it is parked until the replay stops), rather than a divergence.
    pub fn parks_missing_calls(&self) -> bool {
        self.stop.is_some()
    }

    /// Parks a call the live run never finished, until the replay stops (the run's select
    /// drops it then). Should the rest of the journal never be asked for — a divergence —
    /// the run is stopped after a while, and the comparison says where it differs.
    pub async fn park(&self) {
        if let Some(cancel) = self.stop.as_ref().and_then(|s| s.cancel.get()) {
            tokio::select! {
                () = cancel.cancelled() => {}
                () = tokio::time::sleep(STOP_WATCHDOG) => cancel.cancel(),
            }
        }
        std::future::pending::<()>().await;
    }
}
