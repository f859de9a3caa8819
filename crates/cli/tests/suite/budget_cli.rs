//! Hard budgets through the binary: a run whose model keeps working stops once its calls
//! used `--max-tokens` tokens or cost `--max-cost` dollars — no model is asked again, the one
//! answer says why and what was done, the status is `budget_exceeded` (exit 7) — and a replay
//! stops at the same record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{self, BRAIN_ROLES, braincode, journal, replay_check, repo};
use braincode_protocol::{ModelPricing, Usage};
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::{Value, json};

/// A home whose every role runs `test/any`, priced at $3 / $15 per million tokens.
fn priced_home(server: &ScriptedServer) -> TempHome {
    let home = TempHome::new();
    let mut model = scripted_model_entry("test/any", &server.base_url());
    model.pricing = Some(ModelPricing {
        input: 3.0,
        output: 15.0,
        cache_read: None,
        cache_write: None,
    });
    home.write_models(&[model]);
    let roles: serde_json::Map<String, Value> = BRAIN_ROLES
        .iter()
        .map(|r| {
            (
                (*r).to_string(),
                json!({"modelId": "test/any", "fallbackModelIds": []}),
            )
        })
        .collect();
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/any", "fallbackModelIds": []},
        "roles": roles, "routing": {"maxParallelAgents": 1}
    }]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test"}));
    home
}

/// A model that never stops reading, each call reporting `input` prompt tokens.
async fn endless_reader(input: u64) -> ScriptedServer {
    ScriptedServer::start(
        Script::new().always(
            Matcher::model("any"),
            Reply::tool_call("read_file", json!({"path": "src/token.rs"}))
                .with_usage(Usage::new(input, 100, 0, 0)),
        ),
    )
    .await
}

/// `braincode run --heuristic <flags…>` with a question that keeps the model reading.
async fn ask(
    home: &TempHome,
    repo: &braincode_test_support::TempRepo,
    flags: &[&str],
) -> run_harness::Output {
    let mut args = vec!["run", "--heuristic"];
    args.extend_from_slice(flags);
    args.push("what does the token check in src/token.rs do");
    braincode(home, repo.path(), &args).await
}

fn token_records(records: &[Value]) -> u64 {
    records
        .iter()
        .filter(|r| r["type"] == "token_usage")
        .map(|r| r["usage"]["total"].as_u64().unwrap())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_budget_stops_the_run_with_one_answer_and_replays_identically() {
    let server = endless_reader(900).await;
    let home = priced_home(&server);
    let repo = repo();
    let out = ask(&home, &repo, &["--json", "--max-tokens", "2500"]).await;
    assert_eq!(out.code, 7, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["status"], "budget_exceeded");
    let answer = report["modelSummary"].as_str().unwrap();
    assert!(answer.contains("budget reached"), "{answer}");
    assert!(answer.contains("the limit is 2500"), "{answer}");

    // The call that crossed the limit was the last one any model got.
    let session = report["sessionId"].as_str().unwrap();
    let records = journal(&home, session);
    let used = token_records(&records);
    assert!(used >= 2500, "{used}");
    assert!(
        used < 2500 + 1000,
        "calls went on after the limit: {used} tokens"
    );
    assert_eq!(server.chat_requests().len(), 3, "{used}");
    let start = records.iter().find(|r| r["type"] == "run_start").unwrap();
    assert_eq!(start["maxTokens"], 2500);
    let end = records.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["status"], "budget_exceeded");

    // A replay stops at the same record, with no model and no budget flag.
    let before = server.requests().len();
    replay_check(&home, repo.path(), session, &[]).await;
    assert_eq!(server.requests().len(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cost_budget_counts_dollars_from_the_catalogue_prices() {
    // Each call: 100,000 × $3 + 100 × $15 per million = $0.3015.
    let server = endless_reader(100_000).await;
    let home = priced_home(&server);
    let repo = repo();
    let out = ask(&home, &repo, &["--max-cost", "$0.50"]).await;
    assert_eq!(out.code, 7, "{}\n{}", out.stderr, out.stdout);
    assert!(
        out.stdout.contains("$0.6030 spent, the limit is $0.5000"),
        "{}",
        out.stdout
    );
    assert_eq!(server.chat_requests().len(), 2);

    let bad = braincode(&home, repo.path(), &["run", "--max-cost", "free", "hi"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("not an amount"), "{}", bad.stderr);
    let bad = braincode(&home, repo.path(), &["run", "--max-tokens", "0", "hi"]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_brains_own_budget_stops_its_runs_and_a_flag_can_only_lower_it() {
    let server = endless_reader(900).await;
    let home = priced_home(&server);
    // The same brain with a token budget of its own, inherited by a child that adds a cost one.
    let mut brains: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("brains.json")).unwrap())
            .unwrap();
    brains["brains"][0]["budget"] = json!({"maxTokens": 2500});
    brains["brains"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "capped", "extends": "test", "budget": {"maxCostUsd": 100}}));
    home.write_brains(&brains);
    let repo = repo();

    let out = ask(&home, &repo, &["--json"]).await;
    assert_eq!(out.code, 7, "{}\n{}", out.stderr, out.stdout);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        report["modelSummary"]
            .as_str()
            .unwrap()
            .contains("the limit is 2500")
    );
    assert_eq!(server.chat_requests().len(), 3);
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let start = records.iter().find(|r| r["type"] == "run_start").unwrap();
    // The journal says which limit the run ran under, so a replay stops at the same call.
    assert_eq!(start["maxTokens"], 2500);

    // A larger flag does not lift the brain's limit; a smaller one lowers it.
    let out = ask(&home, &repo, &["--json", "--max-tokens", "100000"]).await;
    assert_eq!(out.code, 7);
    assert_eq!(server.chat_requests().len(), 6);
    let out = ask(&home, &repo, &["--json", "--max-tokens", "1500"]).await;
    assert_eq!(out.code, 7);
    assert_eq!(server.chat_requests().len(), 8);

    // The child inherits the token limit and adds its own cost limit.
    let out = ask(&home, &repo, &["--json", "--brain", "capped"]).await;
    assert_eq!(out.code, 7);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let start = records.iter().find(|r| r["type"] == "run_start").unwrap();
    assert_eq!(start["maxTokens"], 2500);
    assert_eq!(start["maxCostUsd"], 100.0);

    // A budget of 0 is refused where it is written.
    brains["brains"][0]["budget"] = json!({"maxTokens": 0});
    home.write_brains(&brains);
    let bad = ask(&home, &repo, &[]).await;
    assert_ne!(bad.code, 0);
    assert!(
        bad.stdout
            .contains("brains[0].budget.maxTokens: a budget limit must be a positive number"),
        "{}",
        bad.stdout
    );
}

/// Parallel workers: the security worker finishes fast, the qa worker keeps reading until the
/// budget is crossed. The answer's "done before it stopped" list is the report's own list, and
/// a replay, where calls are served from the journal in whatever order, stops at the same call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_stop_among_parallel_workers_replays_identically_and_lists_the_same_workers() {
    use run_harness::{configure, worker_reply};
    let plan = Reply::json(&json!({
        "role": "backend",
        "workers": [
            {"role": "security", "goal": "Assess the token validation", "reason": "auth code"},
            {"role": "qa", "goal": "List the tests that cover tokens", "reason": "verification"}
        ],
        "todos": [],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "confidence": 0.8, "reason": "two views"
    }))
    .with_usage(Usage::new(100, 10, 0, 0));
    for round in 0..3 {
        let script = Script::new()
            .when(Matcher::model("router"), [plan.clone()])
            .when(
                Matcher::model("security"),
                [worker_reply("Empty tokens pass: reject them")
                    .with_usage(Usage::new(300 + 600 * round, 10, 0, 0))
                    .delayed(std::time::Duration::from_millis(150 * round))],
            )
            .always(
                Matcher::model("qa"),
                Reply::tool_call("read_file", json!({"path": "src/token.rs"}))
                    .with_usage(Usage::new(400, 10, 0, 0))
                    .delayed(std::time::Duration::from_millis(40)),
            )
            .always(
                Matcher::model("backend"),
                Reply::tool_call("read_file", json!({"path": "src/token.rs"}))
                    .with_usage(Usage::new(400, 10, 0, 0)),
            );
        let server = ScriptedServer::start(script).await;
        let home = TempHome::new();
        configure(&home, &server, &[], &[]);
        let repo = repo();
        let out = braincode(
            &home,
            repo.path(),
            &[
                "run",
                "--json",
                "--max-tokens",
                "2000",
                "check the token validation",
            ],
        )
        .await;
        assert_eq!(out.code, 7, "{}\n{}", out.stderr, out.stdout);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let answer = report["modelSummary"].as_str().unwrap();
        let completed: Vec<&str> = report["routing"]["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| w["status"] == "completed")
            .map(|w| w["role"].as_str().unwrap())
            .collect();
        for role in &completed {
            assert!(
                answer.contains(&format!("- {role} (completed)")),
                "round {round}: the report lists {role} as completed, the answer does not:\n{answer}\n{}",
                serde_json::to_string_pretty(&report["routing"]["workers"]).unwrap()
            );
        }
        if completed.is_empty() {
            assert!(answer.contains("No worker had finished"), "{answer}");
        }
        // The stop is journaled once, right after the call that crossed the limit.
        let session = report["sessionId"].as_str().unwrap();
        let records = journal(&home, session);
        let stops: Vec<usize> = (0..records.len())
            .filter(|&i| {
                records[i]["type"] == "warning"
                    && records[i]["message"]
                        .as_str()
                        .unwrap()
                        .starts_with("budget reached")
            })
            .collect();
        assert_eq!(stops.len(), 1, "{records:#?}");
        assert_eq!(records[stops[0] - 1]["type"], "token_usage");
        replay_check(&home, repo.path(), session, &[]).await;
    }
}
