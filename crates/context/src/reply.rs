//! Finding the JSON object in a model's reply, and reading loosely typed fields from it.
//!
//! Models wrap JSON in prose, in fences, or return prose only. Extraction tries, in order:
//! the first fenced ```json block (a bare ``` fence counts when it holds an object), the
//! substring from the first `{` to the last `}`, and finally the first complete JSON value
//! that starts at the first `{` (which survives trailing text containing braces).

use std::fmt;

use serde_json::{Map, Value};

/// Why no JSON object could be taken from a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonReplyError {
    /// The reply is empty or only whitespace.
    Empty,
    /// The reply has no fenced JSON block and no `{`…`}` span.
    NoObject,
    /// A candidate was found but is not valid JSON.
    Invalid {
        /// The parser's message (with line and column inside the candidate).
        detail: String,
    },
    /// The JSON is valid but is not an object.
    NotAnObject {
        /// What it is instead (`array`, `string`, …).
        found: &'static str,
    },
}

impl fmt::Display for JsonReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonReplyError::Empty => f.write_str("the reply is empty"),
            JsonReplyError::NoObject => f.write_str(
                "the reply contains no JSON object (no fenced ```json block and no '{' ... '}' span)",
            ),
            JsonReplyError::Invalid { detail } => {
                write!(f, "the reply's JSON is invalid: {detail}")
            }
            JsonReplyError::NotAnObject { found } => {
                write!(f, "the reply's JSON is {found}, but an object was expected")
            }
        }
    }
}

impl std::error::Error for JsonReplyError {}

fn kind_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The body of the first fenced block labelled `json` (or unlabelled and starting with `{`).
fn fenced_block(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let line_end = after.find('\n').unwrap_or(after.len());
        let label = after[..line_end].trim();
        let body_start = (line_end + 1).min(after.len());
        let body_and_rest = &after[body_start..];
        let close = body_and_rest.find("```");
        let body = close.map_or(body_and_rest, |end| &body_and_rest[..end]);
        let is_json = label.eq_ignore_ascii_case("json")
            || (label.is_empty() && body.trim_start().starts_with('{'));
        if is_json {
            return Some(body);
        }
        match close {
            Some(end) => rest = &body_and_rest[end + 3..],
            None => return None,
        }
    }
    None
}

fn parse_object(candidate: &str) -> Result<Map<String, Value>, JsonReplyError> {
    match serde_json::from_str::<Value>(candidate.trim()) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(JsonReplyError::NotAnObject {
            found: kind_name(&other),
        }),
        Err(err) => Err(JsonReplyError::Invalid {
            detail: err.to_string(),
        }),
    }
}

/// The first complete JSON value starting at the first `{`, ignoring whatever follows it.
fn leading_object(text: &str) -> Option<Map<String, Value>> {
    let start = text.find('{')?;
    let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    match values.next() {
        Some(Ok(Value::Object(map))) => Some(map),
        _ => None,
    }
}

/// Extracts the JSON object a model reply carries.
pub fn extract_json_object(text: &str) -> Result<Map<String, Value>, JsonReplyError> {
    if text.trim().is_empty() {
        return Err(JsonReplyError::Empty);
    }
    let mut first_error = None;
    if let Some(body) = fenced_block(text) {
        match parse_object(body) {
            Ok(map) => return Ok(map),
            Err(err) => first_error = Some(err),
        }
    }
    if let (Some(start), Some(end)) = (text.find('{'), text.rfind('}'))
        && start < end
    {
        match parse_object(&text[start..=end]) {
            Ok(map) => return Ok(map),
            Err(err) => {
                if let Some(map) = leading_object(text) {
                    return Ok(map);
                }
                first_error.get_or_insert(err);
            }
        }
    }
    Err(first_error.unwrap_or(JsonReplyError::NoObject))
}

/// A trimmed, non-empty string field (numbers and booleans are rendered as text).
pub(crate) fn text_field(value: Option<&Value>) -> Option<String> {
    let text = match value? {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The first present, non-empty string among `keys`.
pub(crate) fn first_text(map: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| text_field(map.get(*key)))
}

/// A list of trimmed, non-empty strings; a single string counts as a one-item list.
pub(crate) fn text_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(|v| text_field(Some(v))).collect(),
        Some(single @ Value::String(_)) => text_field(Some(single)).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// The first list among `keys` that is present.
pub(crate) fn first_list(map: &Map<String, Value>, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .find(|key| map.contains_key(**key))
        .map(|key| text_list(map.get(*key)))
        .unwrap_or_default()
}

/// A finite number, also accepted as a numeric string.
pub(crate) fn number_field(value: Option<&Value>) -> Option<f64> {
    let number = match value? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse::<f64>().ok()?,
        _ => return None,
    };
    number.is_finite().then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_fenced_json_block_first() {
        let text = "Here you go:\n```json\n{\"a\": 1}\n```\nand also {\"b\": 2}";
        assert_eq!(extract_json_object(text).unwrap()["a"], 1);
        let bare = "```\n{\"a\": 3}\n```";
        assert_eq!(extract_json_object(bare).unwrap()["a"], 3);
        let other_fence_first = "```rust\nfn x() {}\n```\n```json\n{\"a\": 4}\n```";
        assert_eq!(extract_json_object(other_fence_first).unwrap()["a"], 4);
    }

    #[test]
    fn falls_back_to_the_brace_span() {
        let text = "Sure! {\"a\": {\"b\": 2}} Hope that helps.";
        assert_eq!(extract_json_object(text).unwrap()["a"]["b"], 2);
        let trailing = "{\"a\": 1} then some {junk}";
        assert_eq!(extract_json_object(trailing).unwrap()["a"], 1);
    }

    #[test]
    fn errors_say_what_was_wrong() {
        assert_eq!(extract_json_object("  \n"), Err(JsonReplyError::Empty));
        assert_eq!(
            extract_json_object("just prose"),
            Err(JsonReplyError::NoObject)
        );
        let invalid = extract_json_object("{\"a\": }").unwrap_err();
        assert!(matches!(invalid, JsonReplyError::Invalid { .. }));
        assert!(invalid.to_string().contains("invalid"), "{invalid}");
        let array = extract_json_object("```json\n[1, 2]\n```").unwrap_err();
        assert_eq!(array, JsonReplyError::NotAnObject { found: "an array" });
    }

    #[test]
    fn field_readers_are_lenient() {
        let map = extract_json_object(
            r#"{"s": "  hi ", "n": 5, "e": "  ", "l": ["a", " ", 3, null], "one": "x", "p": "42%"}"#,
        )
        .unwrap();
        assert_eq!(text_field(map.get("s")).as_deref(), Some("hi"));
        assert_eq!(text_field(map.get("n")).as_deref(), Some("5"));
        assert_eq!(text_field(map.get("e")), None);
        assert_eq!(text_list(map.get("l")), vec!["a", "3"]);
        assert_eq!(text_list(map.get("one")), vec!["x"]);
        assert_eq!(number_field(map.get("p")), Some(42.0));
        assert_eq!(first_text(&map, &["missing", "s"]).as_deref(), Some("hi"));
    }
}
