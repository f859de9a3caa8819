use super::*;
use braincode_protocol::{JournalEntry, Phase, Record, Role, TokenUsage};
use std::io::Write;

fn usage_line(at: i64, role: Role, model: &str, usage: Usage) -> String {
    let record = Record::TokenUsage(TokenUsage {
        role: Some(role),
        model_id: Some(model.to_string()),
        usage,
        ..TokenUsage::default()
    });
    serde_json::to_string(&JournalEntry::new(at, record)).unwrap()
}

fn write(dir: &Path, name: &str, lines: &[String]) {
    let mut file = std::fs::File::create(dir.join(name)).unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

fn prices() -> HashMap<String, ModelPricing> {
    HashMap::from([(
        "p/big".to_string(),
        ModelPricing {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: None,
        },
    )])
}

const DAY: i64 = 86_400_000;
const T0: i64 = 1_796_000_000_000;

#[test]
fn totals_are_the_sum_of_the_records_grouped_and_priced() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.jsonl",
        &[
            usage_line(
                T0,
                Role::Backend,
                "p/big",
                Usage::new(1_000_000, 100_000, 0, 0),
            ),
            // A model answer that quotes the record's name is not a record.
            r#"{"timestamp":1796000000001,"type":"model_reply","text":"the token_usage record"}"#
                .into(),
            usage_line(
                T0 + DAY,
                Role::Review,
                "p/big",
                Usage::new(0, 0, 1_000_000, 0),
            ),
        ],
    );
    write(
        dir.path(),
        "b.jsonl",
        &[
            usage_line(T0, Role::Backend, "p/unknown", Usage::new(10, 5, 0, 0)),
            // Torn last line of a crashed run: counted as unreadable, never fatal.
            r#"{"timestamp":1796000000002,"type":"token_usage","usage":{"inp"#.into(),
        ],
    );
    write(dir.path(), "notes.txt", &["token_usage".into()]);

    let by_role = summarize_dir(
        dir.path(),
        &UsageQuery {
            since_ms: None,
            by: UsageGroup::Role,
            recent: 0,
        },
        &prices(),
    )
    .unwrap();
    assert_eq!(by_role.files_read, 2);
    assert_eq!(by_role.sessions, 2);
    assert_eq!(by_role.unreadable_lines, 1);
    assert_eq!(by_role.total.calls, 3);
    assert_eq!(by_role.total.usage.input, 1_000_010);
    assert_eq!(by_role.total.usage.cache_read, 1_000_000);
    // 1M input × $3 + 0.1M output × $15 + 1M cache reads × $0.30.
    assert!(
        (by_role.total.cost_usd - 4.8).abs() < 1e-9,
        "{}",
        by_role.total.cost_usd
    );
    assert_eq!(by_role.total.unpriced_tokens, 15);
    assert_eq!(by_role.unpriced_models, ["p/unknown"]);
    let keys: Vec<&str> = by_role.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["backend", "review"]);
    assert_eq!(by_role.rows[0].calls, 2);

    let by_day = summarize_dir(
        dir.path(),
        &UsageQuery {
            since_ms: Some(T0 + DAY / 2),
            by: UsageGroup::Day,
            recent: 0,
        },
        &prices(),
    )
    .unwrap();
    assert_eq!(by_day.total.calls, 1, "{by_day:#?}");
    assert_eq!(by_day.rows.len(), 1);
    assert_eq!(by_day.rows[0].key, day_of(T0 + DAY));
}

#[test]
fn a_missing_sessions_directory_is_no_usage() {
    let dir = tempfile::tempdir().unwrap();
    let summary =
        summarize_dir(&dir.path().join("nope"), &UsageQuery::default(), &prices()).unwrap();
    assert_eq!(summary.total.calls, 0);
}

#[test]
fn a_recorded_cost_wins_over_todays_price() {
    let dir = tempfile::tempdir().unwrap();
    let mut line: serde_json::Value = serde_json::from_str(&usage_line(
        T0,
        Role::Backend,
        "p/big",
        Usage::new(1_000_000, 0, 0, 0),
    ))
    .unwrap();
    // Made when the model cost $1 per million input tokens.
    line["costMicroUsd"] = serde_json::json!(1_000_000);
    write(dir.path(), "a.jsonl", &[line.to_string()]);
    let summary = summarize_dir(dir.path(), &UsageQuery::default(), &prices()).unwrap();
    assert!(
        (summary.total.cost_usd - 1.0).abs() < 1e-9,
        "{}",
        summary.total.cost_usd
    );
    assert!(summary.unpriced_models.is_empty());
}

fn phase_line(at: i64, phase: Phase, usage: Usage, duration_ms: Option<u64>) -> String {
    let record = Record::TokenUsage(TokenUsage {
        role: Some(Role::Backend),
        phase: Some(phase),
        model_id: Some("p/big".to_string()),
        usage,
        duration_ms,
        ..TokenUsage::default()
    });
    serde_json::to_string(&JournalEntry::new(at, record)).unwrap()
}

#[test]
fn phases_cache_hits_and_recent_calls() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.jsonl",
        &[
            phase_line(T0, Phase::Router, Usage::new(100, 10, 0, 0), None),
            phase_line(
                T0 + 2,
                Phase::Primary,
                Usage::new(300, 20, 100, 0),
                Some(840),
            ),
        ],
    );
    write(
        dir.path(),
        "b.jsonl",
        &[phase_line(
            T0 + 1,
            Phase::Primary,
            Usage::new(100, 5, 300, 0),
            Some(120),
        )],
    );
    let summary = summarize_dir(
        dir.path(),
        &UsageQuery {
            since_ms: None,
            by: UsageGroup::Phase,
            recent: 2,
        },
        &prices(),
    )
    .unwrap();
    let keys: Vec<&str> = summary.rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, ["primary", "router"]);
    // Primary: 400 of 800 prompt tokens came from the cache; the router had no cache reads.
    assert_eq!(summary.rows[0].cache_hit_ratio, Some(0.5));
    assert_eq!(summary.rows[1].cache_hit_ratio, Some(0.0));
    assert_eq!(summary.total.cache_hit_ratio, Some(400.0 / 900.0));
    // The two newest calls, newest first, across files, with their latency and cost.
    let recent: Vec<(i64, &str, Option<u64>)> = summary
        .recent
        .iter()
        .map(|c| (c.timestamp, c.session.as_str(), c.duration_ms))
        .collect();
    assert_eq!(recent, [(T0 + 2, "a", Some(840)), (T0 + 1, "b", Some(120))]);
    assert_eq!(summary.recent[0].phase.as_deref(), Some("primary"));
    assert!(summary.recent[0].cost_usd.is_some_and(|c| c > 0.0));
    assert_eq!(UsageGroup::parse("phase"), Some(UsageGroup::Phase));
    assert!(UsageGroup::CHOICES.contains("phase"));
}

#[test]
fn no_prompt_tokens_is_no_ratio() {
    assert_eq!(cache_hit_ratio(&Usage::new(0, 10, 0, 0)), None);
}
