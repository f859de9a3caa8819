//! Property tests ("fuzzing") of the journal line reader, the backward snapshot reader and the
//! `@`-reference tokenizer. The normal suite runs a few hundred cases each; the `#[ignore]`d
//! `*_long` variants run 100,000+ cases:
//! `cargo test -p braincode-config --release --test all -- suite::fuzz --ignored --nocapture`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::sync::atomic::{AtomicUsize, Ordering};

use braincode_config::journal::{SnapshotOptions, parse_journal_line, session_snapshot};
use braincode_config::{Home, ReferenceKind, read_journal, tokenize_references};
use braincode_protocol::{JournalEntry, SessionId};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// One journal line: a valid record, a garbage line, or a record cut short.
#[derive(Debug, Clone)]
enum Line {
    Valid(String),
    Garbage(Vec<u8>),
    Cut(String, usize),
}

fn valid_record() -> impl Strategy<Value = String> {
    let text = "[ -~\u{e9}\u{4e2d}\n\"\\\\]{0,40}";
    prop_oneof![
        (text, 0i64..2_000_000_000_000).prop_map(|(p, t)| serde_json::json!({"timestamp": t, "type": "run_start", "prompt": p}).to_string()),
        (text, 0i64..10).prop_map(|(s, t)| serde_json::json!({"timestamp": t, "type": "run_end", "summary": s}).to_string()),
        (text, any::<bool>()).prop_map(|(e, f)| serde_json::json!({"timestamp": 1, "type": "run_error", "error": e, "willFallback": f}).to_string()),
        (text, text).prop_map(|(s, f)| serde_json::json!({"timestamp": 1, "type": "handoff", "summary": s, "focus": f}).to_string()),
        text.prop_map(|s| serde_json::json!({"timestamp": 1, "type": "worker_end", "phase": "support", "worker": "qa", "result": {"fromLayer": "agent", "toLayer": "brain", "handoffId": "t:handoff", "taskId": "t", "parentId": "b", "progress": {"status": "completed"}, "summary": s}}).to_string()),
        text.prop_map(|s| serde_json::json!({"type": "some_future_type", "x": s}).to_string()),
        Just(r#"{"timestamp":3,"type":"run_end","summary":42}"#.to_string()),
    ]
}

fn line() -> impl Strategy<Value = Line> {
    prop_oneof![
        4 => valid_record().prop_map(Line::Valid),
        // Garbage without newlines (a newline would split it into more lines).
        1 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..80)
            .prop_map(Line::Garbage),
        1 => (valid_record(), 1usize..40).prop_map(|(s, n)| Line::Cut(s, n)),
    ]
}

fn is_record(bytes: &[u8]) -> bool {
    matches!(parse_journal_line(bytes), Ok(Some(_)))
}

struct JournalCase {
    home: tempfile::TempDir,
    cases: AtomicUsize,
}

impl JournalCase {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            cases: AtomicUsize::new(0),
        }
    }

    fn check(&self, lines: &[Line], trailing_newline: bool) -> Result<(), TestCaseError> {
        self.cases.fetch_add(1, Ordering::Relaxed);
        let home = Home::at(self.home.path());
        let id = SessionId::new("fuzz").unwrap();
        let path = home.session_path(&id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut bytes = Vec::new();
        let mut expected_records = 0;
        let mut raw_lines: Vec<Vec<u8>> = Vec::new();
        for line in lines {
            let raw = match line {
                Line::Valid(s) => s.as_bytes().to_vec(),
                Line::Garbage(g) => g.clone(),
                Line::Cut(s, n) => s.as_bytes()[..(*n).min(s.len())].to_vec(),
            };
            if is_record(&raw) {
                expected_records += 1;
            }
            bytes.extend_from_slice(&raw);
            bytes.push(b'\n');
            raw_lines.push(raw);
        }
        let mut torn_expected = false;
        if !trailing_newline && !bytes.is_empty() {
            bytes.pop();
            let last = raw_lines.last().unwrap();
            let blank = last
                .strip_suffix(b"\r")
                .unwrap_or(last)
                .iter()
                .all(u8::is_ascii_whitespace);
            torn_expected = !blank && !is_record(last);
        }
        std::fs::write(&path, &bytes).unwrap();

        let read = read_journal(&path).unwrap();
        prop_assert_eq!(read.entries.len(), expected_records);
        prop_assert_eq!(read.torn_tail, torn_expected);
        prop_assert!(
            read.skipped
                .iter()
                .all(|s| s.line >= 1 && s.line <= lines.len())
        );
        let reparsed: Vec<JournalEntry> = read
            .entries
            .iter()
            .map(|e| serde_json::from_str(&serde_json::to_string(e).unwrap()).unwrap())
            .collect();
        prop_assert_eq!(&reparsed, &read.entries);

        let snapshot = session_snapshot(&home, &id, &SnapshotOptions { max_entries: 5 }).unwrap();
        prop_assert!(snapshot.text.chars().count() <= 24_576);
        prop_assert!(snapshot.entries <= 5);
        prop_assert_eq!(snapshot.torn_tail, torn_expected);
        Ok(())
    }
}

fn run_journal_fuzz(cases: u32) -> usize {
    let case = JournalCase::new();
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(proptest::collection::vec(line(), 0..30), any::<bool>()),
            |(lines, newline)| case.check(&lines, newline),
        )
        .unwrap();
    case.cases.load(Ordering::Relaxed)
}

/// The specification of the token grammar, as a regex: `(^|whitespace)(@|@@)(non-space
/// non-@ run)`, then de-duplication and the `@image` exclusions.
fn oracle(prompt: &str) -> Vec<String> {
    let re = regex::Regex::new(r"(?:^|\s)(@@|@)([^\s@]+)").unwrap();
    let mut out: Vec<String> = Vec::new();
    let mut at = 0;
    while let Some(caps) = re.captures_at(prompt, at) {
        let whole = caps.get(0).unwrap();
        let token = format!("{}{}", &caps[1], &caps[2]);
        at = whole.end();
        let target = &caps[2];
        // A run stopped by `@` is still a token; the regex resumes at that `@`.
        if caps[1].len() == 1 && (target == "image" || target.starts_with("image:")) {
            continue;
        }
        if !out.contains(&token) {
            out.push(token);
        }
    }
    out
}

fn prompt_strategy() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("@".to_string()),
        Just("@@".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        Just("\u{3000}".to_string()),
        Just("image".to_string()),
        Just("image:".to_string()),
        "[a-z./~_-]{1,6}",
        "[\u{e9}\u{4e2d}\u{1f600}]",
        any::<char>().prop_map(|c| c.to_string()),
    ];
    proptest::collection::vec(atom, 0..24).prop_map(|parts| parts.concat())
}

fn run_tokenizer_fuzz(cases: u32) -> usize {
    let count = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prompt_strategy(), |prompt| {
            count.fetch_add(1, Ordering::Relaxed);
            let tokens = tokenize_references(&prompt);
            let found: Vec<String> = tokens.iter().map(|t| t.token.clone()).collect();
            prop_assert_eq!(&found, &oracle(&prompt), "prompt {:?}", prompt);
            for token in &tokens {
                prop_assert!(!token.target.is_empty());
                prop_assert!(!token.target.contains('@'));
                prop_assert!(!token.target.chars().any(char::is_whitespace));
                let prefix = if token.kind == ReferenceKind::Session {
                    "@@"
                } else {
                    "@"
                };
                prop_assert_eq!(format!("{prefix}{}", token.target), token.token.clone());
            }
            Ok(())
        })
        .unwrap();
    count.load(Ordering::Relaxed)
}

#[test]
fn journal_reader_survives_arbitrary_lines() {
    run_journal_fuzz(150);
}

#[test]
fn tokenizer_matches_the_grammar() {
    run_tokenizer_fuzz(1_000);
}

#[test]
#[ignore = "long fuzz run; see the module docs"]
fn journal_reader_survives_arbitrary_lines_long() {
    let cases = std::env::var("BC_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let ran = run_journal_fuzz(cases);
    eprintln!("journal reader fuzz: {ran} inputs");
}

#[test]
#[ignore = "long fuzz run; see the module docs"]
fn tokenizer_matches_the_grammar_long() {
    let cases = std::env::var("BC_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(250_000);
    let ran = run_tokenizer_fuzz(cases);
    eprintln!("tokenizer fuzz: {ran} inputs");
}
