//! Reading JSON Schema values: numbers given loosely, enums and consts, sibling keywords.

use serde_json::{Map, Value};

pub(super) fn as_u64(value: Option<&Value>) -> Option<u64> {
    value.and_then(|v| {
        v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f.floor() as u64)
        })
    })
}

pub(super) fn as_f64(value: Option<&Value>) -> Option<f64> {
    value.and_then(Value::as_f64).filter(|f| f.is_finite())
}

/// The closed set of values an item schema allows, if it is an enum or a const.
pub(super) fn enum_values(schema: &Value) -> Option<Vec<Value>> {
    let object = schema.as_object()?;
    if let Some(value) = object.get("const") {
        return Some(vec![value.clone()]);
    }
    object.get("enum")?.as_array().cloned()
}

/// For `anyOf`/`oneOf` next to other keywords (`{"type":"object","anyOf":[...]}`), each option
/// inherits its parent's other keywords.
pub(super) fn merge_siblings(parent: &Map<String, Value>, option: &Value, key: &str) -> Value {
    let Value::Object(option) = option else {
        return option.clone();
    };
    let mut merged = Map::new();
    for (k, v) in parent {
        if k != key && !matches!(k.as_str(), "description" | "title") {
            merged.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in option {
        merged.insert(k.clone(), v.clone());
    }
    Value::Object(merged)
}
