//! The evidence cache: reuse, repeat thresholds, invalidation, limits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use braincode_tools::evidence::{BLOCK_AT, REMINDER_AT, STOP_AT, STRONG_REMINDER_AT};
use braincode_tools::{CacheLookup, EvidenceCache, EvidenceCacheConfig, ToolOutput};
use serde_json::{Value, json};

fn cache_details(output: &ToolOutput) -> Value {
    output.details.as_ref().unwrap()["evidenceCache"].clone()
}

/// What the runtime's loop does: look up, run on a miss, store.
fn call(
    cache: &EvidenceCache,
    name: &str,
    args: Value,
    result: &str,
    runs: &mut u32,
) -> (ToolOutput, bool) {
    match cache.before_call(name, &args) {
        CacheLookup::Hit(output) => (output, false),
        CacheLookup::Blocked(output) => (output, true),
        CacheLookup::Miss => {
            *runs += 1;
            let output = ToolOutput::ok(result).with_details(json!({"path": "a.rs"}));
            (cache.after_call(name, &args, output), false)
        }
    }
}

#[test]
fn identical_reads_are_reused_with_canonical_keys() {
    let cache = EvidenceCache::default();
    let mut runs = 0;
    let (first, _) = call(
        &cache,
        "read_file",
        json!({"path": "a.rs", "offset": 0}),
        "A",
        &mut runs,
    );
    assert_eq!(first.content, "A");
    let details = cache_details(&first);
    assert_eq!(details["reused"], false);
    assert_eq!(details["currentEntries"], 1);
    assert_eq!(
        first.details.as_ref().unwrap()["path"],
        "a.rs",
        "tool details are kept"
    );
    let (second, _) = call(
        &cache,
        "READ_FILE",
        json!({"offset": 0, "path": "a.rs"}),
        "changed",
        &mut runs,
    );
    assert_eq!(second.content, "A");
    assert_eq!(runs, 1);
    let details = cache_details(&second);
    assert_eq!(details["reused"], true);
    assert_eq!(details["callCount"], 2);
    assert_eq!(details["consecutiveCount"], 2);
    assert!(details["cacheAgeMs"].is_u64());
    assert!(details["approxBytes"].as_u64().unwrap() > 0);
    call(&cache, "read_file", json!({"path": "b.rs"}), "B", &mut runs);
    assert_eq!(runs, 2);
}

#[test]
fn repeats_are_reminded_blocked_and_stopped() {
    let cache = EvidenceCache::default();
    let mut runs = 0;
    let args = json!({"query": "x"});
    let mut seen = Vec::new();
    for count in 1..=9u32 {
        let (output, blocked) = call(&cache, "search_files", args.clone(), "RESULT", &mut runs);
        let details = cache_details(&output);
        assert_eq!(details["consecutiveCount"], count);
        assert_eq!(blocked, count >= BLOCK_AT, "call {count}");
        assert_eq!(details["blocked"], count >= BLOCK_AT);
        let warning = details["warning"].as_str().unwrap_or("").to_string();
        seen.push((count, warning.clone(), output.content.clone()));
        if count < REMINDER_AT {
            assert!(warning.is_empty());
            assert_eq!(output.content, "RESULT");
        } else if count >= STOP_AT {
            assert!(warning.starts_with("Stop repeating"));
            assert!(!output.content.contains("RESULT"), "content suppressed");
        } else if count >= STRONG_REMINDER_AT {
            assert!(warning.starts_with("Strong reminder"));
            assert!(output.content.ends_with("RESULT"));
        } else if count >= BLOCK_AT {
            assert!(warning.starts_with("Blocked"));
        } else {
            assert!(warning.starts_with("Reminder"));
            assert!(output.content.starts_with("[evidence cache] Reminder"));
        }
    }
    assert_eq!(runs, 1, "the tool ran once: {seen:?}");
    // Another call resets the consecutive count.
    call(&cache, "list_files", json!({}), "L", &mut runs);
    let (output, blocked) = call(&cache, "search_files", args, "RESULT", &mut runs);
    assert!(!blocked);
    assert_eq!(cache_details(&output)["consecutiveCount"], 1);
    assert_eq!(cache_details(&output)["callCount"], 10);
}

#[test]
fn mutating_calls_clear_everything() {
    let cache = EvidenceCache::default();
    let mut runs = 0;
    for _ in 0..3 {
        call(&cache, "read_file", json!({"path": "a"}), "A", &mut runs);
    }
    assert_eq!(runs, 1);
    assert_eq!(
        cache.before_call("dispatch_specialist", &json!({})),
        CacheLookup::Miss
    );
    assert_eq!(cache.len(), 1, "dispatch_specialist does not invalidate");
    assert_eq!(
        cache.before_call("edit_file", &json!({"path": "a"})),
        CacheLookup::Miss
    );
    assert!(cache.is_empty());
    let (output, _) = call(&cache, "read_file", json!({"path": "a"}), "A2", &mut runs);
    assert_eq!(output.content, "A2");
    assert_eq!(
        cache_details(&output)["callCount"],
        1,
        "counters were reset"
    );
    let edited = cache.after_call("shell", &json!({}), ToolOutput::ok("done"));
    assert_eq!(edited.details, None);
    assert!(cache.is_empty());
}

#[test]
fn mcp_tools_by_verb() {
    let cache = EvidenceCache::default();
    let mut runs = 0;
    call(
        &cache,
        "mcp__github__get_issue",
        json!({"n": 1}),
        "issue",
        &mut runs,
    );
    call(
        &cache,
        "mcp__github__get_issue",
        json!({"n": 1}),
        "issue",
        &mut runs,
    );
    assert_eq!(runs, 1);
    call(
        &cache,
        "mcp__github__create_issue",
        json!({}),
        "created",
        &mut runs,
    );
    assert!(cache.is_empty());
}

#[test]
fn limits_errors_and_ttl() {
    let cache = EvidenceCache::new(EvidenceCacheConfig {
        max_entries: 2,
        max_bytes: 1_000,
        ttl: Duration::from_secs(600),
    });
    let mut runs = 0;
    call(&cache, "read_file", json!({"p": 1}), "1", &mut runs);
    call(&cache, "read_file", json!({"p": 2}), "2", &mut runs);
    call(&cache, "read_file", json!({"p": 1}), "1", &mut runs); // touch 1
    let (third, _) = call(&cache, "read_file", json!({"p": 3}), "3", &mut runs);
    assert_eq!(cache_details(&third)["evictedEntries"], 1);
    assert_eq!(cache_details(&third)["currentEntries"], 2);
    let before = runs;
    call(&cache, "read_file", json!({"p": 1}), "1", &mut runs);
    assert_eq!(runs, before, "recently used entry kept");
    call(&cache, "read_file", json!({"p": 2}), "2", &mut runs);
    assert_eq!(runs, before + 1, "least recently used entry evicted");

    let big = "x".repeat(5_000);
    call(&cache, "read_file", json!({"p": "big"}), &big, &mut runs);
    call(&cache, "read_file", json!({"p": "big"}), &big, &mut runs);
    assert_eq!(runs, before + 3, "oversized results are not stored");

    let args = json!({"p": "err"});
    assert_eq!(cache.before_call("read_file", &args), CacheLookup::Miss);
    cache.after_call("read_file", &args, ToolOutput::error("boom"));
    assert_eq!(
        cache.before_call("read_file", &args),
        CacheLookup::Miss,
        "errors are not cached"
    );

    let disabled = EvidenceCache::new(EvidenceCacheConfig {
        ttl: Duration::ZERO,
        ..EvidenceCacheConfig::default()
    });
    let mut runs = 0;
    for _ in 0..5 {
        call(&disabled, "read_file", json!({}), "x", &mut runs);
    }
    assert_eq!(runs, 5, "TTL 0 disables reuse");
}

#[test]
fn web_search_results_are_evidence_and_finding_mcp_tools_keeps_them() {
    use braincode_tools::evidence::{is_cacheable, is_mutating};
    for name in [
        "web_search",
        "mcp__tavily__tavily_search",
        "mcp__web__tavily_extract",
        "mcp__tavily__tavily_crawl",
        "mcp__tavily__tavily_map",
    ] {
        assert!(is_cacheable(name), "{name}");
    }
    assert!(!is_mutating("mcp_search"));
    assert!(!is_mutating("dispatch_specialist"));
    assert!(is_mutating("mcp__tavily__tavily_write_report"));

    let cache = EvidenceCache::default();
    let mut runs = 0;
    let query = json!({"query": "rust 2024 edition"});
    call(
        &cache,
        "mcp__tavily__tavily_search",
        query.clone(),
        "R",
        &mut runs,
    );
    // An agent looking for other MCP tools in between does not make the results stale.
    assert_eq!(
        cache.before_call("mcp_search", &json!({"query": "browser"})),
        CacheLookup::Miss
    );
    cache.after_call(
        "mcp_search",
        &json!({"query": "browser"}),
        ToolOutput::ok("…"),
    );
    let (again, _) = call(
        &cache,
        "mcp__tavily__tavily_search",
        query,
        "other",
        &mut runs,
    );
    assert_eq!(again.content, "R");
    assert_eq!(runs, 1);
    assert_eq!(cache_details(&again)["reused"], true);
}
