use super::*;
use braincode_protocol::{FinalReportRecord, Handoff, RunStart};
use serde_json::json;

fn start(prompt: &str) -> JournalEntry {
    JournalEntry::new(
        1,
        Record::RunStart(RunStart {
            prompt: prompt.into(),
            project_support: None,
            model: None,
            attempt: None,
            run_id: Some("r".into()),
            brain: None,
            permission: None,
            routing_choice: None,
            resume_of: None,
            ..RunStart::default()
        }),
    )
}

fn report(task: &str, answer: &str) -> FinalReport {
    serde_json::from_value(json!({
        "version": 1, "status": "approved", "task": task, "sessionId": "s",
        "brain": {"id": "b", "name": "B", "mode": "auto"},
        "routing": {"source": "heuristic", "primaryRole": "backend", "workers": []},
        "todos": [], "modelSummary": answer, "warnings": [],
        "patch": {"changedFiles": [{"path": "src/a.rs", "status": " M"}], "hasPatchActivity": true},
        "checks": {"status": "failed", "selectedScripts": ["cargo test"], "reviewRequired": false,
                   "results": [{"name": "cargo test", "command": "cargo test", "passed": false,
                                "durationMs": 5}]}
    }))
    .unwrap()
}

fn finished(task: &str, answer: &str) -> Vec<JournalEntry> {
    vec![
        start(task),
        JournalEntry::new(
            2,
            Record::FinalReport(FinalReportRecord {
                final_report: Box::new(report(task, answer)),
                attempt: None,
            }),
        ),
    ]
}

fn handoff(summary: &str) -> JournalEntry {
    JournalEntry::new(
        3,
        Record::Handoff(Handoff {
            summary: summary.into(),
            focus: None,
            trigger: Some(HandoffTrigger::RunEnd),
            estimated_bytes: None,
            limit_bytes: None,
            summarizer: None,
            summarizer_fallback: None,
        }),
    )
}

#[test]
fn a_run_adds_its_request_answer_changes_and_checks() {
    let text = build_handoff(&finished("fix the parser", "Fixed the off-by-one."));
    assert!(text.starts_with("**Objective:** fix the parser"), "{text}");
    assert!(text.contains("- **user:** fix the parser"), "{text}");
    assert!(
        text.contains("- **backend:** Fixed the off-by-one."),
        "{text}"
    );
    assert!(text.contains("- **changes:** M src/a.rs"), "{text}");
    assert!(
        text.contains("- **checks:** failed: cargo test FAILED"),
        "{text}"
    );
}

#[test]
fn the_summary_is_bounded_per_line_and_in_total_and_building_is_idempotent() {
    let mut entries = Vec::new();
    for n in 0..60 {
        entries.extend(finished(
            &format!("request {n} {}", "x".repeat(500)),
            &"answer ".repeat(200),
        ));
    }
    let text = build_handoff(&entries);
    assert!(text.chars().count() <= HANDOFF_MAX_CHARS, "{}", text.len());
    for line in text.lines().skip(1) {
        assert!(line.chars().count() <= 240 + 20, "{line}");
    }
    assert!(text.contains("request 59"), "the newest turns are kept");
    assert_eq!(build_handoff(&entries), text);
    assert_eq!(bound_handoff_summary(&text, HANDOFF_MAX_CHARS), text);
}

#[test]
fn a_handoff_is_fresh_until_a_run_starts_after_it() {
    let mut entries = finished("one", "first answer");
    let summary = build_handoff(&entries);
    entries.push(handoff(&summary));
    assert_eq!(fresh_handoff(&entries), Some(summary.as_str()));
    // Building again from a fresh handoff changes nothing.
    assert_eq!(build_handoff(&entries), summary);

    entries.push(start("two"));
    assert_eq!(fresh_handoff(&entries), None);
    let built = build_handoff(&entries);
    assert!(
        built.starts_with(&summary),
        "the earlier handoff is the base"
    );
    assert!(
        built.ends_with("- **user:** two (interrupted: no answer)"),
        "{built}"
    );
}

#[test]
fn the_context_guard_notice_is_not_a_summary() {
    let mut entries = finished("one", "first answer");
    entries.push(JournalEntry::new(
        4,
        Record::Handoff(Handoff {
            summary: "The backend agent stopped: too big".into(),
            focus: None,
            trigger: Some(HandoffTrigger::Auto),
            estimated_bytes: Some(1),
            limit_bytes: Some(1),
            summarizer: None,
            summarizer_fallback: None,
        }),
    ));
    assert_eq!(fresh_handoff(&entries), None);
    assert!(!build_handoff(&entries).contains("stopped"));
}
