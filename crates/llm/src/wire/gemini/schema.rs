//! JSON Schema → the OpenAPI 3.0 subset Gemini accepts for `functionDeclarations[].parameters`
//! and `responseSchema`.
//!
//! Gemini rejects the whole request on a key its `Schema` object does not know
//! (`additionalProperties`, `$schema`, `$ref`, `const`, `oneOf`, …), on a string `format` other
//! than `enum`/`date-time`, on a non-string `enum`, and on an empty `properties` object. So the
//! schema is rebuilt from the keys Gemini documents, with what can be kept translated:
//! local `$ref`s are inlined, `oneOf` becomes `anyOf`, `allOf` is merged, `const` becomes a
//! one-value `enum`, and `null` in a type list becomes `nullable`.

use serde_json::{Map, Value, json};

/// Keys of Gemini's `Schema` copied as they are.
const PLAIN_KEYS: &[&str] = &[
    "description",
    "title",
    "nullable",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "pattern",
    "minProperties",
    "maxProperties",
    "propertyOrdering",
];

/// Deepest nesting followed (also bounds recursive `$ref`s).
const MAX_DEPTH: usize = 24;

/// The part of a JSON Schema Gemini accepts (see the module documentation). A schema that is
/// not an object (`true`) becomes `{}`.
pub fn sanitize_schema(schema: &Value) -> Value {
    Value::Object(sanitize(schema, schema, 0))
}

fn sanitize(node: &Value, root: &Value, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    let Value::Object(map) = node else {
        return out;
    };
    if depth > MAX_DEPTH {
        out.insert("type".into(), json!("object"));
        return out;
    }
    if let Some(target) = map
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve_ref(root, r))
    {
        out = sanitize(target, root, depth + 1);
    }
    for key in PLAIN_KEYS {
        if let Some(value) = map.get(*key) {
            out.insert((*key).to_string(), value.clone());
        }
    }
    copy_type(map, &mut out);
    if let Some(properties) = map.get("properties").and_then(Value::as_object) {
        let sanitized: Map<String, Value> = properties
            .iter()
            .map(|(name, schema)| {
                (
                    name.clone(),
                    Value::Object(sanitize(schema, root, depth + 1)),
                )
            })
            .collect();
        merge_properties(&mut out, sanitized);
    }
    if let Some(required) = map.get("required").and_then(Value::as_array) {
        merge_required(&mut out, required);
    }
    match map.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert(
                "items".into(),
                Value::Object(sanitize(items, root, depth + 1)),
            );
        }
        // A tuple: Gemini has one item schema, so the first one stands for all.
        Some(Value::Array(tuple)) => {
            if let Some(first) = tuple.first() {
                out.insert(
                    "items".into(),
                    Value::Object(sanitize(first, root, depth + 1)),
                );
            }
        }
        _ => {}
    }
    copy_enum(map, &mut out);
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = map.get(key).and_then(Value::as_array) {
            add_any_of(&mut out, options, root, depth);
        }
    }
    if let Some(parts) = map.get("allOf").and_then(Value::as_array) {
        for part in parts {
            let part = sanitize(part, root, depth + 1);
            merge_into(&mut out, part);
        }
    }
    copy_format(map, &mut out);
    tidy(&mut out);
    out
}

/// `#/$defs/Name`, `#/definitions/Name` (any local JSON pointer).
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    root.pointer(pointer)
}

/// `type`, with a type list turned into one type (plus `nullable`) or an `anyOf`.
fn copy_type(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    match map.get("type") {
        Some(Value::String(kind)) if kind == "null" => {
            out.insert("nullable".into(), json!(true));
        }
        Some(Value::String(kind)) => {
            out.insert("type".into(), json!(kind));
        }
        Some(Value::Array(kinds)) => {
            let named: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            if named.contains(&"null") {
                out.insert("nullable".into(), json!(true));
            }
            let real: Vec<&str> = named.into_iter().filter(|k| *k != "null").collect();
            match real.as_slice() {
                [] => {}
                [one] => {
                    out.insert("type".into(), json!(one));
                }
                several => {
                    let options: Vec<Value> = several.iter().map(|k| json!({"type": k})).collect();
                    out.insert("anyOf".into(), Value::Array(options));
                }
            }
        }
        _ => {}
    }
}

/// `enum` when every value is a string (Gemini's only kind), `null` becoming `nullable`;
/// a string `const` as a one-value `enum`.
fn copy_enum(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    let values: Vec<&Value> = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().collect(),
        (None, Some(value)) => vec![value],
        _ => return,
    };
    if values.iter().any(|v| v.is_null()) {
        out.insert("nullable".into(), json!(true));
    }
    let strings: Vec<&Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    if !strings.is_empty() && strings.iter().all(|v| v.is_string()) {
        out.insert(
            "enum".into(),
            Value::Array(strings.into_iter().cloned().collect()),
        );
        out.entry("type").or_insert_with(|| json!("string"));
    }
}

/// `anyOf`/`oneOf` options; `{"type": "null"}` options become `nullable`, and a single
/// remaining option is merged into the node.
fn add_any_of(out: &mut Map<String, Value>, options: &[Value], root: &Value, depth: usize) {
    let mut kept = Vec::with_capacity(options.len());
    for option in options {
        if option.get("type").and_then(Value::as_str) == Some("null") {
            out.insert("nullable".into(), json!(true));
        } else {
            kept.push(sanitize(option, root, depth + 1));
        }
    }
    if kept.len() == 1 {
        if let Some(only) = kept.pop() {
            merge_into(out, only);
        }
    } else if !kept.is_empty() {
        let list = out.entry("anyOf").or_insert_with(|| json!([]));
        if let Some(list) = list.as_array_mut() {
            list.extend(kept.into_iter().map(Value::Object));
        }
    }
}

/// Adds `part`'s keys to `out`: properties and `required` are unioned, other keys are set
/// only where `out` has none.
fn merge_into(out: &mut Map<String, Value>, mut part: Map<String, Value>) {
    if let Some(Value::Object(properties)) = part.remove("properties") {
        merge_properties(out, properties);
    }
    if let Some(Value::Array(required)) = part.remove("required") {
        merge_required(out, &required);
    }
    for (key, value) in part {
        out.entry(key).or_insert(value);
    }
}

fn merge_properties(out: &mut Map<String, Value>, properties: Map<String, Value>) {
    let entry = out
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(existing) = entry.as_object_mut() {
        existing.extend(properties);
    }
}

fn merge_required(out: &mut Map<String, Value>, required: &[Value]) {
    let entry = out.entry("required").or_insert_with(|| json!([]));
    if let Some(list) = entry.as_array_mut() {
        for name in required.iter().filter(|v| v.is_string()) {
            if !list.contains(name) {
                list.push(name.clone());
            }
        }
    }
}

/// `format` where Gemini supports it for the node's type.
fn copy_format(map: &Map<String, Value>, out: &mut Map<String, Value>) {
    let Some(format) = map.get("format").and_then(Value::as_str) else {
        return;
    };
    let allowed: &[&str] = match out.get("type").and_then(Value::as_str) {
        Some("string") => &["enum", "date-time"],
        Some("number") => &["float", "double"],
        Some("integer") => &["int32", "int64"],
        _ => &[],
    };
    if allowed.contains(&format) {
        out.insert("format".into(), json!(format));
    }
}

/// Drops what Gemini refuses once the node is built: an empty `properties`, `required` names
/// that are not properties, and `type` beside `anyOf`.
fn tidy(out: &mut Map<String, Value>) {
    let names: Vec<String> = out
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if names.is_empty() {
        out.remove("properties");
    }
    if let Some(Value::Array(required)) = out.get_mut("required") {
        required.retain(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)));
        if required.is_empty() {
            out.remove("required");
        }
    }
    if out.contains_key("anyOf") {
        out.remove("type");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_keys_are_dropped_and_nested_schemas_cleaned() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": {"type": "string", "description": "File path", "format": "uri", "default": "."},
                "limit": {"type": ["integer", "null"], "minimum": 1, "format": "int32", "exclusiveMaximum": 10},
                "mode": {"const": "fast"},
                "tags": {"type": "array", "items": {"type": "string", "additionalProperties": false}, "uniqueItems": true},
                "options": {"type": "object", "properties": {}, "additionalProperties": true}
            },
            "required": ["path", "ghost"]
        });
        assert_eq!(
            sanitize_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path"},
                    "limit": {"type": "integer", "nullable": true, "minimum": 1, "format": "int32"},
                    "mode": {"type": "string", "enum": ["fast"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "options": {"type": "object"}
                },
                "required": ["path"]
            })
        );
    }

    #[test]
    fn refs_are_inlined_and_combinators_translated() {
        let schema = json!({
            "type": "object",
            "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}},
            "properties": {
                "at": {"$ref": "#/$defs/Point", "description": "Where"},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "both": {"allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "boolean"}}}
                ]},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "color": {"enum": ["red", null]}
            }
        });
        let clean = sanitize_schema(&schema);
        assert_eq!(
            clean["properties"]["at"],
            json!({"type": "object", "description": "Where",
                "properties": {"x": {"type": "number"}}, "required": ["x"]})
        );
        assert_eq!(
            clean["properties"]["either"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
        assert_eq!(
            clean["properties"]["maybe"],
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(
            clean["properties"]["both"],
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                "required": ["a"]})
        );
        assert_eq!(clean["properties"]["level"], json!({"type": "integer"}));
        assert_eq!(
            clean["properties"]["color"],
            json!({"type": "string", "enum": ["red"], "nullable": true})
        );
        assert!(clean.get("$defs").is_none());
    }

    #[test]
    fn recursive_refs_stop() {
        let schema = json!({
            "type": "object",
            "properties": {"child": {"$ref": "#"}}
        });
        let clean = sanitize_schema(&schema);
        assert_eq!(clean["type"], "object");
        assert!(clean.to_string().len() < 10_000);
        assert_eq!(sanitize_schema(&json!(true)), json!({}));
    }
}
