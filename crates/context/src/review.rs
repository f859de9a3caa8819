//! Turning a review worker's reply into a [`ReviewDecision`], and the review reply schema.
//!
//! A review can block or request changes, and only an explicit `approved` approves: a reply
//! without a readable decision is never treated as an approval (DESIGN invariant 4).

use braincode_protocol::{
    Finding, HandoffPacket, ReviewDecision, ReviewVerdict, Severity, TaskStatus, WorkerResult,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::reply::{extract_json_object, first_list, first_text, number_field};
use crate::worker_result::normalize_worker_result;

/// The required change recorded when a review reply has no structured decision.
pub const NO_STRUCTURED_DECISION: &str = "The review gave no structured decision; inspect \
the result yourself before accepting it.";

/// A normalized review: the worker result plus the decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReviewOutcome {
    /// The review worker's result (ids from the handoff).
    pub result: WorkerResult,
    /// The verdict and its evidence.
    pub decision: ReviewDecision,
}

/// Reads a verdict; spellings models commonly use are accepted.
fn parse_verdict(value: Option<&Value>) -> Option<ReviewVerdict> {
    let raw = match value? {
        Value::String(s) => s.trim().to_ascii_lowercase().replace(['-', ' '], "_"),
        _ => return None,
    };
    match raw.as_str() {
        "approved" | "approve" | "accept" | "accepted" | "lgtm" => Some(ReviewVerdict::Approved),
        "changes_requested" | "request_changes" | "changes_required" | "needs_changes"
        | "changes_needed" => Some(ReviewVerdict::ChangesRequested),
        "blocked" | "block" | "reject" | "rejected" => Some(ReviewVerdict::Blocked),
        _ => None,
    }
}

fn parse_severity(value: Option<&Value>) -> Severity {
    match value
        .and_then(Value::as_str)
        .map(|s| s.trim().to_ascii_lowercase())
        .as_deref()
    {
        Some("low" | "minor" | "info" | "nit") => Severity::Low,
        Some("high" | "critical" | "blocker" | "major") => Severity::High,
        _ => Severity::Medium,
    }
}

/// A line number: a JSON integer greater than zero, nothing else.
fn parse_line(value: Option<&Value>) -> Option<u32> {
    value
        .and_then(Value::as_u64)
        .filter(|line| *line > 0)
        .and_then(|line| u32::try_from(line).ok())
}

fn parse_finding(value: &Value) -> Option<Finding> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(Finding {
            severity: Severity::Medium,
            issue: s.trim().to_string(),
            file: None,
            line: None,
            evidence: None,
            suggestion: None,
        }),
        Value::Object(obj) => Some(Finding {
            severity: parse_severity(obj.get("severity")),
            issue: first_text(obj, &["issue", "title", "message", "description"])?,
            file: first_text(obj, &["file", "path"]),
            line: parse_line(obj.get("line")),
            evidence: first_text(obj, &["evidence"]),
            suggestion: first_text(obj, &["suggestion", "fix"]),
        }),
        _ => None,
    }
}

fn severity_rank(severity: Severity) -> u8 {
    match severity {
        Severity::High => 0,
        Severity::Medium => 1,
        Severity::Low => 2,
    }
}

fn read_decision(map: &Map<String, Value>) -> (Option<ReviewVerdict>, ReviewDecision) {
    let verdict = parse_verdict(map.get("decision").or_else(|| map.get("verdict")));
    let mut findings: Vec<Finding> = match map.get("findings") {
        Some(Value::Array(items)) => items.iter().filter_map(parse_finding).collect(),
        _ => Vec::new(),
    };
    findings.sort_by_key(|f| severity_rank(f.severity));
    let decision = ReviewDecision {
        decision: verdict.unwrap_or(ReviewVerdict::ChangesRequested),
        confidence: number_field(map.get("confidence")).map(|c| c.clamp(0.0, 1.0)),
        rationale: first_text(map, &["rationale", "reasoning"]),
        findings,
        required_changes: first_list(map, &["requiredChanges", "required_changes"]),
        blocking_issues: first_list(map, &["blockingIssues", "blocking_issues"]),
        residual_risks: first_list(map, &["residualRisks", "residual_risks"]),
    };
    (verdict, decision)
}

/// Normalizes a review worker's reply.
///
/// The result part follows [`normalize_worker_result`]. The decision part: severity defaults
/// to `medium`; `line` is kept only when it is an integer greater than zero; findings are
/// ordered most severe first; confidence is clamped to [0, 1]. Without an explicit decision
/// the verdict is `blocked` (with [`NO_STRUCTURED_DECISION`] as a required change) when the
/// review itself says it is blocked, otherwise `inconclusive` (an empty, cut or prose reply; with it as a
/// residual risk): never `approved`, and never `changes_requested`, since nobody asked for
/// a change.
pub fn normalize_review_decision(reply_text: &str, handoff: &HandoffPacket) -> ReviewOutcome {
    let result = normalize_worker_result(reply_text, handoff);
    let (verdict, mut decision) = match extract_json_object(reply_text) {
        Ok(map) => read_decision(&map),
        Err(_) => read_decision(&Map::new()),
    };
    if verdict.is_none() {
        if result.progress.status == TaskStatus::Blocked {
            decision.decision = ReviewVerdict::Blocked;
            decision
                .required_changes
                .push(NO_STRUCTURED_DECISION.to_string());
        } else {
            // Prose, an empty or a cut reply: nobody judged the result.
            decision.decision = ReviewVerdict::Inconclusive;
            decision
                .residual_risks
                .push(NO_STRUCTURED_DECISION.to_string());
        }
    }
    ReviewOutcome { result, decision }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HandoffPacketExt;
    use braincode_protocol::{ContextId, Role, WorkerPhase};

    fn handoff() -> HandoffPacket {
        HandoffPacket::for_worker(
            &ContextId::from("brain".to_string()),
            ContextId::from("review-task".to_string()),
            Role::Review,
            WorkerPhase::Review,
            "Review the change",
            Vec::new(),
        )
    }

    #[test]
    fn explicit_decisions_are_read() {
        let reply = r#"{"summary": "ok", "progress": {"status": "completed", "summary": "done"},
            "decision": "Changes-Requested", "confidence": 1.7, "rationale": " needs work ",
            "findings": [
              {"severity": "low", "issue": "naming", "line": 0},
              {"severity": "bogus", "issue": "missing check", "file": "a.rs", "line": 12},
              {"severity": "critical", "issue": "sql injection", "line": -3},
              {"severity": "high", "line": 5},
              "plain finding"
            ],
            "requiredChanges": ["escape input"], "blockingIssues": [], "residualRisks": "slow"}"#;
        let outcome = normalize_review_decision(reply, &handoff());
        let decision = outcome.decision;
        assert_eq!(decision.decision, ReviewVerdict::ChangesRequested);
        assert_eq!(decision.confidence, Some(1.0));
        assert_eq!(decision.rationale.as_deref(), Some("needs work"));
        let issues: Vec<_> = decision.findings.iter().map(|f| f.issue.as_str()).collect();
        assert_eq!(
            issues,
            vec!["sql injection", "missing check", "plain finding", "naming"]
        );
        assert_eq!(decision.findings[0].severity, Severity::High);
        assert_eq!(decision.findings[0].line, None);
        assert_eq!(decision.findings[1].severity, Severity::Medium);
        assert_eq!(decision.findings[1].line, Some(12));
        assert_eq!(decision.findings[3].line, None);
        assert_eq!(decision.required_changes, vec!["escape input"]);
        assert_eq!(decision.residual_risks, vec!["slow"]);
        assert_eq!(outcome.result.task_id.as_str(), "review-task");
    }

    #[test]
    fn approval_needs_an_explicit_decision() {
        let approved = normalize_review_decision(
            r#"{"decision": "approved", "confidence": -1, "summary": "fine"}"#,
            &handoff(),
        );
        assert_eq!(approved.decision.decision, ReviewVerdict::Approved);
        assert_eq!(approved.decision.confidence, Some(0.0));
        assert!(approved.decision.required_changes.is_empty());

        for reply in [
            "Looks good to me, approved!",
            r#"{"summary": "all fine", "decision": "maybe"}"#,
            "",
        ] {
            let outcome = normalize_review_decision(reply, &handoff());
            assert_ne!(
                outcome.decision.decision,
                ReviewVerdict::Approved,
                "{reply}"
            );
            assert_ne!(
                outcome.decision.decision,
                ReviewVerdict::ChangesRequested,
                "{reply}: nobody asked for a change"
            );
            let said = outcome
                .decision
                .required_changes
                .iter()
                .chain(&outcome.decision.residual_risks)
                .any(|line| line == NO_STRUCTURED_DECISION);
            assert!(said, "{reply}");
        }
    }

    #[test]
    fn missing_decision_follows_the_review_progress() {
        let text = normalize_review_decision("Some prose review.", &handoff());
        assert_eq!(text.decision.decision, ReviewVerdict::Inconclusive);
        let blocked = normalize_review_decision(
            r#"{"progress": {"status": "blocked", "summary": "no diff"}, "summary": "x"}"#,
            &handoff(),
        );
        assert_eq!(blocked.decision.decision, ReviewVerdict::Blocked);
        // An empty reply judged nothing either.
        let empty = normalize_review_decision("  ", &handoff());
        assert_eq!(empty.decision.decision, ReviewVerdict::Inconclusive);
    }
}
