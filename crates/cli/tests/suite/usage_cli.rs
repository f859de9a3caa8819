//! `braincode usage` through the binary: after real runs against the scripted model, its
//! totals are the sum of the journals' `token_usage` records, grouped as asked, costed with the
//! prices in models.json; a model without a price is counted and named, never costed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{BRAIN_ROLES, braincode, journal, repo, run_json};
use braincode_protocol::{ModelPricing, Usage};
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_totals_equal_the_journals_and_are_priced_per_model() {
    let script = Script::new()
        .always(
            Matcher::model("priced"),
            Reply::text("hello!").with_usage(Usage {
                reasoning: 120,
                ..Usage::new(2_000, 500, 1_000, 0)
            }),
        )
        .always(
            Matcher::model("free"),
            Reply::text("hi!").with_usage(Usage::new(300, 20, 0, 0)),
        );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    let mut priced = scripted_model_entry("test/priced", &server.base_url());
    priced.pricing = Some(ModelPricing {
        input: 3.0,
        output: 15.0,
        cache_read: Some(0.3),
        cache_write: None,
    });
    let free = scripted_model_entry("test/free", &server.base_url());
    home.write_models(&[priced, free]);
    let brain = |model: &str| {
        let roles: serde_json::Map<String, Value> = BRAIN_ROLES
            .iter()
            .map(|r| {
                (
                    (*r).to_string(),
                    json!({"modelId": model, "fallbackModelIds": []}),
                )
            })
            .collect();
        json!({"id": model.replace('/', "-"), "extends": "brain", "name": model,
            "planner": {"modelId": model, "fallbackModelIds": []}, "roles": roles})
    };
    home.write_brains(&json!({"brains": [brain("test/priced"), brain("test/free")]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test-priced"}));
    let repo = repo();

    let mut sessions = Vec::new();
    for (brain, prompt) in [
        ("test-priced", "hello there"),
        ("test-priced", "hello again"),
        ("test-free", "hello from the free one"),
    ] {
        let report = run_json(&home, repo.path(), &["--brain", brain], prompt, &[]).await;
        sessions.push(report["sessionId"].as_str().unwrap().to_string());
    }

    // What the journals say, summed by hand.
    let mut expected: std::collections::BTreeMap<String, (u64, u64, u64)> = Default::default();
    for session in &sessions {
        for record in journal(&home, session) {
            if record["type"] == "token_usage" {
                let entry = expected
                    .entry(record["modelId"].as_str().unwrap().to_string())
                    .or_default();
                entry.0 += 1;
                entry.1 += record["usage"]["input"].as_u64().unwrap();
                entry.2 += record["usage"]["output"].as_u64().unwrap();
            }
        }
    }
    assert_eq!(expected.len(), 2, "{expected:?}");
    // Each call's record carries its cost when its model has a price, and the run's report
    // adds them up.
    let first = journal(&home, &sessions[0]);
    let priced_costs: Vec<u64> = first
        .iter()
        .filter(|r| r["type"] == "token_usage")
        .map(|r| r["costMicroUsd"].as_u64().unwrap())
        .collect();
    assert!(
        priced_costs.iter().all(|c| *c == 13_800),
        "{priced_costs:?}"
    );
    let report = first.iter().find(|r| r["type"] == "final_report").unwrap();
    let tokens = &report["finalReport"]["metrics"]["tokens"];
    assert_eq!(tokens["costMicroUsd"], 13_800 * priced_costs.len() as u64);
    let free = journal(&home, &sessions[2]);
    assert!(
        free.iter()
            .filter(|r| r["type"] == "token_usage")
            .all(|r| r["costMicroUsd"].is_null())
    );

    let out = braincode(&home, repo.path(), &["usage", "--by", "model", "--json"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(summary["sessions"], 3);
    for row in summary["rows"].as_array().unwrap() {
        let (calls, input, output) = expected[row["key"].as_str().unwrap()];
        assert_eq!(row["calls"], calls, "{row:#}");
        assert_eq!(row["usage"]["input"], input, "{row:#}");
        assert_eq!(row["usage"]["output"], output, "{row:#}");
    }
    let (priced_calls, _, _) = expected["test/priced"];
    // Reasoning tokens, part of the output, are counted apart from the provider's report.
    let reasoning: u64 = summary["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["usage"]["reasoning"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(reasoning, 120 * priced_calls);
    let cost = summary["total"]["costUsd"].as_f64().unwrap();
    // Each priced call: 2,000 × $3 + 500 × $15 + 1,000 cache reads × $0.30, per million.
    let per_call = (2_000.0 * 3.0 + 500.0 * 15.0 + 1_000.0 * 0.3) / 1e6;
    assert!(
        (cost - per_call * priced_calls as f64).abs() < 1e-9,
        "{cost}"
    );
    assert_eq!(summary["unpricedModels"], json!(["test/free"]));

    // The table names the unpriced model; a bad --by or --since is an error that says why.
    let out = braincode(&home, repo.path(), &["usage", "--by", "role"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("total"), "{}", out.stdout);
    assert!(out.stdout.contains("reasoning"), "{}", out.stdout);
    assert!(
        out.stdout.contains("no price for test/free"),
        "{}",
        out.stdout
    );
    let out = braincode(&home, repo.path(), &["usage", "--by", "colour"]).await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a grouping"), "{}", out.stderr);
    let out = braincode(&home, repo.path(), &["usage", "--since", "yesterday"]).await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a time"), "{}", out.stderr);
    // Nothing since a future day.
    let out = braincode(
        &home,
        repo.path(),
        &["usage", "--since", "2099-01-01", "--json"],
    )
    .await;
    let later: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(later["total"]["calls"], 0);
}
