//! Extracting the decision object from the router's reply.

use braincode_context::{JsonReplyError, extract_json_object};
use serde_json::Value;
use thiserror::Error;

/// Why the router's reply could not be used; the plan falls back to the heuristic and this
/// message becomes the recorded fallback reason.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RouterParseError {
    /// The reply is empty.
    #[error("the router reply is empty")]
    Empty,
    /// No JSON object could be found.
    #[error(
        "the router reply contains no JSON object (expected a fenced ```json block or a '{{' ... '}}' span)"
    )]
    NoObject,
    /// The JSON is malformed.
    #[error("the router reply's JSON is invalid: {detail}")]
    InvalidJson {
        /// The parser's message.
        detail: String,
    },
    /// The JSON is not an object.
    #[error("the router reply's JSON is {found}, but a decision object was expected")]
    NotAnObject {
        /// What it is instead.
        found: &'static str,
    },
    /// The decision only repeats the template's placeholders, as small models do when held to
    /// the schema: a plan of `"..."` goals would send workers off with nothing to do.
    #[error(
        "the router reply only repeats the template's placeholders (no worker goal, todo title or reason says anything)"
    )]
    Placeholders,
}

impl From<JsonReplyError> for RouterParseError {
    fn from(error: JsonReplyError) -> Self {
        match error {
            JsonReplyError::Empty => RouterParseError::Empty,
            JsonReplyError::NoObject => RouterParseError::NoObject,
            JsonReplyError::Invalid { detail } => RouterParseError::InvalidJson { detail },
            JsonReplyError::NotAnObject { found } => RouterParseError::NotAnObject { found },
        }
    }
}

/// The decision object in `text`: the first fenced ```json block, otherwise the span from
/// the first `{` to the last `}`.
pub fn parse_router_reply(text: &str) -> Result<Value, RouterParseError> {
    let decision = extract_json_object(text)?;
    if repeats_placeholders(&decision) {
        return Err(RouterParseError::Placeholders);
    }
    Ok(Value::Object(decision))
}

/// Whether every worker goal, todo title and the reason of `decision` is a placeholder (and
/// there is at least one): `...`, `…`, an empty string or a schema word such as `string`.
fn repeats_placeholders(decision: &serde_json::Map<String, Value>) -> bool {
    let listed = |key: &str, field: &'static str| {
        decision
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(move |item| item.get(field).and_then(Value::as_str))
    };
    let mut texts = listed("workers", "goal")
        .chain(listed("todos", "title"))
        .chain(decision.get("reason").and_then(Value::as_str))
        .peekable();
    texts.peek().is_some() && texts.all(is_placeholder)
}

fn is_placeholder(text: &str) -> bool {
    let text = text.trim();
    text.chars()
        .all(|c| matches!(c, '.' | '…' | '-' | '_' | '*' | '?' | ' '))
        || ["string", "goal", "title", "reason", "todo", "tbd", "n/a"]
            .iter()
            .any(|word| text.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fenced_and_bare_objects() {
        let fenced = "Plan:\n```json\n{\"role\": \"backend\"}\n```";
        assert_eq!(parse_router_reply(fenced).unwrap()["role"], "backend");
        let bare = "I think {\"role\": \"qa\", \"workers\": []} is right";
        assert_eq!(parse_router_reply(bare).unwrap()["role"], "qa");
    }

    #[test]
    fn a_reply_that_only_repeats_the_template_is_refused() {
        // What the embedded 135M model answers when held to the schema.
        let echo = r#"{"role":"frontend","workers":[{"role":"backend","goal":"...","reason":"..."}],"todos":[{"id":"short-stable-id","title":"...","role":"backend","reason":"..."}],"dependencies":[],"confidence":0.0,"reason":"..."}"#;
        assert_eq!(
            parse_router_reply(echo),
            Err(RouterParseError::Placeholders)
        );
        let empty = r#"{"role":"qa","workers":[{"role":"qa","goal":" "}],"todos":[{"title":"…"}],"reason":"string"}"#;
        assert_eq!(
            parse_router_reply(empty),
            Err(RouterParseError::Placeholders)
        );
        // One real goal is a plan; a bare decision with no texts is left to the normalizer.
        let real = r#"{"role":"backend","workers":[{"role":"backend","goal":"Fix the token check"}],"todos":[{"title":"..."}],"reason":"..."}"#;
        assert!(parse_router_reply(real).is_ok());
        assert!(parse_router_reply(r#"{"role":"backend"}"#).is_ok());
    }

    #[test]
    fn errors_say_what_was_wrong() {
        assert_eq!(parse_router_reply(""), Err(RouterParseError::Empty));
        assert_eq!(
            parse_router_reply("backend"),
            Err(RouterParseError::NoObject)
        );
        let invalid = parse_router_reply("{\"role\": backend}").unwrap_err();
        assert!(
            invalid
                .to_string()
                .starts_with("the router reply's JSON is invalid: "),
            "{invalid}"
        );
        assert_eq!(
            parse_router_reply("```json\n\"backend\"\n```")
                .unwrap_err()
                .to_string(),
            "the router reply's JSON is a string, but a decision object was expected"
        );
    }
}
