//! Turning provider failures (HTTP statuses, error bodies, in-stream error events) into
//! classified, sanitized [`ModelError`]s.

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::{ErrorKind, ModelError};

/// Longest provider HTML body quoted in an error (spec: error detail clip).
pub const HTML_DETAIL_LIMIT: usize = 1_000;
/// Longest non-HTML provider body quoted in an error.
pub const TEXT_DETAIL_LIMIT: usize = 2_000;

/// Provider phrases that mean "the prompt does not fit the context window".
const CONTEXT_OVERFLOW_MARKERS: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "prompt is too long",
    "too many tokens",
    "request too large",
    "request_too_large",
    "input is too long",
    "exceeds the context",
    "reduce the length",
    "string_above_max_length",
    "exceeds the maximum number of tokens",
];

/// Whether a provider message says the request is too long for the model's context.
pub fn looks_like_context_overflow(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    CONTEXT_OVERFLOW_MARKERS.iter().any(|m| lower.contains(m))
}

/// Whether a body looks like an HTML page (a proxy error page, a login portal, a wrong URL).
pub fn looks_like_html(body: &str, content_type: Option<&str>) -> bool {
    if content_type.is_some_and(|ct| ct.to_ascii_lowercase().contains("html")) {
        return true;
    }
    let start = body.trim_start();
    let head: String = start
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    head.starts_with("<!doctype") || head.starts_with("<html") || head.starts_with("<head")
}

/// Clips provider text for an error message: 1,000 chars for HTML, 2,000 otherwise, cut on a
/// character boundary, with a marker saying how much was left out.
pub fn clip_detail(text: &str, html: bool) -> String {
    let limit = if html {
        HTML_DETAIL_LIMIT
    } else {
        TEXT_DETAIL_LIMIT
    };
    clip_chars(text.trim(), limit)
}

/// Keeps the first characters of a quoted provider text and says how many were left out
/// (`hé… [3 more chars]`): the product's one clipper, under the name this crate uses.
pub use braincode_protocol::clip_chars_noting_rest as clip_chars;

/// `text` through the product's one redactor ([`braincode_protocol::secrets`]), with `secret`
/// (the key of the call) among the secrets. Call it before clipping: a clipped echo of a key
/// would otherwise keep all but its last characters.
pub fn redact(text: &str, secret: Option<&str>) -> String {
    braincode_protocol::secrets::redact_secrets_with(text, secret)
}

/// The `error.message` (or `message`, or `error` string) of a provider JSON error body, with
/// its type/code when there is one.
pub fn provider_error_message(body: &Value) -> Option<String> {
    let error = body.get("error").unwrap_or(body);
    let message = match error {
        Value::String(text) => Some(text.clone()),
        Value::Object(map) => map
            .get("message")
            .or_else(|| map.get("detail"))
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
    .or_else(|| {
        body.get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
    })
    .or_else(|| {
        body.get("detail")
            .and_then(Value::as_str)
            .map(str::to_string)
    })?;
    let code = error_code(body);
    Some(match code {
        Some(code) if !message.contains(&code) => format!("{message} ({code})"),
        _ => message,
    })
}

/// The provider's error type or code (`rate_limit_error`, `context_length_exceeded`, Google's
/// `RESOURCE_EXHAUSTED`, …): a named one before a numeric HTTP-like code.
pub fn error_code(body: &Value) -> Option<String> {
    let error = body.get("error").unwrap_or(body);
    let named = ["type", "code", "status"]
        .iter()
        .filter_map(|key| error.get(*key))
        .find_map(|v| match v {
            Value::String(s) if !s.is_empty() && s != "error" => Some(s.clone()),
            _ => None,
        });
    named.or_else(|| {
        error
            .get("code")
            .and_then(Value::as_u64)
            .map(|n| n.to_string())
    })
}

/// The class Google's error vocabulary names (`{"error": {"status": "RESOURCE_EXHAUSTED",
/// "details": [{"reason": "API_KEY_INVALID"}]}}`), where it says more than the HTTP status:
/// Gemini answers an invalid key with 400.
fn google_kind(body: &Value, message: &str) -> Option<ErrorKind> {
    let error = body.get("error").unwrap_or(body);
    let reasons = error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("reason").and_then(Value::as_str));
    let bad_key = reasons
        .into_iter()
        .any(|r| r.starts_with("API_KEY_") || r == "ACCESS_TOKEN_EXPIRED")
        || message.to_ascii_lowercase().contains("api key not valid");
    if bad_key {
        return Some(ErrorKind::Auth);
    }
    match error.get("status").and_then(Value::as_str)? {
        "UNAUTHENTICATED" | "PERMISSION_DENIED" => Some(ErrorKind::Auth),
        "RESOURCE_EXHAUSTED" => Some(ErrorKind::RateLimit),
        "UNAVAILABLE" | "INTERNAL" => Some(ErrorKind::Server),
        "DEADLINE_EXCEEDED" => Some(ErrorKind::Timeout),
        _ => None,
    }
}

/// The wait Google's `RetryInfo` detail asks for (`{"retryDelay": "23s"}`), if any.
fn google_retry_delay(body: &Value) -> Option<Duration> {
    let error = body.get("error").unwrap_or(body);
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter_map(|d| d.get("retryDelay").and_then(Value::as_str))
        .find_map(|delay| {
            let seconds: f64 = delay.trim().strip_suffix('s')?.parse().ok()?;
            (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
        })
}

/// Whether the provider refused the request because its content filter flagged it (Azure's
/// `content_filter` code).
fn is_content_filter(code: &str) -> bool {
    code.eq_ignore_ascii_case("content_filter")
}

/// Classifies an HTTP error response. `body` is the raw response text; the message quotes
/// the provider's own error message when the body is JSON, or the clipped body otherwise.
pub fn classify_http_error(status: u16, body: &str, content_type: Option<&str>) -> ModelError {
    let html = looks_like_html(body, content_type);
    let parsed: Option<Value> = if html {
        None
    } else {
        serde_json::from_str(body.trim()).ok()
    };
    let detail = parsed
        .as_ref()
        .and_then(provider_error_message)
        .map(|m| clip_detail(&m, false))
        .unwrap_or_else(|| {
            if body.trim().is_empty() {
                "(empty body)".to_string()
            } else {
                clip_detail(body, html)
            }
        });
    let code = parsed.as_ref().and_then(error_code).unwrap_or_default();
    let overflow = looks_like_context_overflow(&detail) || looks_like_context_overflow(&code);
    let kind = match parsed.as_ref().and_then(|body| google_kind(body, &detail)) {
        Some(kind) if !overflow => kind,
        _ => kind_for_status(status, &detail, &code),
    };
    let message = if html {
        format!("the endpoint answered HTTP {status} with an HTML page: {detail}")
    } else if is_content_filter(&code) {
        format!(
            "HTTP {status}: the provider's content filter blocked this request; sending it again will not help, rephrase it or use another model: {detail}"
        )
    } else {
        format!("HTTP {status}: {detail}")
    };
    ModelError::new(kind, message)
        .with_status(status)
        .with_retry_after(parsed.as_ref().and_then(google_retry_delay))
}

fn kind_for_status(status: u16, detail: &str, code: &str) -> ErrorKind {
    let overflow = looks_like_context_overflow(detail) || looks_like_context_overflow(code);
    match status {
        413 => ErrorKind::ContextTooLong,
        401 | 403 => ErrorKind::Auth,
        429 => ErrorKind::RateLimit,
        408 => ErrorKind::Timeout,
        400 | 422 if overflow => ErrorKind::ContextTooLong,
        500..=599 if overflow => ErrorKind::ContextTooLong,
        500..=599 => ErrorKind::Server,
        _ => ErrorKind::BadRequest,
    }
}

/// Classifies an error reported inside a stream (Anthropic `error` event, Responses
/// `response.failed`/`error`, a Chat Completions `{"error": …}` chunk).
pub fn classify_stream_error(payload: &Value) -> ModelError {
    let message =
        provider_error_message(payload).unwrap_or_else(|| clip_detail(&payload.to_string(), false));
    // Both the type and the code: OpenAI says `"type": "requests", "code": "rate_limit_exceeded"`.
    let error = payload.get("error").unwrap_or(payload);
    let code = ["type", "code"]
        .iter()
        .filter_map(|key| error.get(*key).and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    let status = payload
        .get("error")
        .unwrap_or(payload)
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok());
    let kind = if looks_like_context_overflow(&message) || looks_like_context_overflow(&code) {
        ErrorKind::ContextTooLong
    } else if let Some(kind) = google_kind(payload, &message) {
        kind
    } else if let Some(status) = status.filter(|s| (400..600).contains(s)) {
        kind_for_status(status, &message, &code)
    } else if code.contains("rate_limit") || code.contains("quota") {
        ErrorKind::RateLimit
    } else if code.contains("overloaded") || code.contains("server") || code == "api_error" {
        ErrorKind::Server
    } else if code.contains("authentication") || code.contains("permission") {
        ErrorKind::Auth
    } else if code.contains("invalid") || code.contains("not_found") {
        ErrorKind::BadRequest
    } else {
        ErrorKind::Server
    };
    let mut error = ModelError::new(
        kind,
        format!("the provider reported an error mid-stream: {message}"),
    )
    .with_retry_after(google_retry_delay(payload));
    error.status = status;
    error
}

/// Parses a `Retry-After` value: delay seconds (integer or decimal) or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_map_to_kinds() {
        let cases = [
            (
                401,
                "{\"error\":{\"message\":\"bad key\"}}",
                ErrorKind::Auth,
            ),
            (403, "forbidden", ErrorKind::Auth),
            (429, "slow down", ErrorKind::RateLimit),
            (413, "too big", ErrorKind::ContextTooLong),
            (
                400,
                "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens\",\"code\":\"context_length_exceeded\"}}",
                ErrorKind::ContextTooLong,
            ),
            (
                400,
                "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}",
                ErrorKind::ContextTooLong,
            ),
            (400, "{\"error\":\"unknown field\"}", ErrorKind::BadRequest),
            (404, "not found", ErrorKind::BadRequest),
            (500, "boom", ErrorKind::Server),
            (
                529,
                "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
                ErrorKind::Server,
            ),
        ];
        for (status, body, kind) in cases {
            let err = classify_http_error(status, body, None);
            assert_eq!(err.kind, kind, "{status} {body}");
            assert_eq!(err.status, Some(status));
        }
    }

    #[test]
    fn messages_quote_the_provider_message_and_clip_bodies() {
        let err = classify_http_error(
            401,
            "{\"error\":{\"message\":\"Invalid API key\",\"type\":\"invalid_request_error\"}}",
            None,
        );
        assert_eq!(
            err.message,
            "HTTP 401: Invalid API key (invalid_request_error)"
        );
        let html = format!("<!DOCTYPE html><html>{}</html>", "x".repeat(5_000));
        let err = classify_http_error(502, &html, Some("text/html"));
        assert!(err.message.contains("HTML page"));
        assert!(err.message.chars().count() < 1_100, "{}", err.message.len());
        let text = "y".repeat(5_000);
        let err = classify_http_error(500, &text, None);
        assert!(err.message.contains("[3000 more chars]"), "{}", err.message);
    }

    #[test]
    fn google_errors_are_classified_by_their_status() {
        let error = |code: u16, status: &str, message: &str| {
            json!({"error": {"code": code, "message": message, "status": status}}).to_string()
        };
        let bad_key = json!({"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}});
        let err = classify_http_error(400, &bad_key.to_string(), None);
        assert_eq!(err.kind, ErrorKind::Auth);
        assert_eq!(
            err.message,
            "HTTP 400: API key not valid. Please pass a valid API key. (INVALID_ARGUMENT)"
        );
        let quota = json!({"error": {"code": 429, "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
            "retryDelay": "23s"}]}});
        let err = classify_http_error(429, &quota.to_string(), None);
        assert_eq!(err.kind, ErrorKind::RateLimit);
        assert_eq!(err.retry_after, Some(Duration::from_secs(23)));
        let cases = [
            (
                400,
                "INVALID_ARGUMENT",
                "Request contains an invalid argument.",
                ErrorKind::BadRequest,
            ),
            (
                400,
                "INVALID_ARGUMENT",
                "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
                ErrorKind::ContextTooLong,
            ),
            (
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers.",
                ErrorKind::Auth,
            ),
            (
                404,
                "NOT_FOUND",
                "models/gemini-9 is not found for API version v1beta.",
                ErrorKind::BadRequest,
            ),
            (
                500,
                "INTERNAL",
                "An internal error has occurred.",
                ErrorKind::Server,
            ),
            (
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
                ErrorKind::Server,
            ),
        ];
        for (status, name, message, kind) in cases {
            let err = classify_http_error(status, &error(status, name, message), None);
            assert_eq!(err.kind, kind, "{status} {name}");
            assert!(err.message.contains(message), "{}", err.message);
        }
        let mid_stream =
            json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}});
        assert_eq!(classify_stream_error(&mid_stream).kind, ErrorKind::Server);
    }

    #[test]
    fn content_filter_refusals_say_so() {
        let body = r#"{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400}}"#;
        let err = classify_http_error(400, body, None);
        assert_eq!(err.kind, ErrorKind::BadRequest);
        assert!(!err.kind.is_retryable());
        assert!(
            err.message.contains("content filter blocked"),
            "{}",
            err.message
        );
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip_chars("héllo", 2), "hé… [3 more chars]");
        assert_eq!(clip_chars("abc", 3), "abc");
    }

    #[test]
    fn redaction_removes_the_key() {
        assert_eq!(
            redact("key sk-secret-1 leaked", Some("sk-secret-1")),
            "key [redacted] leaked"
        );
        assert_eq!(redact("nothing", None), "nothing");
    }

    #[test]
    fn stream_errors_are_classified() {
        let overloaded =
            json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(classify_stream_error(&overloaded).kind, ErrorKind::Server);
        let rate =
            json!({"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached"});
        assert_eq!(classify_stream_error(&rate).kind, ErrorKind::RateLimit);
        let openai = json!({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}});
        assert_eq!(classify_stream_error(&openai).kind, ErrorKind::RateLimit);
        let ctx = json!({"error":{"code":"context_length_exceeded","message":"Your input exceeds the context window"}});
        assert_eq!(classify_stream_error(&ctx).kind, ErrorKind::ContextTooLong);
        let numeric = json!({"error":{"code":401,"message":"No auth credentials found"}});
        let err = classify_stream_error(&numeric);
        assert_eq!((err.kind, err.status), (ErrorKind::Auth, Some(401)));
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }
}
