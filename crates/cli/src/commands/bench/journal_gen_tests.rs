//! The synthetic journal reads back typed, and its runs end as planned.

use super::*;

#[test]
fn synthetic_records_read_back_typed() {
    for run in [0, 9, 24] {
        for record in run_records(run) {
            let line = serde_json::to_string(&JournalEntry::new(1, record.clone())).unwrap();
            let entry = braincode_config::journal::parse_journal_line(line.as_bytes())
                .unwrap()
                .unwrap();
            assert!(
                !matches!(entry.record, Record::Unknown(_)),
                "{} does not read back typed: {line}",
                record.type_name()
            );
            assert_eq!(entry.record, record);
        }
    }
}

#[test]
fn runs_end_as_planned() {
    let status = |run| {
        let mut state = RunState::new("s");
        for record in run_records(run) {
            state.apply(&JournalEntry::new(1, record));
        }
        (state.is_finished(), state.report().status)
    };
    assert_eq!(status(0), (true, FinalStatus::Approved));
    assert_eq!(status(9), (true, FinalStatus::Failed));
    assert!(!status(24).0, "run 24 is interrupted");
}
