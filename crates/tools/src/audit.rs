//! Bounded JSON for audit records (`tool_approval_decision.argsSummary`,
//! `tool_execution_summary.resultSummary`): deep, wide or long values are cut so one tool call
//! cannot bloat the journal.

use serde_json::{Map, Value, json};

/// Longest summary, in characters of compact JSON; longer becomes `{truncated, chars, preview}`.
pub const AUDIT_MAX_CHARS: usize = 1_600;
/// Container levels kept; deeper containers become `"[MaxDepth]"`.
pub const AUDIT_MAX_DEPTH: usize = 4;
/// Array items kept; the rest become one `"[+N more]"` item.
pub const AUDIT_MAX_ARRAY_ITEMS: usize = 20;
/// Object keys kept; the count of the rest goes in `__truncatedKeys`.
pub const AUDIT_MAX_KEYS: usize = 40;

/// Summarizes a JSON value for an audit record.
pub fn summarize_json(value: &Value) -> Value {
    let bounded = bound(value, 1);
    let text = serde_json::to_string(&bounded).unwrap_or_default();
    let chars = text.chars().count();
    if chars <= AUDIT_MAX_CHARS {
        return bounded;
    }
    let preview: String = text.chars().take(AUDIT_MAX_CHARS).collect();
    json!({"truncated": true, "chars": chars, "preview": preview})
}

fn bound(value: &Value, depth: usize) -> Value {
    match value {
        Value::Array(_) | Value::Object(_) if depth > AUDIT_MAX_DEPTH => {
            Value::String("[MaxDepth]".to_string())
        }
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(AUDIT_MAX_ARRAY_ITEMS)
                .map(|item| bound(item, depth + 1))
                .collect();
            if items.len() > AUDIT_MAX_ARRAY_ITEMS {
                out.push(Value::String(format!(
                    "[+{} more]",
                    items.len() - AUDIT_MAX_ARRAY_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map.iter().take(AUDIT_MAX_KEYS) {
                out.insert(key.clone(), bound(item, depth + 1));
            }
            if map.len() > AUDIT_MAX_KEYS {
                out.insert(
                    "__truncatedKeys".to_string(),
                    json!(map.len() - AUDIT_MAX_KEYS),
                );
            }
            Value::Object(out)
        }
        scalar => scalar.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_pass_through() {
        let value = json!({"path": "src/a.rs", "limit": 10, "flags": [true, null]});
        assert_eq!(summarize_json(&value), value);
        assert_eq!(summarize_json(&json!("x")), json!("x"));
    }

    #[test]
    fn depth_is_bounded() {
        let value = json!({"a": {"b": {"c": {"d": {"e": 1}}}}, "top": [[[[1]]]]});
        assert_eq!(
            summarize_json(&value),
            json!({"a": {"b": {"c": {"d": "[MaxDepth]"}}}, "top": [[["[MaxDepth]"]]]})
        );
    }

    #[test]
    fn arrays_and_keys_are_bounded() {
        let items: Vec<u32> = (0..25).collect();
        let summary = summarize_json(&json!(items));
        let array = summary.as_array().unwrap();
        assert_eq!(array.len(), 21);
        assert_eq!(array[20], json!("[+5 more]"));
        let mut map = Map::new();
        for index in 0..45 {
            map.insert(format!("k{index:02}"), json!(index));
        }
        let summary = summarize_json(&Value::Object(map));
        let object = summary.as_object().unwrap();
        assert_eq!(object.len(), 41);
        assert_eq!(object["__truncatedKeys"], json!(5));
        assert!(object.contains_key("k39"));
        assert!(!object.contains_key("k40"));
    }

    #[test]
    fn long_values_become_a_preview() {
        let value = json!({"content": "é".repeat(2_000)});
        let summary = summarize_json(&value);
        assert_eq!(summary["truncated"], json!(true));
        assert_eq!(summary["chars"], json!(2_000 + 14));
        assert_eq!(
            summary["preview"].as_str().unwrap().chars().count(),
            AUDIT_MAX_CHARS
        );
        let exactly = json!("x".repeat(AUDIT_MAX_CHARS - 2));
        assert_eq!(summarize_json(&exactly), exactly);
    }
}
