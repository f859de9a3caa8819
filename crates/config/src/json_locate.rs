//! Finding positions and names of fields in JSON text, for error messages: where a value
//! starts (`locate_field`) and which map key an error position falls under (`name_segments`).
//! Only used on text that serde already parsed (or failed on), so it is a tolerant scanner,
//! not a parser.

use crate::json_io::{FieldPath, FieldSegment, line_column};
use crate::json_scan::{skip_string, skip_value, skip_ws};

/// Byte offset of a 1-based line and column (serde_json counts columns in bytes).
pub(crate) fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len())
}

/// Renders a field path. Map keys that serde could not name (non-string keys such as role
/// names parsed into an enum) are recovered from the text: the key whose value contains the
/// error position.
pub(crate) fn name_segments(
    text: &str,
    segments: &[Option<FieldSegment>],
    offset: usize,
) -> String {
    let bytes = text.as_bytes();
    let mut pos = Some(skip_ws(bytes, 0));
    let mut named = Vec::with_capacity(segments.len());
    for segment in segments {
        let resolved = match segment {
            Some(segment) => Some(segment.clone()),
            None => pos
                .and_then(|p| key_containing(bytes, p, offset))
                .map(FieldSegment::Key),
        };
        pos = match (&resolved, pos) {
            (Some(FieldSegment::Key(key)), Some(p)) => find_key(bytes, p, key),
            (Some(FieldSegment::Index(index)), Some(p)) => find_index(bytes, p, *index),
            _ => None,
        };
        named.push(resolved.unwrap_or_else(|| FieldSegment::Key("?".into())));
    }
    FieldPath(named).to_string()
}

/// In the object at `pos`, the key whose value spans `offset`.
fn key_containing(bytes: &[u8], pos: usize, offset: usize) -> Option<String> {
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(bytes, pos + 1);
    while i < bytes.len() && bytes[i] == b'"' {
        let key_end = skip_string(bytes, i)?;
        let key: String = serde_json::from_slice(&bytes[i..key_end]).ok()?;
        let colon = skip_ws(bytes, key_end);
        let value = skip_ws(bytes, colon + 1);
        // A value cut short by the error still "contains" the offset.
        let end = skip_value(bytes, value).unwrap_or(bytes.len());
        if (i..=end).contains(&offset) {
            return Some(key);
        }
        let after = skip_ws(bytes, end);
        if bytes.get(after) != Some(&b',') {
            return None;
        }
        i = skip_ws(bytes, after + 1);
    }
    None
}

/// Finds where the value at `field` starts in valid JSON `text` (1-based line and column).
pub fn locate_field(text: &str, field: &FieldPath) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut pos = skip_ws(bytes, 0);
    for segment in &field.0 {
        pos = match segment {
            FieldSegment::Key(key) => find_key(bytes, pos, key)?,
            FieldSegment::Index(index) => find_index(bytes, pos, *index)?,
        };
    }
    Some(line_column(bytes, pos))
}

fn find_key(bytes: &[u8], pos: usize, wanted: &str) -> Option<usize> {
    if bytes.get(pos) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(bytes, pos + 1);
    while i < bytes.len() && bytes[i] == b'"' {
        let key_end = skip_string(bytes, i)?;
        let key: String = serde_json::from_slice(&bytes[i..key_end]).ok()?;
        let colon = skip_ws(bytes, key_end);
        let value = skip_ws(bytes, colon + 1);
        if key == wanted {
            return Some(value);
        }
        let after = skip_ws(bytes, skip_value(bytes, value)?);
        if bytes.get(after) != Some(&b',') {
            return None;
        }
        i = skip_ws(bytes, after + 1);
    }
    None
}

fn find_index(bytes: &[u8], pos: usize, wanted: usize) -> Option<usize> {
    if bytes.get(pos) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(bytes, pos + 1);
    let mut index = 0;
    while i < bytes.len() && bytes[i] != b']' {
        if index == wanted {
            return Some(i);
        }
        let after = skip_ws(bytes, skip_value(bytes, i)?);
        if bytes.get(after) != Some(&b',') {
            return None;
        }
        i = skip_ws(bytes, after + 1);
        index += 1;
    }
    None
}
