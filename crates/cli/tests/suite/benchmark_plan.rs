//! `braincode benchmark plan` through the binary: every built-in task passes on the
//! heuristic (so its expectations are tests of the heuristic too), a task list can be chosen,
//! an unknown id is an error, and a wrong expectation fails with what was expected and got.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{braincode, repo};
use braincode_test_support::TempHome;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_task_passes_on_the_heuristic() {
    let home = TempHome::new();
    let repo = repo();
    let out = braincode(&home, repo.path(), &["benchmark", "plan", "--json"]).await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["failed"], 0, "{report:#}");
    let outcomes = report["outcomes"].as_array().unwrap();
    assert!(outcomes.len() >= 30, "{}", outcomes.len());
    let ids: Vec<&str> = outcomes
        .iter()
        .map(|o| o["task"].as_str().unwrap())
        .collect();
    for reference in [
        "readme-edit",
        "failing-test-fix",
        "auth-risk-change",
        "package-change",
        "security-review-only",
    ] {
        assert!(ids.contains(&reference), "{reference}");
    }
    let zh = outcomes.iter().filter(|o| o["lang"] == "zh").count();
    assert!(zh >= 8, "{zh}");
    // Every plan got the structural checks.
    for outcome in outcomes {
        let checks: Vec<&str> = outcome["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert!(
            checks.contains(&"todo_coverage") && checks.contains(&"context_isolation"),
            "{outcome}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_can_be_chosen_and_unknown_ids_are_errors() {
    let home = TempHome::new();
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &["benchmark", "plan", "greeting-zh", "vague-fix", "--json"],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["tasks"], 2);
    let out = braincode(
        &home,
        repo.path(),
        &["benchmark", "plan", "greeting-zh", "nope"],
    )
    .await;
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("Unknown benchmark task id(s): nope"),
        "{}",
        out.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_expectation_fails_with_what_was_expected_and_got() {
    let home = TempHome::new();
    let repo = repo();
    let file = home.write_json(
        "my-tasks.json",
        &json!({"tasks": [{"id": "mine", "lang": "en", "prompt": "hello there",
            "primary": ["frontend"], "roles": ["security"], "fastPath": false}]}),
    );
    let out = braincode(
        &home,
        repo.path(),
        &[
            "benchmark",
            "plan",
            "mine",
            "--tasks-file",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    for expected in [
        "primary_role: expected one of [frontend], got rush",
        "plan_roles: missing [security] in [rush]",
        "fast_path: expected fast path false, got true",
        "0 of 1 plan(s) passed",
    ] {
        assert!(out.stdout.contains(expected), "{expected}\n{}", out.stdout);
    }
    // A malformed task file says so.
    let bad = home.write_json("bad.json", &json!({"tasks": [{"id": "x"}]}));
    let out = braincode(
        &home,
        repo.path(),
        &["benchmark", "plan", "--tasks-file", bad.to_str().unwrap()],
    )
    .await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("is not a task file"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_plans_every_task_with_both_brains() {
    let home = TempHome::new();
    let repo = repo();
    let out = braincode(
        &home,
        repo.path(),
        &[
            "benchmark",
            "plan",
            "greeting-en",
            "auth-risk-change",
            "--compare",
            "brain",
            "openai",
            "--json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let brains: Vec<&str> = report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["brain"].as_str().unwrap())
        .collect();
    assert_eq!(brains, ["brain", "brain", "openai", "openai"]);
    let out = braincode(
        &home,
        repo.path(),
        &["benchmark", "plan", "--compare", "brain", "nope"],
    )
    .await;
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("nope"), "{}", out.stderr);
}
