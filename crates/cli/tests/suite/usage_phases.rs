//! `braincode usage --by phase`, the cache-hit ratio and `--recent N` through the binary:
//! after real runs against the scripted model (router and primary calls, the provider
//! reporting cache reads), the phase rows, the ratio and the recent calls are what the
//! journals' `token_usage` records say; a bad grouping names the ones there are.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use crate::run_harness::{braincode, braincode_env, configure_one_model, journal, repo};
use braincode_protocol::Usage;
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_by_phase_with_cache_hits_and_recent_calls() {
    // Every call: 3,000 prompt tokens of which 1,000 from the provider's cache.
    let server = ScriptedServer::start(Script::new().always(
        Matcher::model("any"),
        Reply::text("hello!").with_usage(Usage::new(2_000, 100, 1_000, 0)),
    ))
    .await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    let repo = repo();

    // Without --heuristic the Brain's router is asked too (its "hello!" is no plan, so the
    // heuristic plan is used): calls of two phases.
    let mut sessions = Vec::new();
    for prompt in ["explain this repository", "what does lib.rs do"] {
        let out = braincode_env(&home, repo.path(), &["run", "--json", prompt], &[]).await;
        assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        sessions.push(report["sessionId"].as_str().unwrap().to_string());
    }
    let mut records: Vec<Value> = sessions
        .iter()
        .flat_map(|session| journal(&home, session))
        .filter(|r| r["type"] == "token_usage")
        .collect();
    let mut by_phase: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for record in &records {
        let entry = by_phase
            .entry(record["phase"].as_str().unwrap().to_string())
            .or_default();
        entry.0 += 1;
        entry.1 += record["usage"]["input"].as_u64().unwrap();
    }
    assert!(
        by_phase.contains_key("router") && by_phase.contains_key("primary"),
        "{by_phase:?}"
    );
    // Each live call's wall time is journaled with its usage.
    assert!(
        records.iter().all(|r| r["durationMs"].is_u64()),
        "{records:#?}"
    );

    let out = braincode(&home, repo.path(), &["usage", "--by", "phase", "--json"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = summary["rows"].as_array().unwrap();
    assert_eq!(rows.len(), by_phase.len(), "{rows:#?}");
    for row in rows {
        let (calls, input) = by_phase[row["key"].as_str().unwrap()];
        assert_eq!(row["calls"], calls, "{row:#}");
        assert_eq!(row["usage"]["input"], input, "{row:#}");
        assert_eq!(row["cacheHitRatio"].as_f64(), Some(1.0 / 3.0), "{row:#}");
    }
    assert_eq!(
        summary["total"]["cacheHitRatio"].as_f64(),
        Some(1.0 / 3.0),
        "{summary:#}"
    );
    // Five recent calls by default, newest first: the journals' last records.
    records.sort_by_key(|r| std::cmp::Reverse(r["timestamp"].as_i64().unwrap()));
    let recent = summary["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 5.min(records.len()), "{recent:#?}");
    assert_eq!(recent[0]["timestamp"], records[0]["timestamp"]);
    assert_eq!(recent[0]["session"].as_str(), Some(sessions[1].as_str()));
    for call in recent {
        assert_eq!(call["model"], "test/any", "{call:#}");
        assert_eq!(call["usage"]["cacheRead"], 1_000, "{call:#}");
        assert!(call["durationMs"].is_u64(), "{call:#}");
        assert!(call["phase"].is_string(), "{call:#}");
    }

    // The table: a phase row each, the ratio, and the recent calls asked for.
    let out = braincode(
        &home,
        repo.path(),
        &["usage", "--by", "phase", "--recent", "2"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = &out.stdout;
    assert!(text.contains("cache hit"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("router ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("primary ")), "{text}");
    assert!(text.contains("cache hit ratio: 33.3%"), "{text}");
    let after = text.split("recent calls").nth(1).unwrap();
    let call_lines = after.lines().filter(|l| l.contains("test/any")).count();
    assert_eq!(call_lines, 2, "{text}");
    let out = braincode(&home, repo.path(), &["usage", "--recent", "0"]).await;
    assert!(!out.stdout.contains("recent calls"), "{}", out.stdout);

    // A grouping that does not exist says which do.
    let out = braincode(&home, repo.path(), &["usage", "--by", "phases"]).await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("\"phases\" is not a grouping: use day, role, phase, model"),
        "{}",
        out.stderr
    );
}
