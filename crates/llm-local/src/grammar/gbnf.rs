//! GBNF text: literals, rule names and the rule bodies every grammar shares.

use std::fmt::Write as _;

use serde_json::Value;

/// A GBNF string literal for `text`.
pub(super) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A GBNF literal for the compact JSON encoding of `value`.
pub(super) fn json_literal(value: &Value) -> String {
    literal(&value.to_string())
}

pub(super) fn sanitize(hint: &str) -> String {
    let mut name = String::new();
    for c in hint.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') && !name.is_empty() {
            name.push('-');
        }
    }
    let name = name.trim_end_matches('-');
    if name.is_empty() {
        "r".to_string()
    } else {
        name.chars().take(40).collect()
    }
}

pub(super) const CHAR_RULE: &str = r#"[^"\\\x00-\x1F\x7F] | "\\" ["\\/bfnrt]"#;
pub(super) const INT_BODY: &str = r#""-"? ("0" | [1-9] [0-9]{0,15})"#;
pub(super) const UINT_BODY: &str = r#"("0" | [1-9] [0-9]{0,15})"#;
pub(super) const FRACTION: &str = r#"("." [0-9]{1,6})?"#;
