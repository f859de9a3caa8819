//! Turning a worker's free-form reply into a [`WorkerResult`], and the reply schema.
//!
//! Provider drift must never break orchestration (DESIGN invariant 4): any reply becomes a
//! result. The ids always come from the handoff (invariant 3), whatever the reply claims.

use braincode_protocol::{
    ContextRef, ContextRefKind, HandoffPacket, TaskProgress, TaskStatus, WorkerResult,
};
use serde_json::{Map, Value};

use crate::packet::WorkerResultExt;
use crate::reply::{extract_json_object, first_list, first_text, number_field, text_field};

/// Summary used when a worker returns nothing at all.
pub const EMPTY_WORKER_RESPONSE: &str = "(empty worker response)";

/// Summary used when a JSON reply has no summary of its own.
pub const MISSING_SUMMARY: &str = "(worker reply had no summary)";

/// Keys that mark a JSON object as a worker reply rather than incidental JSON in prose.
const RESULT_KEYS: [&str; 8] = [
    "summary",
    "progress",
    "status",
    "artifacts",
    "risks",
    "nextQuestions",
    "next_questions",
    "decision",
];

/// The placeholder texts of the reply template workers are shown (`"summary": "what you found
/// or did"`, `"progress": {"summary": "one line"}`), and the empty placeholders a schema-bound
/// model fills in.
const TEMPLATE_TEXTS: [&str; 8] = [
    "what you found or did",
    "one line",
    "...",
    "…",
    "string",
    "summary",
    "why it matters",
    "path",
];

/// Whether a worker's reply only repeats its template: a result object whose summary is one
/// of the template's placeholders. Such a reply is not a result (a tiny model under a grammar
/// echoes what it was shown): the worker is asked on its next model, never reported
/// `completed`.
pub fn echoes_template(reply_text: &str) -> bool {
    let Ok(map) = extract_json_object(reply_text.trim()) else {
        return false;
    };
    if !RESULT_KEYS.iter().any(|key| map.contains_key(*key)) {
        return false;
    }
    let is_template = |value: Option<&Value>| {
        value.and_then(Value::as_str).is_none_or(|text| {
            let text = text.trim().to_ascii_lowercase();
            text.is_empty() || TEMPLATE_TEXTS.contains(&text.as_str())
        })
    };
    let progress = map.get("progress").and_then(|p| p.get("summary"));
    is_template(map.get("summary")) && (progress.is_none() || is_template(progress))
}

/// Normalizes a worker's reply into a [`WorkerResult`] for `handoff`.
///
/// * A JSON object (fenced ```json block, else the first `{` to the last `}`) that has at
///   least one result field is read field by field: the status is `completed`, `blocked` or
///   `failed` (anything else, including `pending`/`running`, counts as `completed` because the
///   worker has returned); `percent` is clamped to 0..=100; artifacts that cannot be read as a
///   [`ContextRef`] are coerced when they carry a usable URI and dropped otherwise; strings are
///   trimmed and empty ones dropped.
/// * Any other non-empty text is a `completed` result with the text as its summary.
/// * An empty or whitespace-only reply is `failed` with the summary
///   [`EMPTY_WORKER_RESPONSE`]: the worker produced nothing, so dependents must not treat
///   it as evidence and the runtime may retry with the next model candidate.
///
/// `handoffId`, `taskId` and `parentId` always come from `handoff`, never from the reply.
pub fn normalize_worker_result(reply_text: &str, handoff: &HandoffPacket) -> WorkerResult {
    let text = reply_text.trim();
    if text.is_empty() {
        let mut result = WorkerResult::for_handoff(
            handoff,
            progress(TaskStatus::Failed, Some(EMPTY_WORKER_RESPONSE.to_string())),
            EMPTY_WORKER_RESPONSE.to_string(),
        );
        result
            .risks
            .push("The worker returned an empty response, so its task has no result.".into());
        return result;
    }
    match extract_json_object(text) {
        Ok(map) if RESULT_KEYS.iter().any(|key| map.contains_key(*key)) => from_json(&map, handoff),
        _ => WorkerResult::for_handoff(
            handoff,
            progress(TaskStatus::Completed, None),
            text.to_string(),
        ),
    }
}

fn progress(status: TaskStatus, summary: Option<String>) -> TaskProgress {
    TaskProgress {
        status,
        summary,
        ..TaskProgress::default()
    }
}

/// Reads a final status; anything that is not a terminal failure state means completed.
fn final_status(value: Option<&Value>) -> TaskStatus {
    match text_field(value).map(|s| s.to_ascii_lowercase()).as_deref() {
        Some("blocked") => TaskStatus::Blocked,
        Some("failed" | "failure" | "error") => TaskStatus::Failed,
        _ => TaskStatus::Completed,
    }
}

fn read_progress(map: &Map<String, Value>) -> TaskProgress {
    match map.get("progress") {
        Some(Value::Object(p)) => TaskProgress {
            status: final_status(p.get("status").or_else(|| map.get("status"))),
            summary: text_field(p.get("summary")),
            current_step: first_text(p, &["currentStep", "current_step"]),
            completed_steps: {
                let steps = first_list(p, &["completedSteps", "completed_steps"]);
                (!steps.is_empty()).then_some(steps)
            },
            percent: number_field(p.get("percent")).map(|n| n.clamp(0.0, 100.0)),
        },
        // `"progress": "blocked"` is read as the status itself.
        Some(status @ Value::String(_)) => progress(final_status(Some(status)), None),
        _ => progress(final_status(map.get("status")), None),
    }
}

/// Guesses what a bare URI points at.
fn guess_kind(uri: &str) -> ContextRefKind {
    if uri.starts_with("session:") || uri.starts_with("thread:") {
        ContextRefKind::Thread
    } else if uri.contains("://") {
        ContextRefKind::Artifact
    } else {
        ContextRefKind::File
    }
}

fn parse_kind(value: Option<&Value>) -> Option<ContextRefKind> {
    match text_field(value)?.to_ascii_lowercase().as_str() {
        "file" | "path" => Some(ContextRefKind::File),
        "thread" | "session" => Some(ContextRefKind::Thread),
        "summary" => Some(ContextRefKind::Summary),
        "artifact" => Some(ContextRefKind::Artifact),
        _ => None,
    }
}

/// Reads one artifact; strings are URIs, objects need a non-empty `uri` (or `path`/`url`).
fn read_artifact(value: &Value) -> Option<ContextRef> {
    match value {
        Value::String(s) => {
            let uri = s.trim();
            // Free text ("updated the form") is not a reference.
            if uri.is_empty() || uri.contains(char::is_whitespace) {
                return None;
            }
            Some(ContextRef {
                kind: guess_kind(uri),
                uri: uri.to_string(),
                label: None,
            })
        }
        Value::Object(obj) => {
            let uri = first_text(obj, &["uri", "path", "file", "url"])?;
            Some(ContextRef {
                kind: parse_kind(obj.get("kind")).unwrap_or_else(|| guess_kind(&uri)),
                label: first_text(obj, &["label", "title", "name"]),
                uri,
            })
        }
        _ => None,
    }
}

fn from_json(map: &Map<String, Value>, handoff: &HandoffPacket) -> WorkerResult {
    let progress = read_progress(map);
    let summary = first_text(map, &["summary", "result", "answer"])
        .or_else(|| progress.summary.clone())
        .unwrap_or_else(|| MISSING_SUMMARY.to_string());
    let mut result = WorkerResult::for_handoff(handoff, progress, summary);
    result.artifacts = match map.get("artifacts") {
        Some(Value::Array(items)) => items.iter().filter_map(read_artifact).collect(),
        Some(single) => read_artifact(single).into_iter().collect(),
        None => Vec::new(),
    };
    result.risks = first_list(map, &["risks"]);
    result.next_questions = first_list(map, &["nextQuestions", "next_questions", "questions"]);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HandoffPacketExt;
    use braincode_protocol::{ContextId, Role, WorkerPhase};

    fn handoff() -> HandoffPacket {
        HandoffPacket::for_worker(
            &ContextId::from("brain-ctx".to_string()),
            ContextId::from("task-ctx".to_string()),
            Role::Backend,
            WorkerPhase::Support,
            "Design the API",
            Vec::new(),
        )
    }

    #[test]
    fn plain_text_becomes_a_completed_summary() {
        let result = normalize_worker_result("  The API needs a /login route.  ", &handoff());
        assert_eq!(result.progress.status, TaskStatus::Completed);
        assert_eq!(result.summary, "The API needs a /login route.");
        assert_eq!(result.task_id.as_str(), "task-ctx");
    }

    #[test]
    fn empty_replies_fail_with_a_marker_summary() {
        for reply in ["", "   \n\t "] {
            let result = normalize_worker_result(reply, &handoff());
            assert_eq!(result.summary, EMPTY_WORKER_RESPONSE);
            assert_eq!(result.progress.status, TaskStatus::Failed);
            assert_eq!(result.risks.len(), 1);
        }
    }

    #[test]
    fn json_fields_are_used_and_cleaned() {
        let reply = r#"```json
{"taskId": "evil", "parentId": "evil-parent", "handoffId": "x",
 "progress": {"status": "weird", "summary": " half ", "percent": 250},
 "summary": "  Found two handlers ",
 "artifacts": [{"kind": "file", "uri": " src/api.rs ", "label": " api "},
               {"kind": "bogus", "uri": "https://x/y"},
               {"kind": "file"}, 42, "src/lib.rs", "not a path at all"],
 "risks": [" race condition ", "", 7],
 "nextQuestions": "Which auth scheme?"}
```"#;
        let result = normalize_worker_result(reply, &handoff());
        assert_eq!(result.task_id.as_str(), "task-ctx");
        assert_eq!(result.parent_id.as_str(), "brain-ctx");
        assert_eq!(result.handoff_id, "task-ctx:handoff");
        assert_eq!(result.progress.status, TaskStatus::Completed);
        assert_eq!(result.progress.percent, Some(100.0));
        assert_eq!(result.progress.summary.as_deref(), Some("half"));
        assert_eq!(result.summary, "Found two handlers");
        let uris: Vec<_> = result.artifacts.iter().map(|a| a.uri.as_str()).collect();
        assert_eq!(uris, vec!["src/api.rs", "https://x/y", "src/lib.rs"]);
        assert_eq!(result.artifacts[0].label.as_deref(), Some("api"));
        assert_eq!(result.artifacts[1].kind, ContextRefKind::Artifact);
        assert_eq!(result.risks, vec!["race condition", "7"]);
        assert_eq!(result.next_questions, vec!["Which auth scheme?"]);
    }

    #[test]
    fn statuses_and_percent_edges() {
        let blocked = normalize_worker_result(
            r#"{"progress": {"status": "BLOCKED", "percent": -5}, "summary": "need creds"}"#,
            &handoff(),
        );
        assert_eq!(blocked.progress.status, TaskStatus::Blocked);
        assert_eq!(blocked.progress.percent, Some(0.0));
        let failed = normalize_worker_result(r#"{"status": "failed"}"#, &handoff());
        assert_eq!(failed.progress.status, TaskStatus::Failed);
        assert_eq!(failed.summary, MISSING_SUMMARY);
        let fallback = normalize_worker_result(
            r#"{"progress": {"status": "running", "summary": "did it"}}"#,
            &handoff(),
        );
        assert_eq!(fallback.progress.status, TaskStatus::Completed);
        assert_eq!(fallback.summary, "did it");
    }

    #[test]
    fn unrelated_json_in_prose_stays_text() {
        let reply = "Use this config: {\"port\": 8080}";
        let result = normalize_worker_result(reply, &handoff());
        assert_eq!(result.summary, reply);
        assert_eq!(result.progress.status, TaskStatus::Completed);
    }
}

#[cfg(test)]
mod echo_tests {
    use super::echoes_template;

    #[test]
    fn a_reply_that_repeats_the_template_is_not_a_result() {
        assert!(echoes_template(
            r#"{"summary":"what you found or did","risks":["..."]}"#
        ));
        assert!(echoes_template(
            r#"{"taskId":"t","progress":{"status":"completed","summary":"one line"},"summary":"What you found or did","artifacts":[{"kind":"file","uri":"path","label":"why it matters"}]}"#
        ));
        assert!(!echoes_template(
            r#"{"summary":"src/main.rs prints the greeting","progress":{"summary":"one line"}}"#
        ));
        assert!(!echoes_template("The greeting is printed in src/main.rs."));
        assert!(!echoes_template(
            r#"{"summary":"...and the parser is in lib.rs"}"#
        ));
    }
}
