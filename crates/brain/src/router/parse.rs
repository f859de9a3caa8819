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
    Ok(Value::Object(extract_json_object(text)?))
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
