//! Edits of one element of a JSON file's top-level array, made in its text: the rest of the
//! file keeps its bytes (its layout, its key order, the fields its author left out), where
//! reading the file into structs and writing them back would restate every entry with its
//! defaults (`"name": ""` in an entry that had no name).
//!
//! The scanner only finds where values begin and end; whether the result is a valid file is
//! for the caller's loader to say.

use braincode_config::json_edit::{Layout, line_indent, render};
use braincode_config::json_scan::{skip_string, skip_value, skip_ws};
use serde_json::Value;

/// Where the top-level array `key` sits: its brackets and its elements, as byte ranges.
#[derive(Debug, PartialEq, Eq)]
struct ArraySpan {
    open: usize,
    close: usize,
    elements: Vec<(usize, usize)>,
}

fn find_array(text: &str, key: &str) -> Option<ArraySpan> {
    let bytes = text.as_bytes();
    let mut at = skip_ws(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_ws(bytes, at);
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(bytes, at)?;
        let name = &text[at + 1..key_end - 1];
        at = skip_ws(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let value = skip_ws(bytes, at + 1);
        let end = skip_value(bytes, value)?;
        if name == key {
            if bytes.get(value) != Some(&b'[') {
                return None;
            }
            let mut elements = Vec::new();
            let mut i = value + 1;
            loop {
                i = skip_ws(bytes, i);
                if bytes.get(i) == Some(&b']') && elements.is_empty() {
                    break;
                }
                let element_end = skip_value(bytes, i)?;
                elements.push((i, element_end));
                i = skip_ws(bytes, element_end);
                match bytes.get(i)? {
                    b',' => i += 1,
                    b']' => break,
                    _ => return None,
                }
            }
            return Some(ArraySpan {
                open: value,
                close: end - 1,
                elements,
            });
        }
        at = skip_ws(bytes, end);
        match bytes.get(at)? {
            b',' => at += 1,
            _ => return None,
        }
    }
}

/// `text` with `element` appended to its top-level array `key`, or `None` when the text has
/// no such array that the scanner can follow (the caller then writes the whole document).
pub(crate) fn append_element(text: &str, key: &str, element: &Value) -> Option<String> {
    let span = find_array(text, key)?;
    let base = line_indent(text, span.open);
    match (span.elements.first(), span.elements.last()) {
        (Some(&(first, _)), Some(&(_, last_end))) => {
            let separator = &text[span.open + 1..first];
            let one_line = !separator.contains('\n');
            let indent = line_indent(text, first);
            let unit = indent
                .strip_prefix(base)
                .filter(|unit| !unit.is_empty())
                .unwrap_or("  ");
            let rendered = render(element, indent, unit, Layout::one_line_if(one_line))?;
            let mut out = String::with_capacity(text.len() + rendered.len() + 8);
            out.push_str(&text[..last_end]);
            out.push(',');
            out.push_str(separator);
            out.push_str(&rendered);
            out.push_str(&text[last_end..]);
            Some(out)
        }
        _ => {
            let unit = if base.is_empty() { "  " } else { base };
            let indent = format!("{base}{unit}");
            let rendered = render(element, &indent, unit, Layout::Lines)?;
            let mut out = String::with_capacity(text.len() + rendered.len() + 8);
            out.push_str(&text[..=span.open]);
            out.push('\n');
            out.push_str(&indent);
            out.push_str(&rendered);
            out.push('\n');
            out.push_str(base);
            out.push_str(&text[span.close..]);
            Some(out)
        }
    }
}

/// `text` without element `index` of its top-level array `key` (and the separator before or
/// after it), or `None` when the scanner cannot follow the text or there is no such element.
pub(crate) fn remove_element(text: &str, key: &str, index: usize) -> Option<String> {
    let span = find_array(text, key)?;
    let &(start, end) = span.elements.get(index)?;
    let (cut_from, cut_to) = if span.elements.len() == 1 {
        (span.open + 1, span.close)
    } else if index > 0 {
        (span.elements[index - 1].1, end)
    } else {
        (start, span.elements[1].0)
    };
    Some(format!("{}{}", &text[..cut_from], &text[cut_to..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "{\n    \"other\": {\"models\": [1]},\n    \"models\": [\n        {\"id\": \"a\", \"s\": \"x]}\\\"\"},\n        {\n            \"id\": \"b\"\n        }\n    ],\n    \"tail\": true\n}\n";

    #[test]
    fn an_appended_element_follows_the_layout_and_leaves_the_rest() {
        let out = append_element(FILE, "models", &json!({"id": "c", "n": [1]})).unwrap();
        assert!(
            out.starts_with(&FILE[..FILE.find("    ],").unwrap() - 1]),
            "{out}"
        );
        assert!(
            out.contains(
                "        },\n        {\n            \"id\": \"c\",\n            \"n\": [\n                1\n            ]\n        }\n    ],"
            ),
            "{out}"
        );
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["models"].as_array().unwrap().len(), 3);
        // Removing it again gives the file back.
        assert_eq!(remove_element(&out, "models", 2).unwrap(), FILE);
    }

    #[test]
    fn removing_keeps_the_neighbours_and_the_separators_right() {
        let first = remove_element(FILE, "models", 0).unwrap();
        let value: Value = serde_json::from_str(&first).unwrap();
        assert_eq!(value["models"], json!([{"id": "b"}]));
        let only = remove_element(&first, "models", 0).unwrap();
        let value: Value = serde_json::from_str(&only).unwrap();
        assert_eq!(value["models"], json!([]));
        assert!(remove_element(FILE, "models", 2).is_none());
        assert!(remove_element(FILE, "nothing", 0).is_none());
    }

    #[test]
    fn empty_and_one_line_arrays() {
        let out = append_element("{\"models\": []}", "models", &json!({"id": "a"})).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["models"],
            json!([{"id": "a"}])
        );
        let out = append_element(
            "{\"models\":[{\"id\":\"a\"}]}",
            "models",
            &json!({"id": "b"}),
        )
        .unwrap();
        assert_eq!(out, "{\"models\":[{\"id\":\"a\"},{\"id\":\"b\"}]}");
        assert!(append_element("[1]", "models", &json!(1)).is_none());
        assert!(append_element("{\"models\": {}}", "models", &json!(1)).is_none());
        assert!(append_element("{\"models\": [1, ", "models", &json!(1)).is_none());
    }
}
