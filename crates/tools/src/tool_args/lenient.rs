//! Small deserializers for the lenient encodings models send: `"true"` for `true`, `"200"`
//! for `200`, `12.7` for `12`, a single string for a list, an argv array for a command line.

use serde::de::{self, Deserializer, SeqAccess, Visitor};

struct U64Visitor;

impl<'de> Visitor<'de> for U64Visitor {
    type Value = Option<u64>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a non-negative integer or a numeric string")
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Some(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Some(u64::try_from(value).unwrap_or(0)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        if value.is_finite() {
            Ok(Some(value.max(0.0).floor() as u64))
        } else {
            Err(E::custom("expected a finite number"))
        }
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        let trimmed = value.trim();
        if trimmed.is_empty() {
            return Ok(None);
        }
        match trimmed.parse::<f64>() {
            Ok(number) => self.visit_f64(number),
            Err(_) => Err(E::invalid_value(de::Unexpected::Str(value), &self)),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(U64Visitor)
    }
}

/// An optional integer: numbers (floats rounded down, negatives as 0), numeric strings; null
/// or an empty string is absent.
pub fn opt_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    deserializer.deserialize_any(U64Visitor)
}

/// A required integer with the same coercions as [`opt_u64`].
pub fn req_u64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    opt_u64(deserializer)?.ok_or_else(|| de::Error::custom("expected an integer, got nothing"))
}

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = Option<bool>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("true or false (also \"true\", \"false\", 1, 0)")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(Some(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Some(value != 0))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Self::Value, E> {
        Ok(Some(value != 0))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        Ok(Some(value != 0.0))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        match value.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(Some(true)),
            "false" | "0" | "no" | "" => Ok(Some(false)),
            _ => Err(E::invalid_value(de::Unexpected::Str(value), &self)),
        }
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(BoolVisitor)
    }
}

/// An optional boolean: `true`/`false`, `"true"`/`"false"`/`"yes"`/`"no"`, `1`/`0`.
pub fn opt_bool<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    deserializer.deserialize_any(BoolVisitor)
}

/// One list item: strings as they are, numbers and booleans rendered.
fn item_text(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        serde_json::Value::Bool(value) => Some(value.to_string()),
        _ => None,
    }
}

/// A list of strings: an array of strings (numbers and booleans rendered), or one string (an
/// empty string is an empty list). Anything else is an error, never silently dropped.
pub fn string_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let value = <serde_json::Value as serde::Deserialize>::deserialize(deserializer)?;
    match value {
        serde_json::Value::Null => Ok(Vec::new()),
        serde_json::Value::String(text) if text.is_empty() => Ok(Vec::new()),
        serde_json::Value::String(text) => Ok(vec![text]),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| {
                item_text(item).ok_or_else(|| {
                    de::Error::custom(format!("list items must be strings, got {item}"))
                })
            })
            .collect(),
        other => Err(de::Error::custom(format!(
            "expected a list of strings, got {other}"
        ))),
    }
}

struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = String;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("shell text, or an argv array of strings")
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Self::Value, E> {
        Ok(value.to_string())
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Self::Value, E> {
        Ok(value)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut words = Vec::new();
        while let Some(item) = seq.next_element::<serde_json::Value>()? {
            let Some(text) = item_text(&item) else {
                return Err(de::Error::custom(format!(
                    "argv items must be strings, got {item}"
                )));
            };
            words.push(crate::script::shell_quote(&text));
        }
        Ok(words.join(" "))
    }
}

/// A command line: shell text, or an argv array (`["bash", "-lc", "…"]`) quoted back into
/// shell text, so the policy and the tool see the very same text.
pub fn command<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    deserializer.deserialize_any(CommandVisitor)
}

/// A string that is not empty once trimmed (kept trimmed).
pub fn non_empty<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(serde::de::Error::custom("must not be empty"));
    }
    Ok(trimmed.to_string())
}

/// An image size `WIDTHxHEIGHT` (each 16..=8192 pixels) or `auto`; blank counts as unset.
pub fn image_size<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let Some(text) = <Option<String> as serde::Deserialize>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() {
        return Ok(None);
    }
    if text == "auto" {
        return Ok(Some(text));
    }
    let pixels = |side: &str| {
        side.parse::<u32>()
            .ok()
            .filter(|n| (16..=8192).contains(n) && !side.starts_with('0'))
    };
    match text.split_once('x') {
        Some((w, h)) if pixels(w).is_some() && pixels(h).is_some() => Ok(Some(text)),
        _ => Err(serde::de::Error::custom(format!(
            "{text:?} is not a size; use WIDTHxHEIGHT such as 1024x1024, 1536x1024 or 1024x1536"
        ))),
    }
}
