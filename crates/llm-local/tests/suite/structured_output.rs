//! Grammar-constrained structured output: over many varied prompts the reply always parses as
//! JSON and validates against its schema (enums, nested objects, bounded arrays and strings).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{client, complete, validate};
use braincode_llm::{ChatMessage, ChatRequest, ResponseSchema, StopReason};
use serde_json::{Value, json};

fn router_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "roles": {
                "type": "array",
                "items": {"enum": ["frontend", "backend", "dba", "security", "qa", "review", "librarian", "oracle"]},
                "minItems": 1,
                "maxItems": 3,
                "uniqueItems": true
            },
            "mode": {"enum": ["solo", "parallel", "sequential"]},
            "reason": {"type": "string", "minLength": 1, "maxLength": 40}
        },
        "required": ["roles", "mode", "reason"],
        "additionalProperties": false
    })
}

fn worker_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "status": {"enum": ["completed", "blocked", "failed"]},
            "summary": {"type": "string", "minLength": 1, "maxLength": 48},
            "findings": {
                "type": "array",
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "maxLength": 24},
                        "line": {"type": "integer", "minimum": 1, "maximum": 5000},
                        "severity": {"enum": ["low", "medium", "high"]}
                    },
                    "required": ["file", "severity"],
                    "additionalProperties": false
                }
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "needsReview": {"type": "boolean"}
        },
        "required": ["status", "summary", "findings", "confidence", "needsReview"],
        "additionalProperties": false
    })
}

fn review_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {"enum": ["approved", "changes_requested"]},
            "issues": {"type": "array", "items": {"type": "string", "maxLength": 32}, "maxItems": 3},
            "note": {"type": ["string", "null"], "maxLength": 32}
        },
        "required": ["decision", "issues"]
    })
}

async fn check_all(name: &str, schema: Value, system: &str, prompts: &[&str]) {
    let client = client();
    for prompt in prompts {
        let request = ChatRequest {
            system: Some(system.to_string()),
            messages: vec![ChatMessage::user_text(*prompt)],
            max_tokens: Some(320),
            response_schema: Some(ResponseSchema {
                name: name.to_string(),
                schema: schema.clone(),
            }),
            ..ChatRequest::default()
        };
        let done = complete(&client, request).await.unwrap();
        assert_eq!(
            done.stop,
            Some(StopReason::EndTurn),
            "{name} / {prompt:?}: the grammar must complete before the cap: {}",
            done.text
        );
        let value: Value = serde_json::from_str(&done.text)
            .unwrap_or_else(|err| panic!("{name} / {prompt:?}: not JSON ({err}): {}", done.text));
        if let Err(violation) = validate(&schema, &value, "#") {
            panic!("{name} / {prompt:?}: {violation}\n{}", done.text);
        }
        // A raw newline can only be free whitespace (JSON escapes it inside strings).
        assert!(
            !done.text.contains('\n'),
            "compact JSON expected: {}",
            done.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_decisions_always_validate() {
    check_all(
        "router_decision",
        router_schema(),
        "You route coding tasks to specialist roles. Answer with JSON only.",
        &[
            "Add a dark mode toggle to the settings page.",
            "The orders table query takes 9 seconds; add an index.",
            "Audit the login endpoint for SQL injection.",
            "Write unit tests for the date parser.",
            "Rename the HTTP client module and update imports.",
            "Document the public API of the billing service.",
            "Why does the build fail on ARM machines?",
            "Migrate the users table to add an email_verified column and expose it in the REST API.",
            "Review my pull request that refactors the cache layer.",
            "Make the landing page load faster on mobile.",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_results_always_validate() {
    check_all(
        "worker_result",
        worker_schema(),
        "You are a code worker. Report your result as JSON only.",
        &[
            "Task: check src/main.rs for unused imports. Result: two unused imports on lines 3 and 7.",
            "Task: run the tests. Result: all 42 tests passed.",
            "Task: fix the null pointer in parser.c. You could not reproduce it.",
            "Task: find hard-coded passwords. Found one in config/dev.yaml line 12.",
            "Task: upgrade serde. The upgrade failed because of a version conflict.",
            "Task: summarize README.md. It explains installation and usage.",
            "Task: check the SQL migration 004_add_index.sql for locking problems.",
            "Task: measure the startup time. It is 120 ms.",
            "Task: look for TODO comments in lib.rs. There are none.",
            "Task: verify the CSS builds. The build is blocked waiting for the design tokens.",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_verdicts_always_validate() {
    check_all(
        "review",
        review_schema(),
        "You review code changes. Answer with JSON only.",
        &[
            "The change adds input validation and tests. Looks good.",
            "The patch deletes error handling in the file reader.",
            "A new endpoint returns user emails without authentication.",
            "Only comments and formatting changed.",
        ],
    )
    .await;
}
