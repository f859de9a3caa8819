//! Provider usage objects → [`Usage`], one convention for every provider.
//!
//! The convention: `input` counts prompt tokens NOT served from cache, `cache_read` the
//! cached ones, `cache_write` the ones written to cache, `output` every generated token
//! (reasoning included), and `total` = the provider's total when given, else the sum.
//! OpenAI's `prompt_tokens` / `input_tokens` include cached tokens, so there
//! `input = prompt - cached`; Anthropic's `input_tokens` already exclude them; Gemini's
//! `promptTokenCount` includes `cachedContentTokenCount`, and its `candidatesTokenCount`
//! leaves out `thoughtsTokenCount`, so there `output = candidates + thoughts`.

use braincode_protocol::Usage;
use serde_json::Value;

fn count(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// Normalizes an OpenAI usage object (Chat Completions `prompt_tokens_details.cached_tokens`,
/// Responses `input_tokens_details.cached_tokens`, DeepSeek `prompt_cache_hit_tokens`).
pub fn openai_usage(value: &Value) -> Option<Usage> {
    let mut usage = Usage::from_aliases(value)?;
    let cached = count(value.pointer("/prompt_tokens_details/cached_tokens"))
        .or_else(|| count(value.pointer("/input_tokens_details/cached_tokens")))
        .or_else(|| count(value.get("prompt_cache_hit_tokens")));
    if let Some(cached) = cached {
        usage.cache_read = cached;
        usage.input = usage.input.saturating_sub(cached);
    }
    if let Some(reasoning) = count(value.pointer("/completion_tokens_details/reasoning_tokens"))
        .or_else(|| count(value.pointer("/output_tokens_details/reasoning_tokens")))
    {
        usage.reasoning = reasoning.min(usage.output);
    }
    if count(value.get("total_tokens")).is_none() {
        usage.total = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }
    Some(usage)
}

/// Normalizes Anthropic usage: `message_start` counts, overlaid with the (cumulative) counts
/// of the last `message_delta`.
pub fn anthropic_usage(start: Option<&Value>, delta: Option<&Value>) -> Option<Usage> {
    let mut merged = serde_json::Map::new();
    for source in [start, delta].into_iter().flatten() {
        if let Some(object) = source.as_object() {
            for (key, value) in object {
                if value.is_number() {
                    merged.insert(key.clone(), value.clone());
                }
            }
        }
    }
    Usage::from_aliases(&Value::Object(merged))
}

/// Normalizes Gemini `usageMetadata` (`promptTokenCount`, `cachedContentTokenCount`,
/// `toolUsePromptTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`,
/// `totalTokenCount`): `input` = prompt + tool-use prompt − cached, `output` = candidates +
/// thoughts, `reasoning` = thoughts. `None` when it carries no count.
pub fn gemini_usage(value: &Value) -> Option<Usage> {
    let field = |key: &str| count(value.get(key));
    let keys = [
        "promptTokenCount",
        "cachedContentTokenCount",
        "toolUsePromptTokenCount",
        "candidatesTokenCount",
        "thoughtsTokenCount",
        "totalTokenCount",
    ];
    if keys.iter().all(|key| field(key).is_none()) {
        return None;
    }
    let cached = field("cachedContentTokenCount").unwrap_or(0);
    let prompt =
        field("promptTokenCount").unwrap_or(0) + field("toolUsePromptTokenCount").unwrap_or(0);
    let thoughts = field("thoughtsTokenCount").unwrap_or(0);
    let output = field("candidatesTokenCount").unwrap_or(0) + thoughts;
    let mut usage = Usage::new(prompt.saturating_sub(cached), output, cached, 0);
    usage.reasoning = thoughts;
    if let Some(total) = field("totalTokenCount") {
        usage.total = total;
    }
    Some(usage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn openai_cached_tokens_are_split_out_of_input() {
        let chat = json!({"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230,
            "prompt_tokens_details": {"cached_tokens": 1000}});
        let usage = openai_usage(&chat).unwrap();
        assert_eq!(
            (
                usage.input,
                usage.output,
                usage.cache_read,
                usage.cache_write,
                usage.total
            ),
            (200, 30, 1000, 0, 1230)
        );
        let responses = json!({"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20},
            "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 57});
        let usage = openai_usage(&responses).unwrap();
        assert_eq!(
            (usage.input, usage.cache_read, usage.output, usage.total),
            (30, 20, 7, 57)
        );
        assert_eq!(usage.reasoning, 3);
        let chat = json!({"prompt_tokens": 10, "completion_tokens": 40,
            "completion_tokens_details": {"reasoning_tokens": 32}});
        assert_eq!(openai_usage(&chat).unwrap().reasoning, 32);
        // A count larger than the output it is part of is a provider glitch: capped.
        let odd = json!({"prompt_tokens": 10, "completion_tokens": 4,
            "completion_tokens_details": {"reasoning_tokens": 9}});
        assert_eq!(openai_usage(&odd).unwrap().reasoning, 4);
        let no_total = json!({"prompt_tokens": 5, "completion_tokens": 1});
        assert_eq!(openai_usage(&no_total).unwrap().total, 6);
    }

    #[test]
    fn anthropic_delta_overrides_start() {
        let start = json!({"input_tokens": 25, "cache_creation_input_tokens": 10,
            "cache_read_input_tokens": 500, "output_tokens": 1});
        let delta = json!({"output_tokens": 42});
        let usage = anthropic_usage(Some(&start), Some(&delta)).unwrap();
        assert_eq!(usage, Usage::new(25, 42, 500, 10));
        assert_eq!(usage.total, 577);
        assert_eq!(anthropic_usage(None, None), None);
    }

    #[test]
    fn gemini_thoughts_count_as_output_and_cache_leaves_input() {
        let meta = json!({"promptTokenCount": 1200, "cachedContentTokenCount": 1000,
            "candidatesTokenCount": 30, "thoughtsTokenCount": 70, "totalTokenCount": 1300});
        let usage = gemini_usage(&meta).unwrap();
        let mut expected = Usage::new(200, 100, 1000, 0);
        expected.reasoning = 70;
        expected.total = 1300;
        assert_eq!(usage, expected);
        let plain = json!({"promptTokenCount": 8, "candidatesTokenCount": 2});
        let usage = gemini_usage(&plain).unwrap();
        assert_eq!(
            (usage.input, usage.output, usage.total, usage.reasoning),
            (8, 2, 10, 0)
        );
        assert_eq!(gemini_usage(&json!({"trafficType": "ON_DEMAND"})), None);
    }
}
