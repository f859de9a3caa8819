//! Tool-call counters shared by every agent of a run.

use std::collections::BTreeMap;
use std::sync::Mutex;

use braincode_protocol::{Phase, PhaseToolCalls, ToolCallCounts};

/// Counts tool calls per phase.
#[derive(Debug, Default)]
pub struct ToolStats {
    by_phase: Mutex<BTreeMap<Phase, PhaseToolCalls>>,
}

impl ToolStats {
    /// Counts one finished call.
    pub fn count(&self, phase: Option<Phase>, failed: bool) {
        let mut guard = match self.by_phase.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        let entry = guard.entry(phase.unwrap_or(Phase::Unknown)).or_default();
        entry.total += 1;
        if failed {
            entry.failed += 1;
        }
    }

    /// Totals per phase name.
    pub fn by_phase(&self) -> BTreeMap<String, PhaseToolCalls> {
        let guard = match self.by_phase.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guard
            .iter()
            .map(|(phase, counts)| (phase.as_str().to_string(), *counts))
            .collect()
    }

    /// Totals for the final report.
    pub fn counts(&self) -> ToolCallCounts {
        let by_phase = self.by_phase();
        ToolCallCounts {
            total: by_phase.values().map(|c| c.total).sum(),
            failed: by_phase.values().map(|c| c.failed).sum(),
            by_phase: by_phase.into_iter().map(|(k, v)| (k, v.total)).collect(),
        }
    }
}
