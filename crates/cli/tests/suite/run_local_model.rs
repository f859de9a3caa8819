//! One full `braincode run` on the embedded local model, in a real temporary git repository:
//! no configuration beyond pointing at the shared cached model, no network, no API key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use braincode_test_support::{TempHome, TempRepo};
use serde_json::{Value, json};

#[test]
fn a_full_run_on_the_embedded_model_answers_and_journals() {
    let model = braincode_llm_local::shared_test_model().expect("the shared test model");
    let home = TempHome::new();
    // The default brain runs every role on local/smollm2; only the file location is set, so
    // the test never downloads anything. Two threads keep the output reproducible here.
    home.write_json(
        "models.json",
        &json!({"models": [{
            "id": "local/smollm2", "provider": "local", "modelId": "SmolLM2-135M-Instruct-Q4_1",
            "api": "local", "contextWindow": 8192, "supportsTools": false,
            "path": model, "threads": 2
        }]}),
    );
    let repo = TempRepo::new();
    repo.write(
        "README.md",
        "# Greeter\nA tiny library that prints greetings.\n",
    );
    repo.write(
        "src/lib.rs",
        "pub fn greet(name: &str) -> String { format!(\"Hello, {name}!\") }\n",
    );
    repo.commit("greeter");

    let output = Command::new(env!("CARGO_BIN_EXE_braincode"))
        .args([
            "run",
            "--json",
            "What does src/lib.rs in this repository do?",
        ])
        .current_dir(repo.path())
        .env("BRAINCODE_HOME", home.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr:\n{stderr}\nstdout:\n{stdout}"
    );
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["status"], "answered",
        "the local model has no tools, so it answers: {report}"
    );
    assert!(!report["modelSummary"].as_str().unwrap().trim().is_empty());
    assert_eq!(report["brain"]["id"], "brain");

    let session = report["sessionId"].as_str().unwrap();
    let journal = std::fs::read_to_string(
        home.path()
            .join("sessions")
            .join(format!("{session}.jsonl")),
    )
    .unwrap();
    let records: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(*types.last().unwrap(), "run_end");
    assert!(
        types.contains(&"routing") && types.contains(&"todo_plan") && types.contains(&"run_start"),
        "{types:?}"
    );
    // Every model call ran on the embedded model and was counted.
    let usage: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "token_usage")
        .collect();
    assert!(!usage.is_empty());
    assert!(
        usage
            .iter()
            .all(|u| u["modelId"] == "local/smollm2" && u["usage"]["input"].as_u64().unwrap() > 0)
    );
    // When the router answered, the grammar made its plan valid; when it did not, the reason
    // is recorded. Either way the run says which.
    let routing = records.iter().find(|r| r["type"] == "routing").unwrap();
    assert!(
        routing["source"] == "router-brain" || routing["fallbackReason"].is_string(),
        "{routing}"
    );
    // Support workers answered through the worker-result grammar (the primary's end carries
    // no result packet: its answer is the run's).
    for end in records
        .iter()
        .filter(|r| r["type"] == "worker_end" && r["phase"] != "primary")
    {
        assert!(end["result"]["summary"].is_string(), "{end}");
    }
}
