//! Edits of one value anywhere in a JSON file, made in its text (the panel's `splice` edits
//! top-level arrays): setting `configServer.port` or
//! `tools[3].enabled` rewrites those bytes only, so the file keeps its layout, key order,
//! comments-free formatting and the fields its author left out.
//!
//! A missing key is added at the end of its object (with any missing objects on the way), laid
//! out like its siblings. Whether the result is a valid file is for the caller's loader to say.

use crate::json_scan::{skip_string, skip_value, skip_ws};
use serde_json::Value;

/// One step of a path into a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A member of an object.
    Key(&'a str),
    /// An element of an array.
    Index(usize),
}

/// A member of an object: where its key starts, where its value starts and ends.
struct Member {
    key_start: usize,
    key_end: usize,
    value_start: usize,
    value_end: usize,
}

/// The members of the object at `open` (a `{`) and the position of its `}`.
fn members(text: &str, open: usize) -> Option<(Vec<Member>, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'{') {
        return None;
    }
    let mut out = Vec::new();
    let mut at = skip_ws(bytes, open + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some((out, at));
    }
    loop {
        if bytes.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(bytes, at)?;
        let colon = skip_ws(bytes, key_end);
        if bytes.get(colon) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(bytes, colon + 1);
        let value_end = skip_value(bytes, value_start)?;
        out.push(Member {
            key_start: at,
            key_end,
            value_start,
            value_end,
        });
        at = skip_ws(bytes, value_end);
        match bytes.get(at)? {
            b',' => at = skip_ws(bytes, at + 1),
            b'}' => return Some((out, at)),
            _ => return None,
        }
    }
}

/// The elements of the array at `open` (a `[`).
fn elements(text: &str, open: usize) -> Option<Vec<(usize, usize)>> {
    let bytes = text.as_bytes();
    if bytes.get(open) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    let mut at = skip_ws(bytes, open + 1);
    if bytes.get(at) == Some(&b']') {
        return Some(out);
    }
    loop {
        let end = skip_value(bytes, at)?;
        out.push((at, end));
        at = skip_ws(bytes, end);
        match bytes.get(at)? {
            b',' => at = skip_ws(bytes, at + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

fn key_of(text: &str, member: &Member) -> Option<String> {
    serde_json::from_str(&text[member.key_start..member.key_end]).ok()
}

/// The whitespace that starts the line holding byte `at`.
pub fn line_indent(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// How a value is written into a file: on one line, or over several lines like its neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// On one line (its neighbours are).
    OneLine,
    /// Over several lines, nested levels indented by a unit.
    Lines,
}

impl Layout {
    /// One line when `one_line` holds, else several.
    pub fn one_line_if(one_line: bool) -> Self {
        if one_line { Self::OneLine } else { Self::Lines }
    }
}

/// `value` laid out like its neighbours: over several lines indented by `indent` (nested
/// levels by `unit`), or on one line.
pub fn render(value: &Value, indent: &str, unit: &str, layout: Layout) -> Option<String> {
    if layout == Layout::OneLine {
        return serde_json::to_string(value).ok();
    }
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(value, &mut serializer).ok()?;
    let pretty = String::from_utf8(out).ok()?;
    Some(pretty.replace('\n', &format!("\n{indent}")))
}

/// Where the value at `path` sits in `text`, if it is there.
fn find(text: &str, path: &[Step]) -> Option<(usize, usize)> {
    let mut at = skip_ws(text.as_bytes(), 0);
    let mut end = skip_value(text.as_bytes(), at)?;
    for step in path {
        (at, end) = match *step {
            Step::Key(key) => {
                let (members, _) = members(text, at)?;
                let member = members
                    .iter()
                    .rev()
                    .find(|m| key_of(text, m).as_deref() == Some(key))?;
                (member.value_start, member.value_end)
            }
            Step::Index(index) => *elements(text, at)?.get(index)?,
        };
    }
    Some((at, end))
}

/// `text` with the value at `path` set to `value` (added, with the objects on its way, when
/// missing), or `None` when the text cannot be followed or a step does not fit (an index past
/// an array's end, a key into something that is not an object).
pub fn set(text: &str, path: &[Step], value: &Value) -> Option<String> {
    // The deepest part of the path that exists.
    let mut found = 0;
    let (mut at, mut end) = find(text, &[])?;
    for depth in 1..=path.len() {
        match find(text, &path[..depth]) {
            Some(span) => {
                (at, end) = span;
                found = depth;
            }
            None => break,
        }
    }
    if found == path.len() {
        let indent = line_indent(text, at);
        let unit = guess_unit(text);
        let one_line = !text[at..end].contains('\n') && !text.contains('\n');
        let rendered = render(value, indent, &unit, Layout::one_line_if(one_line))?;
        return Some(format!("{}{}{}", &text[..at], rendered, &text[end..]));
    }
    // The rest of the path becomes nested objects around the value, added to the object at
    // `at` under the first missing key.
    let Step::Key(first) = path[found] else {
        return None;
    };
    let mut nested = value.clone();
    for step in path[found + 1..].iter().rev() {
        match *step {
            Step::Key(key) => {
                let mut object = serde_json::Map::new();
                object.insert(key.to_string(), nested);
                nested = Value::Object(object);
            }
            Step::Index(_) => return None,
        }
    }
    insert_member(text, at, first, &nested)
}

/// The indentation step of the file: the indent of its first indented line, or two spaces.
fn guess_unit(text: &str) -> String {
    text.lines()
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
        .to_string()
}

fn insert_member(text: &str, open: usize, key: &str, value: &Value) -> Option<String> {
    let (members, close) = members(text, open)?;
    let key_json = serde_json::to_string(key).ok()?;
    let base = line_indent(text, open);
    match (members.first(), members.last()) {
        (Some(first), Some(last)) => {
            let colon = &text[first.key_end..first.value_start];
            let separator = member_separator(text, open, &members, colon);
            let one_line = !separator.contains('\n');
            let indent = line_indent(text, first.key_start);
            let unit = indent
                .strip_prefix(base)
                .filter(|unit| !unit.is_empty())
                .map_or_else(|| guess_unit(text), str::to_string);
            let rendered = render(value, indent, &unit, Layout::one_line_if(one_line))?;
            Some(format!(
                "{},{separator}{key_json}{colon}{rendered}{}",
                &text[..last.value_end],
                &text[last.value_end..]
            ))
        }
        _ => {
            let unit = guess_unit(text);
            let indent = format!("{base}{unit}");
            let rendered = render(value, &indent, &unit, Layout::Lines)?;
            Some(format!(
                "{}\n{indent}{key_json}: {rendered}\n{base}{}",
                &text[..=open],
                &text[close..]
            ))
        }
    }
}

/// `text` with `value` appended to the array at `path` (an array holding only `value` when
/// the path is missing), laid out like the array's elements.
pub fn push(text: &str, path: &[Step], value: &Value) -> Option<String> {
    let Some((open, _)) = find(text, path) else {
        return set(text, path, &Value::Array(vec![value.clone()]));
    };
    let items = elements(text, open)?;
    let base = line_indent(text, open);
    match (items.first(), items.last()) {
        (Some(&(first, _)), Some(&(_, last_end))) => {
            let separator = &text[open + 1..first];
            let one_line = !separator.contains('\n');
            let indent = line_indent(text, first);
            let unit = indent
                .strip_prefix(base)
                .filter(|unit| !unit.is_empty())
                .map_or_else(|| guess_unit(text), str::to_string);
            let rendered = render(value, indent, &unit, Layout::one_line_if(one_line))?;
            Some(format!(
                "{},{separator}{rendered}{}",
                &text[..last_end],
                &text[last_end..]
            ))
        }
        _ => {
            let close = skip_ws(text.as_bytes(), open + 1);
            let unit = guess_unit(text);
            let indent = format!("{base}{unit}");
            let rendered = render(value, &indent, &unit, Layout::Lines)?;
            Some(format!(
                "{}\n{indent}{rendered}\n{base}{}",
                &text[..=open],
                &text[close..]
            ))
        }
    }
}

/// The whitespace that goes after the comma before a new member: what the file puts between
/// its members, or after the opening brace of a multi-line object, or one space in a one-line
/// object written with spaces.
fn member_separator<'a>(text: &'a str, open: usize, members: &[Member], colon: &str) -> &'a str {
    if let [first, second, ..] = members {
        let between = &text[first.value_end..second.key_start];
        if let Some(comma) = between.find(',') {
            return &between[comma + 1..];
        }
    }
    let after_open = &text[open + 1..members.first().map_or(open + 1, |m| m.key_start)];
    if after_open.contains('\n') || !colon.contains(' ') {
        after_open
    } else {
        " "
    }
}

/// `text` without the member or element at `path` (and its separator), or `None` when it is
/// not there or the text cannot be followed.
pub fn remove(text: &str, path: &[Step]) -> Option<String> {
    let (last, parent) = path.split_last()?;
    let (open, _) = find(text, parent)?;
    let spans: Vec<(usize, usize)> = match *last {
        Step::Key(key) => {
            let (members, _) = members(text, open)?;
            let index = members
                .iter()
                .position(|m| key_of(text, m).as_deref() == Some(key))?;
            let spans: Vec<(usize, usize)> =
                members.iter().map(|m| (m.key_start, m.value_end)).collect();
            return cut(text, open, &spans, index);
        }
        Step::Index(_) => elements(text, open)?,
    };
    let Step::Index(index) = *last else {
        return None;
    };
    cut(text, open, &spans, index)
}

fn cut(text: &str, open: usize, spans: &[(usize, usize)], index: usize) -> Option<String> {
    let &(start, end) = spans.get(index)?;
    let (from, to) = if spans.len() == 1 {
        // The only entry: the container is left empty, closing bracket where it was.
        let close = skip_ws(text.as_bytes(), end);
        (open + 1, close)
    } else if index > 0 {
        (spans[index - 1].1, end)
    } else {
        (start, spans[1].0)
    };
    Some(format!("{}{}", &text[..from], &text[to..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = "{\n  \"version\": 1,\n  \"configServer\": {\n    \"port\": 14580\n  },\n  \"theme\": \"dark\"\n}\n";

    #[test]
    fn setting_an_existing_value_changes_only_its_bytes() {
        let out = set(
            FILE,
            &[Step::Key("configServer"), Step::Key("port")],
            &json!(9000),
        )
        .unwrap();
        assert_eq!(out, FILE.replace("14580", "9000"));
        let out = set(FILE, &[Step::Key("theme")], &json!("light")).unwrap();
        assert_eq!(out, FILE.replace("dark", "light"));
    }

    #[test]
    fn missing_keys_are_added_like_their_siblings() {
        let out = set(
            FILE,
            &[Step::Key("configServer"), Step::Key("host")],
            &json!("0.0.0.0"),
        )
        .unwrap();
        assert_eq!(
            out,
            FILE.replace(
                "\"port\": 14580\n",
                "\"port\": 14580,\n    \"host\": \"0.0.0.0\"\n"
            )
        );
        let out = set(
            FILE,
            &[Step::Key("features"), Step::Key("hooks")],
            &json!(false),
        )
        .unwrap();
        assert!(
            out.ends_with(
                "\"theme\": \"dark\",\n  \"features\": {\n    \"hooks\": false\n  }\n}\n"
            ),
            "{out}"
        );
        let out = set("{}", &[Step::Key("mode")], &json!("radical")).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            json!({"mode": "radical"})
        );
        let out = set("{\"a\":1}", &[Step::Key("b")], &json!(2)).unwrap();
        assert_eq!(out, "{\"a\":1,\"b\":2}");
    }

    #[test]
    fn arrays_are_followed_by_index() {
        let text =
            "{\"tools\": [\n  {\"name\": \"a\", \"enabled\": true},\n  {\"name\": \"b\"}\n]}";
        let out = set(
            text,
            &[Step::Key("tools"), Step::Index(1), Step::Key("enabled")],
            &json!(false),
        )
        .unwrap();
        assert_eq!(
            out,
            text.replace("{\"name\": \"b\"}", "{\"name\": \"b\", \"enabled\": false}")
        );
        let out = set(
            text,
            &[Step::Key("tools"), Step::Index(0), Step::Key("enabled")],
            &json!(false),
        )
        .unwrap();
        assert_eq!(out, text.replacen("true", "false", 1));
        assert!(
            set(
                text,
                &[Step::Key("tools"), Step::Index(5), Step::Key("x")],
                &json!(1)
            )
            .is_none()
        );
        assert!(set("[1", &[Step::Key("x")], &json!(1)).is_none());
    }

    #[test]
    fn pushing_follows_the_array_or_makes_one() {
        let text = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": []}\n    ]\n  }\n}\n";
        let out = push(
            text,
            &[Step::Key("hooks"), Step::Key("Stop")],
            &json!({"a": 1}),
        )
        .unwrap();
        assert_eq!(
            out,
            text.replace(
                "{\"hooks\": []}\n",
                "{\"hooks\": []},\n      {\n        \"a\": 1\n      }\n"
            )
        );
        let out = push(
            text,
            &[Step::Key("hooks"), Step::Key("PreToolUse")],
            &json!(1),
        )
        .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["hooks"]["PreToolUse"], json!([1]));
        assert_eq!(value["hooks"]["Stop"], json!([{"hooks": []}]));
        let out = push(
            text,
            &[
                Step::Key("hooks"),
                Step::Key("Stop"),
                Step::Index(0),
                Step::Key("hooks"),
            ],
            &json!(2),
        )
        .unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["hooks"]["Stop"][0]["hooks"], json!([2]));
    }

    #[test]
    fn removing_members_and_elements_keeps_the_rest() {
        let out = remove(FILE, &[Step::Key("theme")]).unwrap();
        assert_eq!(out, FILE.replace(",\n  \"theme\": \"dark\"", ""));
        let out = remove(FILE, &[Step::Key("configServer"), Step::Key("port")]).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["configServer"],
            json!({})
        );
        let text = "{\"a\": [1, 2, 3]}";
        assert_eq!(
            remove(text, &[Step::Key("a"), Step::Index(1)]).unwrap(),
            "{\"a\": [1, 3]}"
        );
        assert_eq!(
            remove(text, &[Step::Key("a"), Step::Index(0)]).unwrap(),
            "{\"a\": [2, 3]}"
        );
        assert!(remove(text, &[Step::Key("b")]).is_none());
    }
}
