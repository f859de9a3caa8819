//! One glitch of the model's stream must not fail a run: the same model is asked again (a model
//! call has no side effects), each retry is journaled, and the answer is the good one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::run_harness::{configure_one_model as configure, journal, run_json};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_after_content_is_asked_again_and_journaled() {
    let script = Script::new().when(
        Matcher::model("any"),
        [
            Reply::text("half an answ").cut_mid_stream(),
            Reply::text("the whole answer"),
        ],
    );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server);
    let repo = TempRepo::new();
    let report = run_json(&home, repo.path(), &[], "hello there", &[]).await;
    assert_eq!(report["modelSummary"], "the whole answer", "{report}");
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    let retries: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "model_retry")
        .collect();
    assert_eq!(retries.len(), 1, "{records:?}");
    assert_eq!(retries[0]["kind"], "stream_interrupted");
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(server.chat_requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_glitch_before_any_content_is_retried_by_the_client_and_journaled() {
    let script = Script::new().when(
        Matcher::model("any"),
        [
            Reply::http_error(503, "{\"error\":{\"message\":\"overloaded\"}}"),
            Reply::text("answered after a retry"),
        ],
    );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server);
    let repo = TempRepo::new();
    let report = run_json(&home, repo.path(), &[], "hello there", &[]).await;
    assert_eq!(report["modelSummary"], "answered after a retry");
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "model_retry" && r["kind"] == "server"),
        "{records:?}"
    );
}

/// An answer that stopped at the output token limit says so (one `Warning:` line), and the
/// journal keeps it, so a replay says it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_stopped_by_its_token_limit_says_it_may_be_cut() {
    let script = Script::new().always(
        Matcher::model("any"),
        Reply::text("The greeting is printed by the main function, which then")
            .with_stop(braincode_llm::StopReason::MaxTokens),
    );
    let server = ScriptedServer::start(script).await;
    let home = TempHome::new();
    configure(&home, &server);
    let repo = TempRepo::new();
    let report = run_json(&home, repo.path(), &[], "hello there", &[]).await;
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("stopped at its output token limit"),
        "{report:#}"
    );
    let records = journal(&home, report["sessionId"].as_str().unwrap());
    assert!(
        records
            .iter()
            .any(|r| r["type"] == "model_reply" && r["cut"] == true)
    );
}
