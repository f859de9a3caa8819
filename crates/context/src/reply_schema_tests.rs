//! The derived reply schemas are bounded, and the normalizers read every field of the reply
//! structs the schemas are derived from, and only those name the schemas' properties.

use super::*;
use crate::{HandoffPacketExt, normalize_review_decision, normalize_worker_result};
use braincode_protocol::{ContextId, HandoffPacket, Role, WorkerPhase};
use serde_json::json;

/// Asserts that every array, object and free string in `schema` is bounded.
fn assert_bounded(schema: &Value) {
    match schema {
        Value::Object(map) => {
            match map.get("type").and_then(Value::as_str) {
                Some("array") => assert!(map.contains_key("maxItems"), "{schema}"),
                Some("object") => {
                    assert_eq!(map.get("additionalProperties"), Some(&Value::Bool(false)));
                }
                Some("string") if !map.contains_key("enum") => {
                    assert!(map.contains_key("maxLength"), "{schema}");
                }
                _ => {}
            }
            map.values().for_each(assert_bounded);
        }
        Value::Array(items) => items.iter().for_each(assert_bounded),
        _ => {}
    }
}

fn handoff(role: Role) -> HandoffPacket {
    HandoffPacket::for_worker(
        &ContextId::from("brain-ctx".to_string()),
        ContextId::from("task-ctx".to_string()),
        role,
        WorkerPhase::Support,
        "Check the parser",
        Vec::new(),
    )
}

fn full_worker_reply() -> WorkerReply {
    WorkerReply {
        task_id: Some("task-ctx".into()),
        parent_id: Some("brain-ctx".into()),
        progress: ReplyProgress {
            status: ReplyStatus::Blocked,
            summary: "waiting for credentials".into(),
        },
        summary: "The parser drops the last token".into(),
        artifacts: vec![ReplyArtifact {
            kind: ReplyArtifactKind::File,
            uri: "src/parser.rs".into(),
            label: Some("the parser".into()),
        }],
        risks: vec!["other callers rely on it".into()],
        next_questions: vec!["Is the trailing token optional?".into()],
    }
}

fn full_review_decision() -> ReviewReplyDecision {
    ReviewReplyDecision {
        decision: ReplyVerdict::ChangesRequested,
        confidence: 0.75,
        rationale: "The fix misses one caller".into(),
        findings: vec![ReplyFinding {
            severity: ReplySeverity::High,
            issue: "lexer.rs still truncates".into(),
            file: Some("src/lexer.rs".into()),
            line: Some(42),
            evidence: Some("the test for lexer fails".into()),
            suggestion: Some("call the new helper".into()),
        }],
        required_changes: vec!["fix the lexer".into()],
        blocking_issues: vec!["the build is red".into()],
        residual_risks: vec!["slow on long input".into()],
    }
}

/// The keys of `value` as an object, sorted.
fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// The schema's properties are exactly the struct's fields, and its required list exactly
/// the fields a reply cannot leave out, at every level.
fn assert_matches_struct(schema: &Value, full: &Value, minimal: &Value) {
    assert_eq!(keys(&schema["properties"]), keys(full), "{schema}");
    let mut required: Vec<String> = schema["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    required.sort();
    assert_eq!(required, keys(minimal), "{schema}");
    for (name, value) in full.as_object().into_iter().flatten() {
        let property = &schema["properties"][name];
        let (inner, full_inner, minimal_inner) = match value {
            Value::Object(_) => (property, value, &minimal[name]),
            Value::Array(items) if items.first().is_some_and(Value::is_object) => {
                (&property["items"], &items[0], &minimal[name][0])
            }
            _ => continue,
        };
        assert_matches_struct(inner, full_inner, minimal_inner);
    }
}

#[test]
fn the_worker_schema_is_the_worker_reply_struct() {
    let schema = worker_result_schema();
    assert_bounded(&schema);
    assert_eq!(
        schema["properties"]["progress"]["properties"]["status"]["enum"],
        json!(["completed", "blocked"])
    );
    assert_eq!(
        schema["properties"]["risks"]["maxItems"],
        SCHEMA_MAX_LIST_ITEMS
    );
    assert_eq!(
        schema["properties"]["summary"]["maxLength"],
        SCHEMA_MAX_SUMMARY_CHARS
    );
    let full = serde_json::to_value(full_worker_reply()).unwrap();
    let mut minimal_reply = full_worker_reply();
    minimal_reply.task_id = None;
    minimal_reply.parent_id = None;
    minimal_reply.artifacts[0].label = None;
    let minimal = serde_json::to_value(minimal_reply).unwrap();
    assert_matches_struct(&schema, &full, &minimal);
}

#[test]
fn the_review_schema_is_the_worker_reply_plus_the_decision() {
    let schema = review_result_schema();
    assert_bounded(&schema);
    assert_eq!(
        schema["properties"]["decision"]["enum"],
        json!(["approved", "changes_requested", "blocked"])
    );
    assert_eq!(schema["properties"]["findings"]["maxItems"], 5);
    let mut full = serde_json::to_value(full_worker_reply()).unwrap();
    let mut minimal = full.clone();
    for key in ["taskId", "parentId"] {
        minimal.as_object_mut().unwrap().remove(key);
    }
    minimal["artifacts"][0]
        .as_object_mut()
        .unwrap()
        .remove("label");
    let decision = serde_json::to_value(full_review_decision()).unwrap();
    let mut bare_finding = full_review_decision();
    let finding = &mut bare_finding.findings[0];
    (
        finding.file,
        finding.line,
        finding.evidence,
        finding.suggestion,
    ) = (None, None, None, None);
    let bare = serde_json::to_value(bare_finding).unwrap();
    for (into, from) in [(&mut full, decision), (&mut minimal, bare)] {
        into.as_object_mut()
            .unwrap()
            .extend(from.as_object().unwrap().clone());
    }
    assert_matches_struct(&schema, &full, &minimal);
}

#[test]
fn the_worker_normalizer_reads_every_field_of_the_reply() {
    let reply = full_worker_reply();
    let text = serde_json::to_string(&reply).unwrap();
    assert_eq!(serde_json::from_str::<WorkerReply>(&text).unwrap(), reply);
    let result = normalize_worker_result(&text, &handoff(Role::Backend));
    assert_eq!(result.progress.status, reply.progress.status.into());
    assert_eq!(
        result.progress.summary.as_deref(),
        Some(reply.progress.summary.as_str())
    );
    assert_eq!(result.summary, reply.summary);
    assert_eq!(result.artifacts.len(), 1);
    assert_eq!(result.artifacts[0].kind, reply.artifacts[0].kind.into());
    assert_eq!(result.artifacts[0].uri, reply.artifacts[0].uri);
    assert_eq!(result.artifacts[0].label, reply.artifacts[0].label);
    assert_eq!(result.risks, reply.risks);
    assert_eq!(result.next_questions, reply.next_questions);
}

#[test]
fn the_review_normalizer_reads_every_field_of_the_reply() {
    let mut reply = serde_json::to_value(full_worker_reply()).unwrap();
    let decision = full_review_decision();
    reply.as_object_mut().unwrap().extend(object_of(&decision));
    let outcome = normalize_review_decision(&reply.to_string(), &handoff(Role::Review));
    let read = outcome.decision;
    assert_eq!(read.decision, decision.decision.into());
    assert_eq!(read.confidence, Some(decision.confidence));
    assert_eq!(read.rationale.as_deref(), Some(decision.rationale.as_str()));
    let (got, want) = (&read.findings[0], &decision.findings[0]);
    assert_eq!(got.severity, want.severity.into());
    assert_eq!(got.issue, want.issue);
    assert_eq!(got.file, want.file);
    assert_eq!(got.line, want.line);
    assert_eq!(got.evidence, want.evidence);
    assert_eq!(got.suggestion, want.suggestion);
    assert_eq!(read.required_changes, decision.required_changes);
    assert_eq!(read.blocking_issues, decision.blocking_issues);
    assert_eq!(read.residual_risks, decision.residual_risks);
    assert_eq!(outcome.result.summary, full_worker_reply().summary);
}

fn object_of(decision: &ReviewReplyDecision) -> serde_json::Map<String, Value> {
    match serde_json::to_value(decision).unwrap() {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn derived_schemas_are_compact() {
    for schema in [worker_result_schema(), review_result_schema()] {
        let text = schema.to_string();
        for noise in [
            "\"$schema\"",
            "\"title\"",
            "\"description\"",
            "\"format\"",
            "oneOf",
        ] {
            assert!(!text.contains(noise), "{noise} in {text}");
        }
    }
}
