//! The reply shapes workers and reviewers are asked for, as structs, and the JSON Schemas
//! derived from them (`schemars`): a schema and the fields the normalizers read cannot drift
//! apart. The normalizers ([`crate::normalize_worker_result`],
//! [`crate::normalize_review_decision`]) stay tolerant and read more than these shapes
//! (aliases, strings for lists, loose statuses); a reply that matches a shape is read field
//! for field (tested both ways below).
//!
//! Every schema is compact (no meta-schema, titles, descriptions or formats: it is resent with
//! every request that asks for it, and the prompts explain the fields) and bounded: every
//! array has `maxItems`, every free string `maxLength`, no object takes extra properties, so
//! a grammar derived from it always terminates.

use braincode_protocol::{ContextRefKind, ReviewVerdict, Severity, TaskStatus};
use schemars::generate::SchemaSettings;
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most items the reply schema allows in `artifacts`, `risks` and `nextQuestions`.
///
/// Small on purpose: a tiny local model under a grammar can otherwise repeat list items until
/// it runs out of tokens.
pub const SCHEMA_MAX_LIST_ITEMS: usize = 5;

/// Longest `summary` the reply schema allows, in characters.
pub const SCHEMA_MAX_SUMMARY_CHARS: usize = 1_200;

/// Longest short string (a list item, a progress line, a URI) the reply schema allows.
pub const SCHEMA_MAX_ITEM_CHARS: usize = 300;

/// Strips what a model does not need from a derived schema and writes unit enums as `enum`.
#[derive(Clone)]
struct Compact;

impl Transform for Compact {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(map) = schema.as_object_mut() else {
            return;
        };
        for keyword in ["$schema", "title", "description", "format"] {
            map.remove(keyword);
        }
        // Documented unit variants come out as `oneOf: [{const}, …]`; one `enum` says the same.
        let constants: Option<Vec<Value>> = map.get("oneOf").and_then(Value::as_array).map(|all| {
            all.iter()
                .filter_map(|option| option.get("const").cloned())
                .collect()
        });
        if let Some(values) = constants
            && map
                .get("oneOf")
                .and_then(Value::as_array)
                .is_some_and(|all| all.len() == values.len())
        {
            map.remove("oneOf");
            map.insert("type".into(), Value::from("string"));
            map.insert("enum".into(), Value::Array(values));
        }
    }
}

/// The compact JSON Schema of `T` (shared types land once in `$defs`).
pub fn derived_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.meta_schema = None)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    Compact.transform(&mut schema);
    schema.to_value()
}

/// The status a worker reports: it has returned, so it is done or stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ReplyStatus {
    /// The task is done.
    Completed,
    /// The task cannot go on without something the worker lacks.
    Blocked,
}

impl From<ReplyStatus> for TaskStatus {
    fn from(status: ReplyStatus) -> Self {
        match status {
            ReplyStatus::Completed => TaskStatus::Completed,
            ReplyStatus::Blocked => TaskStatus::Blocked,
        }
    }
}

/// A worker's progress line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ReplyProgress {
    /// Done or stuck.
    pub status: ReplyStatus,
    /// One line.
    #[schemars(length(max = SCHEMA_MAX_ITEM_CHARS))]
    pub summary: String,
}

/// What an artifact points at (the kinds of a [`braincode_protocol::ContextRef`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ReplyArtifactKind {
    /// A file.
    File,
    /// A session or conversation.
    Thread,
    /// A summary.
    Summary,
    /// Anything else with a URI.
    Artifact,
}

impl From<ReplyArtifactKind> for ContextRefKind {
    fn from(kind: ReplyArtifactKind) -> Self {
        match kind {
            ReplyArtifactKind::File => ContextRefKind::File,
            ReplyArtifactKind::Thread => ContextRefKind::Thread,
            ReplyArtifactKind::Summary => ContextRefKind::Summary,
            ReplyArtifactKind::Artifact => ContextRefKind::Artifact,
        }
    }
}

/// A reference a worker hands back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ReplyArtifact {
    /// What it points at.
    pub kind: ReplyArtifactKind,
    /// Where.
    #[schemars(length(max = SCHEMA_MAX_ITEM_CHARS))]
    pub uri: String,
    /// Why it matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 120))]
    pub label: Option<String>,
}

/// The reply a worker is asked for: the fields [`crate::normalize_worker_result`] reads.
///
/// `taskId`/`parentId` are allowed but optional: the normalizer takes them from the handoff,
/// so a small model need not spend tokens copying them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerReply {
    /// Ignored (the handoff's is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 128))]
    pub task_id: Option<String>,
    /// Ignored (the handoff's is used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 128))]
    pub parent_id: Option<String>,
    /// Status and one line.
    pub progress: ReplyProgress,
    /// What the worker found or did.
    #[schemars(length(max = SCHEMA_MAX_SUMMARY_CHARS))]
    pub summary: String,
    /// Files and other references.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS))]
    pub artifacts: Vec<ReplyArtifact>,
    /// What could go wrong.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS), inner(length(max = SCHEMA_MAX_ITEM_CHARS)))]
    pub risks: Vec<String>,
    /// What the worker would ask.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS), inner(length(max = SCHEMA_MAX_ITEM_CHARS)))]
    pub next_questions: Vec<String>,
}

/// A reviewer's verdict (a review never answers `inconclusive`: that is what no verdict means).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum ReplyVerdict {
    /// Acceptable.
    Approved,
    /// Needs changes.
    ChangesRequested,
    /// Cannot be accepted.
    Blocked,
}

impl From<ReplyVerdict> for ReviewVerdict {
    fn from(verdict: ReplyVerdict) -> Self {
        match verdict {
            ReplyVerdict::Approved => ReviewVerdict::Approved,
            ReplyVerdict::ChangesRequested => ReviewVerdict::ChangesRequested,
            ReplyVerdict::Blocked => ReviewVerdict::Blocked,
        }
    }
}

/// A finding's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ReplySeverity {
    /// Minor.
    Low,
    /// Should be fixed.
    Medium,
    /// Must be fixed.
    High,
}

impl From<ReplySeverity> for Severity {
    fn from(severity: ReplySeverity) -> Self {
        match severity {
            ReplySeverity::Low => Severity::Low,
            ReplySeverity::Medium => Severity::Medium,
            ReplySeverity::High => Severity::High,
        }
    }
}

/// One review finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline)]
pub struct ReplyFinding {
    /// How bad.
    pub severity: ReplySeverity,
    /// What is wrong.
    #[schemars(length(max = SCHEMA_MAX_ITEM_CHARS))]
    pub issue: String,
    /// Where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = 200))]
    pub file: Option<String>,
    /// The line, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u32", range(min = 1))]
    pub line: Option<u32>,
    /// What shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = SCHEMA_MAX_ITEM_CHARS))]
    pub evidence: Option<String>,
    /// How to fix it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(max = SCHEMA_MAX_ITEM_CHARS))]
    pub suggestion: Option<String>,
}

/// The decision part of a review reply (the rest is a [`WorkerReply`]): the fields
/// [`crate::normalize_review_decision`] reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewReplyDecision {
    /// The verdict.
    pub decision: ReplyVerdict,
    /// From 0 to 1.
    #[schemars(range(min = 0, max = 1))]
    pub confidence: f64,
    /// Why.
    #[schemars(length(max = 600))]
    pub rationale: String,
    /// What the review found.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS))]
    pub findings: Vec<ReplyFinding>,
    /// Changes the result needs.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS), inner(length(max = SCHEMA_MAX_ITEM_CHARS)))]
    pub required_changes: Vec<String>,
    /// What blocks it.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS), inner(length(max = SCHEMA_MAX_ITEM_CHARS)))]
    pub blocking_issues: Vec<String>,
    /// Risks left after the change.
    #[schemars(length(max = SCHEMA_MAX_LIST_ITEMS), inner(length(max = SCHEMA_MAX_ITEM_CHARS)))]
    pub residual_risks: Vec<String>,
}

/// JSON Schema of the worker reply ([`WorkerReply`]), for structured output and grammars.
pub fn worker_result_schema() -> Value {
    derived_schema::<WorkerReply>()
}

/// JSON Schema of the review reply: a [`WorkerReply`] plus a [`ReviewReplyDecision`] in one
/// object, bounded like [`worker_result_schema`].
pub fn review_result_schema() -> Value {
    let mut schema = worker_result_schema();
    let decision = derived_schema::<ReviewReplyDecision>();
    for key in ["properties", "required"] {
        let extra = decision.get(key).cloned();
        match (schema.get_mut(key), extra) {
            (Some(Value::Object(into)), Some(Value::Object(from))) => into.extend(from),
            (Some(Value::Array(into)), Some(Value::Array(from))) => into.extend(from),
            _ => {}
        }
    }
    schema
}

#[cfg(test)]
#[path = "reply_schema_tests.rs"]
mod tests;
