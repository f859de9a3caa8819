//! A session's records cut into runs, and each run folded.

use braincode_protocol::{JournalEntry, Record};

use super::RunState;

/// A session's records split into runs (each starts at its `run_start`; records before the
/// first one are dropped).
pub fn split_runs(entries: &[JournalEntry]) -> Vec<&[JournalEntry]> {
    let starts: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.record, Record::RunStart(_)))
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(entries.len());
            &entries[start..end]
        })
        .collect()
}

/// The state of each run of a session's records.
pub fn fold_runs(session_id: &str, entries: &[JournalEntry]) -> Vec<RunState> {
    split_runs(entries)
        .into_iter()
        .map(|run| {
            let mut state = RunState::new(session_id);
            for entry in run {
                state.apply(entry);
            }
            state
        })
        .collect()
}
