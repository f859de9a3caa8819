//! The argument schema a model sees, derived with `schemars` from the same struct serde reads,
//! so the two cannot drift: canonical field names only (aliases stay accepted by serde, never
//! advertised), one-line descriptions from the fields' doc comments, and only the keywords a
//! model needs to call the tool right. The struct's own doc comment, its name and
//! `additionalProperties` are left out: the tool's description says what it does, and unknown
//! fields are refused by serde whatever the schema says (tools do not use strict mode).

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The keywords kept on a property, in this order.
const PROPERTY_KEYWORDS: [&str; 7] = [
    "type",
    "enum",
    "items",
    "minimum",
    "maximum",
    "examples",
    "description",
];

/// The `parameters` JSON schema of a tool whose arguments are `T`: `type: object`,
/// `properties` and (when a field is required) `required`.
pub fn parameters<T: JsonSchema>() -> Value {
    let root = SchemaSettings::draft07()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    let properties: Map<String, Value> = root
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, schema)| (name.clone(), property(schema)))
        .collect();
    let mut parameters = Map::new();
    parameters.insert("type".into(), Value::from("object"));
    parameters.insert("properties".into(), Value::Object(properties));
    if let Some(required) = root
        .get("required")
        .filter(|required| required.as_array().is_some_and(|names| !names.is_empty()))
    {
        parameters.insert("required".into(), required.clone());
    }
    Value::Object(parameters)
}

/// The canonical field names of `T`, in declaration order (what error messages list).
pub fn canonical_fields<T: JsonSchema>() -> Vec<String> {
    parameters::<T>()
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// One property cut down to [`PROPERTY_KEYWORDS`]. An optional field's `["integer", "null"]`
/// becomes `"integer"` (a model leaves the field out rather than send null), and the
/// `minimum: 0` every unsigned integer carries goes (negatives are read as 0 anyway).
fn property(schema: &Value) -> Value {
    let mut kept = Map::new();
    for keyword in PROPERTY_KEYWORDS {
        let Some(value) = schema.get(keyword) else {
            continue;
        };
        let value = match (keyword, value) {
            ("type", Value::Array(types)) => {
                let mut types: Vec<Value> =
                    types.iter().filter(|t| *t != "null").cloned().collect();
                if types.len() == 1 {
                    types.remove(0)
                } else {
                    Value::Array(types)
                }
            }
            ("items", items) => property(items),
            ("minimum", minimum) if minimum.as_u64() == Some(0) => continue,
            _ => value.clone(),
        };
        kept.insert(keyword.to_string(), value);
    }
    Value::Object(kept)
}
