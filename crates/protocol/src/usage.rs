//! Token usage, normalized from every provider's field names.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Token counts of one or more model calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens not served from cache.
    #[serde(default)]
    pub input: u64,
    /// Generated tokens (including reasoning).
    #[serde(default)]
    pub output: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default)]
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    #[serde(default)]
    pub cache_write: u64,
    /// Total as reported, or the sum of the parts.
    #[serde(default)]
    pub total: u64,
    /// Reasoning tokens the provider reports, already counted in `output` (OpenAI's
    /// `reasoning_tokens`; Anthropic does not report them apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

const INPUT_KEYS: &[&str] = &[
    "input",
    "inputTokens",
    "input_tokens",
    "promptTokens",
    "prompt_tokens",
];
const OUTPUT_KEYS: &[&str] = &[
    "output",
    "outputTokens",
    "output_tokens",
    "completionTokens",
    "completion_tokens",
];
const CACHE_READ_KEYS: &[&str] = &[
    "cacheRead",
    "cache_read",
    "cacheReadTokens",
    "cache_read_tokens",
    "cacheReadInputTokens",
    "cache_read_input_tokens",
    "cachedTokens",
    "cached_tokens",
];
const CACHE_WRITE_KEYS: &[&str] = &[
    "cacheWrite",
    "cache_write",
    "cacheWriteTokens",
    "cache_write_tokens",
    "cacheCreationInputTokens",
    "cache_creation_input_tokens",
];
const TOTAL_KEYS: &[&str] = &["total", "totalTokens", "total_tokens"];

fn first_count(object: &serde_json::Map<String, Value>, keys: &[&str]) -> Option<u64> {
    keys.iter().find_map(|key| match object.get(*key)? {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f.round() as u64)
        }),
        _ => None,
    })
}

impl Usage {
    /// Builds a usage value from counts; `total` is the sum of the parts.
    pub fn new(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Self {
        let total = input + output + cache_read + cache_write;
        Self {
            input,
            output,
            cache_read,
            cache_write,
            total,
            reasoning: 0,
        }
    }

    /// Normalizes any known alias spelling (`prompt_tokens`, `inputTokens`,
    /// `cache_creation_input_tokens`, …) into one value. Returns `None` when `value` is not an
    /// object or carries no count at all.
    pub fn from_aliases(value: &Value) -> Option<Usage> {
        let object = value.as_object()?;
        let input = first_count(object, INPUT_KEYS);
        let output = first_count(object, OUTPUT_KEYS);
        let cache_read = first_count(object, CACHE_READ_KEYS);
        let cache_write = first_count(object, CACHE_WRITE_KEYS);
        let total = first_count(object, TOTAL_KEYS);
        if input.is_none()
            && output.is_none()
            && cache_read.is_none()
            && cache_write.is_none()
            && total.is_none()
        {
            return None;
        }
        let mut usage = Usage::new(
            input.unwrap_or(0),
            output.unwrap_or(0),
            cache_read.unwrap_or(0),
            cache_write.unwrap_or(0),
        );
        if let Some(total) = total {
            usage.total = total;
        }
        Some(usage)
    }

    /// Adds another usage into this one.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total += other.total;
        self.reasoning += other.reasoning;
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0 && self.input == 0 && self.output == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalizes_every_alias_family() {
        let openai = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
        assert_eq!(Usage::from_aliases(&openai), Some(Usage::new(10, 5, 0, 0)));
        let anthropic = json!({"input_tokens": 3, "output_tokens": 4,
            "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7});
        assert_eq!(
            Usage::from_aliases(&anthropic),
            Some(Usage::new(3, 4, 100, 7))
        );
        let camel = json!({"inputTokens": 1, "outputTokens": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 99});
        let usage = Usage::from_aliases(&camel).unwrap();
        assert_eq!(
            (
                usage.input,
                usage.output,
                usage.cache_read,
                usage.cache_write,
                usage.total
            ),
            (1, 2, 3, 4, 99)
        );
        let ours = json!({"input": 1, "output": 1});
        assert_eq!(Usage::from_aliases(&ours).unwrap().total, 2);
    }

    #[test]
    fn ignores_non_objects_and_non_numbers() {
        assert_eq!(Usage::from_aliases(&json!([1, 2])), None);
        assert_eq!(Usage::from_aliases(&json!({"input": "12"})), None);
        assert_eq!(
            Usage::from_aliases(&json!({"input": -4, "output": 2}))
                .unwrap()
                .input,
            0
        );
    }
}
