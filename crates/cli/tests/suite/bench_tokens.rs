//! `braincode bench tokens --json`: the isolation benchmark runs through the binary, reports
//! both strategies over the same requests, and the shared transcript costs more than strict
//! isolation (a property of the method: every shared request carries its isolated request).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use braincode_test_support::TempHome;
use serde_json::Value;

#[test]
fn bench_tokens_reports_isolated_and_shared_figures() {
    let home = TempHome::new();
    let out = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args(["bench", "tokens", "--json"])
        .env("BRAINCODE_HOME", home.path())
        .current_dir(home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench tokens failed: {stderr}");
    let figures: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|err| panic!("not JSON ({err}): {}", String::from_utf8_lossy(&out.stdout)));

    assert_eq!(figures["runs"], 1);
    assert!(
        figures["method"]
            .as_str()
            .unwrap()
            .starts_with("shared transcript: computed from the same run's requests")
    );
    assert!(figures["tokenMethod"].as_str().unwrap().contains("chars/4"));
    // Router, four support workers, the primary and the review, each its own session.
    assert_eq!(figures["agents"], 7, "{figures:#}");
    let agents = figures["perAgent"].as_array().unwrap();
    assert_eq!(agents.len(), 7);
    assert_eq!(agents[0]["agent"], "router");
    assert!(agents.iter().any(|a| a["agent"] == "backend (primary)"));
    assert!(agents.iter().any(|a| a["agent"] == "review (review)"));
    assert!(figures["toolCalls"].as_u64().unwrap() >= 10, "{figures:#}");
    assert!(figures["repoFiles"].as_u64().unwrap() >= 30);

    let strategies = figures["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 2);
    let (isolated, shared) = (&strategies[0], &strategies[1]);
    assert_eq!(isolated["strategy"], "strict_isolation");
    assert_eq!(shared["strategy"], "shared_transcript");
    // The same requests, counted two ways.
    assert_eq!(isolated["requests"], shared["requests"]);
    assert!(isolated["requests"].as_u64().unwrap() > 7);
    for key in ["inputTokens", "requestBytes"] {
        let (a, b) = (
            isolated[key].as_u64().unwrap(),
            shared[key].as_u64().unwrap(),
        );
        assert!(a > 0 && b > a, "{key}: isolated {a}, shared {b}");
    }
    let ratio = figures["ratioInputTokens"].as_f64().unwrap();
    assert!(ratio > 0.0 && ratio < 1.0, "ratio {ratio}");
    assert!(figures["ratioRequestBytes"].as_f64().unwrap() < 1.0);
    assert!(figures["goalMet"].is_boolean());
    // The first agent has nobody before it: both strategies agree on it.
    assert_eq!(
        agents[0]["isolatedInputTokens"],
        agents[0]["sharedInputTokens"]
    );
}
