//! Session journal: crash and concurrency safety, listing, lookup and snapshots.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::common::*;
use braincode_config::journal::{SnapshotOptions, session_snapshot};
use braincode_config::{
    Home, JournalWriter, ListOptions, LookupError, SessionStatus, continuity_block, list_sessions,
    read_journal, resolve_session, session_has_runs,
};
use braincode_protocol::{JournalEntry, Record, SessionId};

#[test]
fn torn_last_line_is_reported_and_earlier_records_survive() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let id = SessionId::new("torn").unwrap();
    let mut writer = JournalWriter::open(&home, &id).unwrap();
    writer.append(&run_start("first prompt", "/p")).unwrap();
    writer.append(&run_end("done")).unwrap();
    drop(writer);
    // A writer killed in the middle of a line leaves half a record and no newline.
    let full = serde_json::to_string(&JournalEntry::new(5, run_end("never finished"))).unwrap();
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(home.session_path(&id))
        .unwrap();
    file.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
    drop(file);

    let read = read_journal(&home.session_path(&id)).unwrap();
    assert!(read.torn_tail);
    assert_eq!(read.entries.len(), 2);
    assert!(read.skipped.is_empty(), "{:?}", read.skipped);
    assert!(matches!(read.entries[0].record, Record::RunStart(_)));

    let snapshot = session_snapshot(&home, &id, &SnapshotOptions::default()).unwrap();
    assert!(snapshot.torn_tail);
    assert_eq!(snapshot.status, SessionStatus::Completed);

    // The next writer starts on a fresh line, so the torn half stays alone on its line.
    let mut writer = JournalWriter::open(&home, &id).unwrap();
    writer.append(&run_start("second", "/p")).unwrap();
    let read = read_journal(&home.session_path(&id)).unwrap();
    assert_eq!(read.entries.len(), 3);
    assert!(!read.torn_tail);
    assert_eq!(read.skipped.len(), 1);
    assert_eq!(read.skipped[0].line, 3);
}

#[test]
fn bad_lines_are_skipped_with_line_numbers_and_unknown_types_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    fs::write(
        &path,
        concat!(
            "{\"timestamp\":1,\"type\":\"run_start\",\"prompt\":\"a\"}\n",
            "not json at all\n",
            "\n",
            "{\"timestamp\":2,\"type\":\"future_record\",\"x\":1}\n",
            "{\"timestamp\":3,\"type\":\"run_end\",\"summary\":42}\n",
            "[1,2]\n",
            "{\"timestamp\":4,\"type\":\"run_end\",\"summary\":\"ok\"}\n",
        ),
    )
    .unwrap();
    let read = read_journal(&path).unwrap();
    assert_eq!(read.entries.len(), 4);
    assert_eq!(read.entries[1].record.type_name(), "future_record");
    assert!(!read.entries[1].record.is_malformed_known());
    // The malformed run_end is kept verbatim and reported.
    assert!(read.entries[2].record.is_malformed_known());
    assert_eq!(read.malformed.len(), 1);
    assert_eq!(read.malformed[0].line, 5);
    assert!(
        read.malformed[0].reason.contains("summary") || read.malformed[0].reason.contains("string"),
        "{}",
        read.malformed[0].reason
    );
    let lines: Vec<usize> = read.skipped.iter().map(|s| s.line).collect();
    assert_eq!(lines, [2, 6]);
    assert!(!read.torn_tail);
    assert_eq!(read.lines, 7);
}

const CHILD_ENV: &str = "BRAINCODE_TEST_APPEND_CHILD";
const RECORDS_PER_CHILD: usize = 3_000;

/// Not a real test on its own: when the parent test re-runs this binary with `CHILD_ENV`
/// set, this is the child that appends records.
#[test]
fn append_child_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (home, tag) = spec.split_once('|').unwrap();
    let home = Home::at(home);
    let id = SessionId::new("shared").unwrap();
    let mut writer = JournalWriter::open(&home, &id).unwrap();
    for i in 0..RECORDS_PER_CHILD {
        // Sizes from tiny to well above a pipe buffer / page, to give interleaving a chance.
        let filler = "x".repeat((i * 37) % 9_000);
        writer
            .append(&run_start(&format!("{tag}-{i}-{filler}"), "/p"))
            .unwrap();
    }
}

#[test]
fn two_processes_appending_never_interleave_lines() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|tag| {
            Command::new(&exe)
                .args([
                    "--exact",
                    &test_name(module_path!(), "append_child_process"),
                    "--test-threads",
                    "1",
                ])
                .env(CHILD_ENV, format!("{}|{tag}", dir.path().display()))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let home = Home::at(dir.path());
    let read = read_journal(&home.session_path(&SessionId::new("shared").unwrap())).unwrap();
    assert!(
        read.skipped.is_empty(),
        "{:?}",
        &read.skipped[..read.skipped.len().min(3)]
    );
    assert!(!read.torn_tail);
    assert_eq!(read.entries.len(), 2 * RECORDS_PER_CHILD);
    for tag in ["a", "b"] {
        let mut next = 0;
        for entry in &read.entries {
            let Record::RunStart(start) = &entry.record else {
                panic!("unexpected record");
            };
            if start.prompt.starts_with(&format!("{tag}-")) {
                let n: usize = start.prompt.split('-').nth(1).unwrap().parse().unwrap();
                assert_eq!(n, next, "records of one process stay in order");
                next += 1;
            }
        }
        assert_eq!(next, RECORDS_PER_CHILD);
    }
}

#[test]
fn durability_points_are_written_before_append_returns() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let id = SessionId::new("durable").unwrap();
    let mut writer = JournalWriter::open(&home, &id).unwrap();
    let entry = writer.append(&run_end("answer")).unwrap();
    assert!(entry.timestamp > 1_600_000_000_000);
    // Visible to an independent reader while the writer is still open.
    let read = read_journal(&home.session_path(&id)).unwrap();
    assert_eq!(read.entries, vec![entry]);
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(home.session_path(&id))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode, 0o600);
}

fn write_session(home: &Home, id: &str, records: &[Record]) {
    let id = SessionId::new(id).unwrap();
    let mut writer = JournalWriter::open(home, &id).unwrap();
    for record in records {
        writer.append(record).unwrap();
    }
}

fn set_mtime(path: &Path, secs_ago: u64) {
    let time = std::time::SystemTime::now() - std::time::Duration::from_secs(secs_ago);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[test]
fn listing_is_newest_first_with_status_preview_and_project_filter() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    let project_a = dir.path().join("a");
    let project_b = dir.path().join("b");
    fs::create_dir_all(&project_a).unwrap();
    fs::create_dir_all(&project_b).unwrap();
    let root_a = project_a.to_str().unwrap();
    let root_b = project_b.to_str().unwrap();
    let long = format!("fix the login bug {}", "please ".repeat(40));
    write_session(
        &home,
        "s-done",
        &[run_start(&long, root_a), run_end("fixed")],
    );
    write_session(
        &home,
        "s-failed",
        &[run_start("b task", root_b), run_error("boom", false)],
    );
    write_session(
        &home,
        "s-running",
        &[run_start("a again", root_a), run_error("retry", true)],
    );
    write_session(&home, "s-empty", &[]);
    for (name, age) in [
        ("s-done", 30),
        ("s-failed", 20),
        ("s-running", 10),
        ("s-empty", 40),
    ] {
        set_mtime(&home.sessions_dir().join(format!("{name}.jsonl")), age);
    }

    let all = list_sessions(
        &home,
        &ListOptions {
            all: true,
            ..ListOptions::default()
        },
    )
    .unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s-running", "s-failed", "s-done", "s-empty"]);
    let statuses: Vec<SessionStatus> = all.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [
            SessionStatus::Incomplete,
            SessionStatus::Failed,
            SessionStatus::Completed,
            SessionStatus::Incomplete
        ]
    );
    let done = &all[2];
    let preview = done.prompt_preview.as_deref().unwrap();
    assert!(preview.starts_with("fix the login bug please"));
    assert_eq!(preview.chars().count(), 80);
    assert_eq!(done.project_root.as_deref(), Some(root_a));
    assert_eq!(done.runs, 1);
    assert!(done.started_at.is_some());

    let in_a = list_sessions(
        &home,
        &ListOptions {
            project: Some(project_a.clone()),
            ..ListOptions::default()
        },
    )
    .unwrap();
    let ids: Vec<&str> = in_a.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["s-running", "s-done"]);

    let limited = list_sessions(
        &home,
        &ListOptions {
            limit: 1,
            all: true,
            project: None,
        },
    )
    .unwrap();
    assert_eq!(limited.len(), 1);
}

#[test]
fn missing_sessions_dir_lists_nothing_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("home"));
    assert!(
        list_sessions(&home, &ListOptions::default())
            .unwrap()
            .is_empty()
    );
    assert!(!home.root().exists());
}

#[test]
fn prefix_lookup_unique_ambiguous_missing_and_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    for id in ["abc123", "abd456", "xyz"] {
        write_session(&home, id, &[run_start("p", "/p")]);
    }
    assert_eq!(resolve_session(&home, "xyz").unwrap().as_str(), "xyz");
    assert_eq!(resolve_session(&home, "abc").unwrap().as_str(), "abc123");
    match resolve_session(&home, "ab") {
        Err(LookupError::Ambiguous {
            candidates, total, ..
        }) => {
            assert_eq!(total, 2);
            let mut sorted = candidates.clone();
            sorted.sort();
            assert_eq!(sorted, ["abc123", "abd456"]);
            let text = resolve_session(&home, "ab").unwrap_err().to_string();
            assert!(text.contains("abc123") && text.contains("abd456"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    let err = resolve_session(&home, "nope").unwrap_err();
    assert!(matches!(err, LookupError::NotFound { .. }));
    assert!(err.to_string().contains("braincode sessions list"), "{err}");
    assert!(matches!(
        resolve_session(&home, "../etc"),
        Err(LookupError::InvalidId { .. })
    ));
}

#[test]
fn the_short_id_and_its_prefixes_find_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    for id in ["20261202-103723-b56614", "20261202-103801-c07e11"] {
        write_session(&home, id, &[run_start("p", "/p")]);
    }
    for query in ["b56614", "b56", "103723-b56614", "20261202-1037"] {
        assert_eq!(
            resolve_session(&home, query).unwrap().as_str(),
            "20261202-103723-b56614",
            "{query}"
        );
    }
    assert!(matches!(
        resolve_session(&home, "20261202-10"),
        Err(LookupError::Ambiguous { total: 2, .. })
    ));
    assert!(matches!(
        resolve_session(&home, "b5661499"),
        Err(LookupError::NotFound { .. })
    ));
}

#[test]
fn snapshot_has_header_prompt_summary_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    write_session(
        &home,
        "snap",
        &[
            run_start("build the parser", "/p"),
            worker_end("backend", "parser designed"),
            check_summary("failed", "unit tests failed"),
            review("changes_requested", "missing tests"),
            run_end("parser built; tests added"),
        ],
    );
    let id = SessionId::new("snap").unwrap();
    let snapshot = session_snapshot(&home, &id, &SnapshotOptions::default()).unwrap();
    let text = &snapshot.text;
    assert!(
        text.starts_with("Session snap · status completed · updated "),
        "{text}"
    );
    assert!(text.contains("compact session context only"), "{text}");
    assert!(text.contains("Initial prompt:\nbuild the parser"), "{text}");
    assert!(
        text.contains("Latest summary:\nparser built; tests added"),
        "{text}"
    );
    assert!(
        text.contains("worker backend (support) completed: parser designed"),
        "{text}"
    );
    assert!(text.contains("checks failed: unit tests failed"), "{text}");
    assert!(
        text.contains("review changes_requested: missing tests"),
        "{text}"
    );
    assert!(!snapshot.truncated);
    assert_eq!(snapshot.entries, 5);
    assert!(!text.contains("earlier records omitted"));
}

#[test]
fn snapshot_respects_whole_and_field_caps() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let huge = "word ".repeat(10_000);
    let mut records = vec![run_start(&huge, "/p")];
    for i in 0..60 {
        records.push(worker_end("qa", &format!("{i} {huge}")));
        records.push(run_error(&format!("err {i} {huge}"), false));
        records.push(handoff(&huge, &huge));
        records.push(run_end(&huge));
    }
    write_session(&home, "big", &records);
    let id = SessionId::new("big").unwrap();
    let snapshot = session_snapshot(&home, &id, &SnapshotOptions::default()).unwrap();
    let count = snapshot.text.chars().count();
    assert!(count <= 24_576, "{count}");
    assert!(snapshot.truncated);
    assert!(snapshot.text.contains("earlier records omitted"));
    for record in &snapshot.records {
        let limit = match record.record_type.as_str() {
            "worker_end" => 2_000 + 40,
            "run_error" => 1_200 + 40,
            "run_start" => 600 + 40,
            _ => 6_144 + 440,
        };
        assert!(
            record.text.chars().count() <= limit,
            "{}: {}",
            record.record_type,
            record.text.len()
        );
    }
    let prompt_section = snapshot
        .text
        .split("Initial prompt:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    assert!(prompt_section.chars().count() <= 6_144);
}

#[test]
fn snapshot_of_a_big_journal_reads_only_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    let id = SessionId::new("tail-only").unwrap();
    let path = home.session_path(&id);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = fs::File::create(&path).unwrap();
    // A first run (so the head has the initial prompt), then ~8 MiB of garbage that would
    // fail a full parse, then a normal recent tail.
    let line = |record: Record| serde_json::to_string(&JournalEntry::new(1, record)).unwrap();
    writeln!(file, "{}", line(run_start("the very first prompt", "/p"))).unwrap();
    let garbage = format!(
        "{{\"timestamp\":1,\"type\":\"run_end\",\"summary\": BROKEN {}\n",
        "#".repeat(1000)
    );
    for _ in 0..8_000 {
        file.write_all(garbage.as_bytes()).unwrap();
    }
    for i in 0..40 {
        writeln!(file, "{}", line(worker_end("qa", &format!("recent {i}")))).unwrap();
        writeln!(file, "{}", line(token_usage())).unwrap();
    }
    writeln!(file, "{}", line(run_end("final answer"))).unwrap();
    drop(file);

    let snapshot = session_snapshot(&home, &id, &SnapshotOptions::default()).unwrap();
    assert!(snapshot.truncated);
    assert_eq!(snapshot.entries, 24);
    assert!(
        snapshot.skipped.is_empty(),
        "garbage is outside the tail window"
    );
    assert!(
        snapshot
            .text
            .contains("Initial prompt:\nthe very first prompt")
    );
    assert!(snapshot.text.contains("recent 39"));
    assert!(!snapshot.text.contains("recent 10 "));
    let size = fs::metadata(&path).unwrap().len();
    assert!(size > 8_000_000);
    assert!(
        snapshot.bytes_read < 5 * 1024 * 1024,
        "read {} of {size} bytes",
        snapshot.bytes_read
    );
    assert!(session_has_runs(&home, &id));
}

#[test]
fn continuity_block_only_for_sessions_with_runs() {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path());
    write_session(&home, "new", &[token_usage()]);
    write_session(
        &home,
        "old",
        &[run_start("earlier", "/p"), run_end("earlier answer")],
    );
    let new = SessionId::new("new").unwrap();
    let old = SessionId::new("old").unwrap();
    let missing = SessionId::new("missing").unwrap();
    assert!(!session_has_runs(&home, &new));
    assert!(!session_has_runs(&home, &missing));
    assert!(continuity_block(&home, &new).is_none());
    assert!(continuity_block(&home, &missing).is_none());
    let block = continuity_block(&home, &old).unwrap();
    assert!(block.starts_with(
        "Conversation so far (most recent session activity, for continuity with this follow-up):\n"
    ));
    assert!(block.contains("earlier answer"));
}
