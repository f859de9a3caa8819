//! Keeping every journal line within [`MAX_RECORD_BYTES`]: text fields that would make a
//! record too long are clipped, each with a visible `…[clipped: N bytes]` marker.
//!
//! Callers that know a field can be huge (a model's reply, the final answer, the prompt)
//! clip it with [`clip_text`] before building the record, so the big text is never copied
//! into the journal path. [`fit_record`] is the writer's safety net for any other record: it
//! shortens the longest strings of the record's JSON ("water-filling": every string longer
//! than a common threshold is cut to it) until the line fits.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::MAX_RECORD_BYTES;

/// Room [`fit_record`] leaves under the cap for what changes after clipping (secret
/// redaction may lengthen a line a little) and for the markers' own estimate errors.
const FIT_SLACK_BYTES: usize = 16 * 1024;
/// Strings this short are never clipped (ids, types, statuses): a record whose size comes
/// from many short strings is replaced by a stub instead of being mangled.
const MIN_CLIPPED_STRING_BYTES: usize = 256;
/// Bytes a marker adds at most (`…[clipped: 18446744073709551615 bytes]`).
const MARKER_BYTES: usize = 48;

/// The marker appended to clipped text.
pub fn clip_marker(removed_bytes: usize) -> String {
    format!("…[clipped: {removed_bytes} bytes]")
}

/// `text` if it is at most `max_bytes` long, else its first `max_bytes` bytes (cut on a
/// character boundary) followed by `…[clipped: N bytes]`, where N is what was left out.
pub fn clip_text(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut clipped = String::with_capacity(cut + MARKER_BYTES);
    clipped.push_str(&text[..cut]);
    clipped.push_str(&clip_marker(text.len() - cut));
    Cow::Owned(clipped)
}

/// Whether `text` ends with the marker [`clip_text`] adds.
pub fn is_clipped(text: &str) -> bool {
    text.ends_with(" bytes]")
        && text.rfind("…[clipped: ").is_some_and(|at| {
            text[at + "…[clipped: ".len()..text.len() - " bytes]".len()]
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
}

/// Clips `text` in place (see [`clip_text`]); returns whether it was clipped.
pub fn clip_string(text: &mut String, max_bytes: usize) -> bool {
    if text.len() <= max_bytes {
        return false;
    }
    let mut cut = max_bytes;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let removed = text.len() - cut;
    text.truncate(cut);
    text.push_str(&clip_marker(removed));
    true
}

/// Bytes `c` takes inside a JSON string (serde_json's escaping).
fn json_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Bytes `text` takes inside a JSON string.
fn json_str_len(text: &str) -> usize {
    // Plain text is the common case: one byte per byte.
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        return text.len();
    }
    text.chars().map(json_len).sum()
}

/// Clips `text` so that its kept part takes at most `max_json_bytes` inside a JSON string
/// (the marker comes on top).
fn clip_json(text: &mut String, max_json_bytes: usize) {
    if json_str_len(text) <= max_json_bytes {
        return;
    }
    let mut used = 0;
    let mut cut = 0;
    for (index, c) in text.char_indices() {
        used += json_len(c);
        if used > max_json_bytes {
            cut = index;
            break;
        }
    }
    clip_string(text, cut);
}

fn collect_strings<'a>(value: &'a mut Value, out: &mut Vec<&'a mut String>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => {
            for item in items {
                collect_strings(item, out);
            }
        }
        Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                collect_strings(item, out);
            }
        }
        _ => {}
    }
}

/// Bytes cut by clipping every string longer than `threshold` to it (markers included).
fn saved_at(lengths: &[usize], threshold: usize) -> usize {
    lengths
        .iter()
        .filter(|len| **len > threshold)
        .map(|len| (len - threshold).saturating_sub(MARKER_BYTES))
        .sum()
}

/// Clips the longest strings of `record` (never `type` or `timestamp`) so that its JSON is
/// about `excess` bytes shorter. Returns false when strings longer than
/// [`MIN_CLIPPED_STRING_BYTES`] cannot save that much.
fn clip_longest(record: &mut Map<String, Value>, excess: usize) -> bool {
    let mut strings = Vec::new();
    for (key, value) in record.iter_mut() {
        if key != "type" && key != "timestamp" {
            collect_strings(value, &mut strings);
        }
    }
    let lengths: Vec<usize> = strings.iter().map(|s| json_str_len(s)).collect();
    if saved_at(&lengths, MIN_CLIPPED_STRING_BYTES) < excess {
        return false;
    }
    // The largest threshold that still saves enough (saving shrinks as it grows).
    let (mut low, mut high) = (
        MIN_CLIPPED_STRING_BYTES,
        lengths.iter().copied().max().unwrap_or(0),
    );
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if saved_at(&lengths, mid) >= excess {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    for text in strings {
        clip_json(text, low);
    }
    true
}

/// Encodes a journal record (`{"timestamp":…,"type":…,…}`) into one line body (no newline)
/// of at most `MAX_RECORD_BYTES - 1` bytes after `finish` (the writer's redaction) ran on it,
/// clipping text fields as needed. A record that cannot be clipped to fit (its size is in
/// thousands of short strings) becomes a `record_clipped` stub naming the original type
/// and size, so the journal still says something was there.
pub fn fit_record(
    mut record: Map<String, Value>,
    finish: impl Fn(Vec<u8>) -> Vec<u8>,
) -> Result<Vec<u8>, serde_json::Error> {
    let limit = MAX_RECORD_BYTES - 1;
    let mut line = finish(serde_json::to_vec(&record)?);
    let original_bytes = line.len();
    let mut target = limit.saturating_sub(FIT_SLACK_BYTES);
    // Escaping makes a string's JSON longer than its text; each pass aims lower by what
    // the previous one missed. Two or three passes are enough in practice.
    for _ in 0..8 {
        if line.len() <= limit {
            return Ok(line);
        }
        let excess = line.len().saturating_sub(target);
        if !clip_longest(&mut record, excess) {
            break;
        }
        line = finish(serde_json::to_vec(&record)?);
        target = target.saturating_sub(line.len().saturating_sub(limit));
    }
    if line.len() <= limit {
        return Ok(line);
    }
    let mut stub = Map::new();
    if let Some(timestamp) = record.get("timestamp") {
        stub.insert("timestamp".into(), timestamp.clone());
    }
    stub.insert("type".into(), Value::from("record_clipped"));
    if let Some(original) = record.get("type") {
        stub.insert("originalType".into(), original.clone());
    }
    stub.insert("originalBytes".into(), Value::from(original_bytes));
    stub.insert(
        "reason".into(),
        Value::from(format!(
            "the record was larger than the {MAX_RECORD_BYTES}-byte journal line limit and its text fields could not be clipped to fit"
        )),
    );
    Ok(finish(serde_json::to_vec(&stub)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn as_map(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn short_text_is_kept_and_long_text_is_marked() {
        assert_eq!(clip_text("hello", 5), "hello");
        assert_eq!(clip_text("hello world", 5), "hello…[clipped: 6 bytes]");
        // Never cuts inside a character.
        assert_eq!(clip_text("ééé", 3), "é…[clipped: 4 bytes]");
        let mut text = "abcdef".to_string();
        assert!(clip_string(&mut text, 2));
        assert_eq!(text, "ab…[clipped: 4 bytes]");
    }

    #[test]
    fn a_huge_field_is_clipped_to_fit_and_the_rest_is_kept() {
        let huge = "x".repeat(5 * MAX_RECORD_BYTES);
        let record = as_map(json!({
            "timestamp": 1, "type": "run_end", "summary": huge, "status": "answered",
            "other": "y".repeat(1000)
        }));
        let line = fit_record(record, |l| l).unwrap();
        assert!(line.len() < MAX_RECORD_BYTES);
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["type"], "run_end");
        assert_eq!(back["status"], "answered");
        assert_eq!(back["other"].as_str().unwrap().len(), 1000);
        let summary = back["summary"].as_str().unwrap();
        assert!(
            summary.contains("…[clipped: "),
            "{}",
            &summary[summary.len() - 40..]
        );
        assert!(
            summary.len() > MAX_RECORD_BYTES / 2,
            "most of the budget is used"
        );
    }

    #[test]
    fn escaped_text_still_fits() {
        // Every character escapes to six bytes in JSON.
        let control = "\u{1}".repeat(2 * MAX_RECORD_BYTES);
        let quotes = "\"".repeat(MAX_RECORD_BYTES);
        let record =
            as_map(json!({"timestamp": 1, "type": "worker_end", "a": control, "b": [quotes]}));
        let line = fit_record(record, |l| l).unwrap();
        assert!(line.len() < MAX_RECORD_BYTES, "{}", line.len());
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["type"], "worker_end");
    }

    #[test]
    fn many_short_strings_become_a_stub() {
        let many: Vec<String> = (0..200_000).map(|i| format!("item-{i}")).collect();
        let record = as_map(json!({"timestamp": 7, "type": "todo_plan", "todos": many}));
        let line = fit_record(record, |l| l).unwrap();
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["type"], "record_clipped");
        assert_eq!(back["originalType"], "todo_plan");
        assert_eq!(back["timestamp"], 7);
        assert!(back["originalBytes"].as_u64().unwrap() > MAX_RECORD_BYTES as u64);
    }
}
