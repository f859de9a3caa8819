//! `braincode run --team-test`: every routed role answers the task on its own, the router is
//! never asked, and the run still gives one answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{braincode, configure, journal, repo, review_reply};
use braincode_protocol::Role;
use braincode_test_support::{CallKind, Matcher, Reply, Script, ScriptedServer, TempHome};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_routed_role_answers_and_the_router_is_skipped() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::text("the router must not be asked"),
            )
            .always(Matcher::kind(CallKind::Review), review_reply("approved"))
            .always(
                Matcher::kind(CallKind::Support),
                Reply::json(&json!({
                    "taskId": "t", "parentId": "p",
                    "progress": {"status": "completed", "summary": "answered"},
                    "summary": "my own answer", "artifacts": [], "risks": [], "nextQuestions": []
                })),
            )
            .always(
                Matcher::kind(CallKind::Primary),
                Reply::text("Team answer."),
            ),
    )
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let project = repo();
    let output = braincode(
        &home,
        project.path(),
        &["run", "--team-test", "--json", "which role are you?"],
    )
    .await;
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: serde_json::Value = serde_json::from_str(&output.stdout).unwrap();
    assert_eq!(report["modelSummary"], "Team answer.");
    let session = report["sessionId"].as_str().unwrap();
    let records = journal(&home, session);
    let routing = records.iter().find(|r| r["type"] == "routing").unwrap();
    assert!(
        routing.to_string().contains("team test"),
        "the plan says why: {routing}"
    );
    let started: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "worker_start")
        .map(|r| r["worker"].as_str().unwrap().to_string())
        .collect();
    for role in Role::ROUTED {
        assert!(
            started.contains(&role.as_str().to_string()),
            "{role} answered: {started:?}"
        );
    }
    assert_eq!(
        started.len(),
        Role::ROUTED.len(),
        "each role once: {started:?}"
    );
    assert!(
        crate::run_harness::model_requests(&server, "router").is_empty(),
        "the router was asked"
    );
    let run_start = records.iter().find(|r| r["type"] == "run_start").unwrap();
    assert_eq!(run_start["routingChoice"], "team-test");
}
