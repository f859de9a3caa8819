//! Reading tool arguments: aliases, lenient types and clamped numbers.
//!
//! Models send arguments in many shapes (`filePath` or `file_path`, `"true"` or `true`, `"200"`
//! or `200`), so every accessor takes a list of accepted names and coerces obvious encodings.

use serde_json::Value;

/// A view over a tool's JSON arguments.
#[derive(Debug, Clone, Copy)]
pub struct Args<'a>(pub &'a Value);

impl<'a> Args<'a> {
    /// The first present, non-null value among `names`.
    pub fn value(&self, names: &[&str]) -> Option<&'a Value> {
        let object = self.0.as_object()?;
        names
            .iter()
            .find_map(|name| object.get(*name).filter(|value| !value.is_null()))
    }

    /// A string argument; numbers and booleans are not coerced into strings.
    pub fn str(&self, names: &[&str]) -> Option<&'a str> {
        self.value(names).and_then(Value::as_str)
    }

    /// A non-empty (after trimming) string argument.
    pub fn non_empty_str(&self, names: &[&str]) -> Option<&'a str> {
        self.str(names).filter(|text| !text.trim().is_empty())
    }

    /// A boolean argument; accepts `true`/`false`, `"true"`/`"false"`, `"1"`/`"0"`, `1`/`0`.
    pub fn bool(&self, names: &[&str]) -> Option<bool> {
        match self.value(names)? {
            Value::Bool(value) => Some(*value),
            Value::Number(number) => number.as_f64().map(|value| value != 0.0),
            Value::String(text) => match text.trim().to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" => Some(true),
                "false" | "0" | "no" | "" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// An integer argument; accepts numbers and numeric strings, rounds floats down, and
    /// treats negatives as 0.
    pub fn u64(&self, names: &[&str]) -> Option<u64> {
        match self.value(names)? {
            Value::Number(number) => number
                .as_u64()
                .or_else(|| number.as_f64().map(|value| value.max(0.0).floor() as u64)),
            Value::String(text) => text
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|value| value.is_finite())
                .map(|value| value.max(0.0).floor() as u64),
            _ => None,
        }
    }

    /// An integer argument clamped to `min..=max`, `default` when absent or unreadable.
    pub fn clamped(&self, names: &[&str], default: u64, min: u64, max: u64) -> u64 {
        self.u64(names).unwrap_or(default).clamp(min, max)
    }

    /// A list of strings; a single string becomes a one-element list, numbers are rendered.
    pub fn string_list(&self, names: &[&str]) -> Vec<String> {
        match self.value(names) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|item| match item {
                    Value::String(text) => Some(text.clone()),
                    Value::Number(number) => Some(number.to_string()),
                    Value::Bool(value) => Some(value.to_string()),
                    _ => None,
                })
                .collect(),
            Some(Value::String(text)) if !text.is_empty() => vec![text.clone()],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_and_coercions() {
        let value = json!({"file_path": "a.rs", "limit": "12", "all": "true", "n": -3, "x": null});
        let args = Args(&value);
        assert_eq!(args.str(&["path", "file_path"]), Some("a.rs"));
        assert_eq!(args.u64(&["limit"]), Some(12));
        assert_eq!(args.bool(&["all"]), Some(true));
        assert_eq!(args.u64(&["n"]), Some(0));
        assert_eq!(args.str(&["x", "file_path"]), Some("a.rs"));
        assert_eq!(args.clamped(&["limit"], 5, 20, 30), 20);
        assert_eq!(args.clamped(&["missing"], 5, 1, 30), 5);
    }
}
