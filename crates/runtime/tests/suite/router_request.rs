//! The routing request a run sends, as the provider gets it: small for a short task (a size
//! budget, not a timing), and the reply schemas keep the strictness providers saw before
//! (the router's strict, the worker's and the reviewer's not).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{CallKind, Matcher, Reply, Script, TestRun, router_decision_json};
use braincode_context::{review_result_schema, worker_result_schema};
use braincode_llm::{ChatMessage, ChatRequest, ContentPart, wire::is_strict_compatible};
use braincode_protocol::Role;

/// Most bytes of the whole router request (`serde_json::to_vec(&ChatRequest)`: system prompt,
/// the user turn and the reply schema) for a short task in a small repository. It was about
/// 6.8 KB before the prompt and the schema were compacted.
const ROUTER_REQUEST_BUDGET: usize = 3 * 1024;

async fn router_request(prompt: &str) -> ChatRequest {
    let outcome = TestRun::new(prompt)
        .file("calc.py", "def add(a, b):\n    return a - b\n")
        .file(
            "test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .git_repo()
        .script(
            Script::new()
                .always(
                    Matcher::router(),
                    Reply::json(&router_decision_json(Role::Qa, &[])),
                )
                .always(Matcher::any(), Reply::text("Fixed: add adds.")),
        )
        .run()
        .await;
    let router: Vec<_> = outcome
        .requests
        .calls()
        .iter()
        .filter(|call| call.kind() == CallKind::Router)
        .collect();
    assert_eq!(router.len(), 1, "one routing request");
    router[0].request.clone()
}

fn user_text(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::User { content } => Some(content),
            _ => None,
        })
        .flatten()
        .filter_map(|part| match part {
            ContentPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_short_task_routes_with_a_small_request() {
    let request = router_request("Fix the failing test in calc.py").await;
    let total = serde_json::to_vec(&request).unwrap().len();
    let system = request.system.as_deref().unwrap_or_default().len();
    let user = user_text(&request).len();
    let schema = request
        .response_schema
        .as_ref()
        .map_or(0, |s| serde_json::to_vec(&s.schema).unwrap().len());
    eprintln!("router request: {total} bytes (system {system}, user {user}, schema {schema})");
    assert!(
        total <= ROUTER_REQUEST_BUDGET,
        "the router request is {total} bytes (system {system}, user {user}, schema {schema}); \
         the budget is {ROUTER_REQUEST_BUDGET}"
    );
    // Small, and still complete: the task, every routed role, the reply schema.
    let text = user_text(&request);
    assert!(text.ends_with("Fix the failing test in calc.py"), "{text}");
    for role in Role::ROUTED {
        assert!(
            text.contains(&format!("- {role}: ")),
            "{role} missing:\n{text}"
        );
    }
    assert_eq!(
        request.response_schema.as_ref().map(|s| s.name.as_str()),
        Some("router_decision")
    );
}

#[tokio::test]
async fn reply_schemas_keep_their_strictness() {
    let request = router_request("Fix the failing test in calc.py").await;
    let router = request.response_schema.unwrap().schema;
    assert!(is_strict_compatible(&router), "{router}");
    // Optional ids and finding fields: sent without strict mode, as before.
    assert!(!is_strict_compatible(&worker_result_schema()));
    assert!(!is_strict_compatible(&review_result_schema()));
}
