//! A tolerant scanner over JSON text: the byte spans of strings and values, for the code that
//! locates a field for an error message and the panel's in-place edits of models.json. Not a
//! parser: it runs on text serde has read, and gives up (`None`) on text it cannot follow.

/// The first byte at or after `at` that is not JSON whitespace.
pub fn skip_ws(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && bytes[at].is_ascii_whitespace() {
        at += 1;
    }
    at
}

/// The end (exclusive) of the string that starts at `at` (a `"`).
pub fn skip_string(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The end (exclusive) of the value that starts at `at`; `None` for an unbalanced bracket
/// or no value at all.
pub fn skip_value(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => skip_string(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = skip_string(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = at;
            while i < bytes.len()
                && !matches!(bytes[i], b',' | b']' | b'}')
                && !bytes[i].is_ascii_whitespace()
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_of_strings_values_and_broken_text() {
        let text = br#"  {"a": "x\"y", "b": [1, {"c": null}], "d": 12}"#;
        assert_eq!(skip_ws(text, 0), 2);
        assert_eq!(skip_value(text, 2), Some(text.len()));
        assert_eq!(skip_string(text, 8), Some(14));
        assert_eq!(skip_value(text, 21), Some(37));
        assert_eq!(skip_value(b"12,", 0), Some(2));
        // Broken text gives up instead of guessing (or underflowing).
        assert_eq!(skip_value(b"]", 0), None);
        assert_eq!(skip_value(b"[1, 2", 0), None);
        assert_eq!(skip_value(b",", 0), None);
        assert_eq!(skip_string(b"\"open", 0), None);
    }
}
