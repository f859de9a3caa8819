//! Criterion benchmarks of the session journal: one append, and a snapshot of a large journal.
//! `cargo bench -p braincode-config --bench journal`. The end-to-end figure with peak RSS is
//! `braincode bench snapshot`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{BufWriter, Write};

use braincode_config::journal::{SnapshotOptions, session_snapshot};
use braincode_config::{Home, JournalWriter};
use braincode_protocol::{JournalEntry, Record, SessionId};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn record(value: serde_json::Value) -> Record {
    serde_json::from_value(value).unwrap()
}

fn typical_records() -> Vec<Record> {
    let text =
        "the parser now handles nested blocks and the cache is invalidated on write ".repeat(8);
    vec![
        record(
            json!({"type": "token_usage", "role": "backend", "phase": "primary",
            "usage": {"input": 1000, "output": 200, "cacheRead": 0, "cacheWrite": 0, "total": 1200}}),
        ),
        record(
            json!({"type": "worker_end", "phase": "support", "worker": "qa",
            "result": {"fromLayer": "agent", "toLayer": "brain", "handoffId": "t:handoff",
                       "taskId": "t", "parentId": "b", "progress": {"status": "completed"},
                       "summary": text, "artifacts": [], "risks": [], "nextQuestions": []}}),
        ),
        record(
            json!({"type": "tool_execution_summary", "toolCallId": "c1", "toolName": "read_file",
            "stage": "end", "resultSummary": {"preview": text}}),
        ),
        record(json!({"type": "run_start", "prompt": text, "attempt": 1})),
    ]
}

fn append(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let mut writer = JournalWriter::open(&home, &SessionId::new("bench").unwrap()).unwrap();
    let records = typical_records();
    let mut i = 0;
    c.bench_function("journal_append_non_durable", |b| {
        b.iter(|| {
            writer.append(&records[i % records.len()]).unwrap();
            i += 1;
        });
    });
}

fn snapshot(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let id = SessionId::new("big").unwrap();
    std::fs::create_dir_all(home.sessions_dir()).unwrap();
    let mut out = BufWriter::new(std::fs::File::create(home.session_path(&id)).unwrap());
    let records = typical_records();
    let end = record(json!({"type": "run_end", "summary": "done"}));
    let mut written = 0usize;
    let mut n = 0i64;
    // ~32 MB of mixed records, with a run_end every 200 records.
    while written < 32_000_000 {
        let rec = if n % 200 == 199 {
            &end
        } else {
            &records[n as usize % records.len()]
        };
        let line = serde_json::to_string(&JournalEntry::new(n, rec.clone())).unwrap();
        writeln!(out, "{line}").unwrap();
        written += line.len() + 1;
        n += 1;
    }
    out.flush().unwrap();
    drop(out);
    c.bench_function("session_snapshot_32mb", |b| {
        b.iter(|| session_snapshot(&home, &id, &SnapshotOptions::default()).unwrap());
    });
}

criterion_group!(benches, append, snapshot);
criterion_main!(benches);
