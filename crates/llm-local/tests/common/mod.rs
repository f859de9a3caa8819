//! Shared helpers of the real-model tests: the cached default model, a client pinned to two
//! threads, and a small JSON Schema validator for the subset the grammar converter supports.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use braincode_llm::{
    ChatMessage, ChatRequest, Completion, ModelClient, ModelError, collect_stream,
};
use braincode_llm_local::{
    LocalClientOptions, LocalModel, LocalModelClient, LocalModelOptions, shared_test_model,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The verified default model from the machine cache (pulled once per machine if missing;
/// fails loudly with the how-to message when it cannot be had).
pub fn model_path() -> PathBuf {
    shared_test_model().unwrap_or_else(|err| panic!("the default model is unavailable: {err}"))
}

/// The process-wide shared model.
pub fn model() -> Arc<LocalModel> {
    LocalModel::shared(&model_path(), LocalModelOptions::default()).expect("load the model")
}

/// A client with threads pinned to 2 (greedy output depends on the thread count).
pub fn client() -> LocalModelClient {
    LocalModelClient::new(
        model(),
        LocalClientOptions {
            threads: 2,
            ..LocalClientOptions::default()
        },
    )
}

/// A one-message request.
pub fn ask(text: &str, max_tokens: u32) -> ChatRequest {
    ChatRequest {
        system: Some("You are a concise, helpful assistant.".into()),
        messages: vec![ChatMessage::user_text(text)],
        max_tokens: Some(max_tokens),
        ..ChatRequest::default()
    }
}

/// Runs a request to completion.
pub async fn complete(
    client: &LocalModelClient,
    request: ChatRequest,
) -> Result<Completion, ModelError> {
    let stream = client.stream(request, CancellationToken::new()).await?;
    collect_stream(stream, |_| {}).await
}

/// Validates `value` against `schema` (the subset of JSON Schema our grammar converter
/// supports); returns the first violation.
pub fn validate(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    let fail = |why: String| Err(format!("{at}: {why} (value {value})"));
    if let Some(c) = schema.get("const")
        && c != value
    {
        return fail(format!("expected const {c}"));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        return fail("not one of the enum values".into());
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let matches = options
                .iter()
                .filter(|o| validate(o, value, at).is_ok())
                .count();
            if matches == 0 || (key == "oneOf" && matches > 1) {
                return fail(format!("{matches} {key} alternatives match"));
            }
        }
    }
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            _ => false,
        });
        if !ok {
            return fail(format!("expected type {ty}"));
        }
    }
    match value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !object.contains_key(name) {
                    return fail(format!("missing required property {name}"));
                }
            }
            for (key, item) in object {
                match properties.and_then(|p| p.get(key)) {
                    Some(sub) => validate(sub, item, &format!("{at}/{key}"))?,
                    None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                        return fail(format!("unexpected property {key}"));
                    }
                    None => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                return fail(format!("fewer than {min} items"));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && (items.len() as u64) > max
            {
                return fail(format!("more than {max} items"));
            }
            if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
                for (i, a) in items.iter().enumerate() {
                    if items[..i].contains(a) {
                        return fail(format!("duplicate item {a}"));
                    }
                }
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item_schema, item, &format!("{at}/{i}"))?;
                }
            }
        }
        Value::String(text) => {
            let chars = text.chars().count() as u64;
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars > max
            {
                return fail(format!("longer than {max} characters"));
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && chars < min
            {
                return fail(format!("shorter than {min} characters"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap();
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                return fail(format!("below the minimum {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                return fail(format!("above the maximum {max}"));
            }
        }
        _ => {}
    }
    Ok(())
}
