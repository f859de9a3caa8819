//! Retries, timeouts, cancellation and failure classification, over Chat Completions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_llm::{
    ClientOptions, ErrorKind, ModelClient, ModelEvent, RetryNotice, WireClient, collect_stream,
};
use tokio_util::sync::CancellationToken;

use crate::chat::TEXT_STREAM;
use crate::common::{
    Canned, End, ScriptedServer, client, definition, drain, fast_options, hello, serve,
};

fn observed_client(
    server: &ScriptedServer,
    options: ClientOptions,
) -> (WireClient, Arc<Mutex<Vec<RetryNotice>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let options = options.with_retry_observer(move |n| sink.lock().unwrap().push(n.clone()));
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        Some("sk-secret-123".into()),
        options,
    )
    .unwrap();
    (client, notices)
}

const PARTIAL: &str = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Half an ans\"},\"finish_reason\":null}]}\n\n";

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = serve(vec![
        Canned::error(429, r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#)
            .header("retry-after", "1"),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed_client(&server, fast_options());
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.text, "Hello wörld ✓");
    assert_eq!(server.requests().len(), 2, "one retry");
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].attempt, 1);
    assert_eq!(notices[0].kind, ErrorKind::RateLimit);
    assert_eq!(notices[0].status, Some(429));
    assert!(notices[0].from_retry_after);
    assert_eq!(
        notices[0].delay,
        Duration::from_secs(1),
        "the server's wait, not the backoff"
    );
}

#[tokio::test]
async fn retry_after_longer_than_the_cap_fails_at_once() {
    let server = serve(vec![
        Canned::error(429, r#"{"error":{"message":"quota"}}"#).header("retry-after", "3600"),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = client("openai-completions", &server, None);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::RateLimit);
    assert_eq!(err.retry_after, Some(Duration::from_secs(3600)));
    assert!(
        err.message.contains("asked to wait 3600s"),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_error_then_success() {
    let server = serve(vec![
        Canned::error(500, r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#),
        Canned::error(503, "upstream unavailable"),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed_client(&server, fast_options());
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello wörld ✓"
    );
    assert_eq!(server.requests().len(), 3);
    let notices = notices.lock().unwrap();
    let statuses: Vec<_> = notices
        .iter()
        .map(|n| (n.attempt, n.status, n.from_retry_after))
        .collect();
    assert_eq!(statuses, vec![(1, Some(500), false), (2, Some(503), false)]);
}

#[tokio::test]
async fn retries_are_bounded() {
    let server = serve(vec![
        Canned::error(502, "bad gateway"),
        Canned::error(502, "bad gateway"),
        Canned::error(502, "bad gateway"),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = client("openai-completions", &server, None);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!((err.kind, err.status), (ErrorKind::Server, Some(502)));
    assert_eq!(
        server.requests().len(),
        3,
        "first attempt + max_retries (2)"
    );
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_never_shows_the_key() {
    let server = serve(vec![
        Canned::error(401, r#"{"error":{"message":"Incorrect API key provided: sk-secret-123.","type":"invalid_request_error","code":"invalid_api_key"}}"#),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let (client, notices) = observed_client(&server, fast_options());
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Auth);
    assert_eq!(err.status, Some(401));
    assert_eq!(err.model.as_deref(), Some("test/openai-completions"));
    assert!(!err.message.contains("sk-secret-123"), "{}", err.message);
    assert!(!err.humanized().contains("sk-secret-123"));
    assert!(err.message.contains("Incorrect API key provided"));
    assert_eq!(server.requests().len(), 1);
    assert!(notices.lock().unwrap().is_empty());
}

#[tokio::test]
async fn context_overflow_is_recognized() {
    let server = serve(vec![Canned::error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
    )])
    .await;
    let client = client("openai-completions", &server, None);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::ContextTooLong);
    assert!(!err.kind.allows_fallback());
}

#[tokio::test]
async fn connection_cut_mid_stream_is_an_error_not_a_short_answer() {
    let server = serve(vec![
        Canned::sse(PARTIAL).ending(End::Cut),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let (events, err) = drain(stream).await;
    assert_eq!(
        events,
        vec![ModelEvent::TextDelta {
            text: "Half an ans".into()
        }]
    );
    let err = err.expect("the cut must surface as an error");
    // Changed deliberately: a cut after delivered text is `StreamInterrupted` (was `Network`),
    // so the runtime can re-issue the whole call.
    assert_eq!(err.kind, ErrorKind::StreamInterrupted, "{err}");
    assert_eq!(err.cause, Some(ErrorKind::Network));
    assert!(err.kind.is_retryable_call());
    assert!(
        err.message.contains("after 11 bytes had been delivered"),
        "{}",
        err.message
    );
    assert_eq!(
        server.requests().len(),
        1,
        "no retry after text reached the caller"
    );
}

#[tokio::test]
async fn clean_close_without_terminal_event_is_an_error() {
    let server = serve(vec![Canned::sse(PARTIAL)]).await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let err = collect_stream(stream, |_| {}).await.unwrap_err();
    // Changed deliberately: after delivered text (was `InvalidResponse`).
    assert_eq!(err.kind, ErrorKind::StreamInterrupted);
    assert_eq!(err.cause, Some(ErrorKind::InvalidResponse));
    assert!(
        err.message.contains("ended before the reply was complete"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn cut_before_the_first_event_is_retried() {
    let server = serve(vec![
        Canned::sse(": keep-alive\n\n").ending(End::Cut),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        collect_stream(stream, |_| {}).await.unwrap().text,
        "Hello wörld ✓"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn malformed_data_line_is_quoted() {
    let body = concat!(
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]\n\n",
        "data: [DONE]\n\n",
    );
    let server = serve(vec![Canned::sse(body)]).await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let err = collect_stream(stream, |_| {}).await.unwrap_err();
    // Changed deliberately: the malformed line came after the text "ok" (was `InvalidResponse`).
    assert_eq!(err.kind, ErrorKind::StreamInterrupted);
    assert_eq!(err.cause, Some(ErrorKind::InvalidResponse));
    assert!(
        err.message.contains(
            r#"data line: "{\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"x\"}}]""#
        ),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn empty_reply_is_its_own_error() {
    let body = concat!(
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":0,\"total_tokens\":9}}\n\n",
        "data: [DONE]\n\n",
    );
    let server = serve(vec![Canned::sse(body)]).await;
    let client = client("openai-completions", &server, None);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let (events, err) = drain(stream).await;
    assert!(
        matches!(events.as_slice(), [ModelEvent::Usage { .. }]),
        "{events:?}"
    );
    let err = err.unwrap();
    assert_eq!(err.kind, ErrorKind::EmptyReply);
    assert!(
        err.humanized().contains("openai-responses"),
        "the hint names the api switch"
    );
}

#[tokio::test]
async fn stall_past_the_idle_timeout_is_a_timeout() {
    let server = serve(vec![Canned::sse(PARTIAL).ending(End::Stall)]).await;
    let options = ClientOptions {
        idle_timeout: Duration::from_millis(300),
        ..fast_options()
    };
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        options,
    )
    .unwrap();
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let (events, err) = drain(stream).await;
    assert_eq!(events.len(), 1);
    let err = err.unwrap();
    // Changed deliberately: an idle timeout after delivered text is `StreamInterrupted`
    // (was `Timeout`), with the timeout as its cause.
    assert_eq!(err.kind, ErrorKind::StreamInterrupted);
    assert_eq!(err.cause, Some(ErrorKind::Timeout));
    assert!(
        err.message.contains("no data from the model"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains("settings.json → models.timeouts.idleMs"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn stall_before_the_first_event_is_retried_then_times_out() {
    let server = serve(vec![
        Canned::sse("").ending(End::Stall),
        Canned::sse("").ending(End::Stall),
    ])
    .await;
    let options = ClientOptions {
        idle_timeout: Duration::from_millis(200),
        max_retries: 1,
        ..fast_options()
    };
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        options,
    )
    .unwrap();
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn cancellation_mid_stream() {
    let server = serve(vec![Canned::sse(PARTIAL).ending(End::Stall)]).await;
    let client = client("openai-completions", &server, None);
    let cancel = CancellationToken::new();
    let mut stream = client.stream(hello(), cancel.clone()).await.unwrap();
    use futures::StreamExt;
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(
        first,
        ModelEvent::TextDelta {
            text: "Half an ans".into()
        }
    );
    cancel.cancel();
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert!(
        stream.next().await.is_none(),
        "the stream ends after the error"
    );
}

#[tokio::test]
async fn cancellation_during_backoff_and_before_start() {
    let server = serve(vec![
        Canned::error(429, "{}").header("retry-after", "30"),
        Canned::sse(TEXT_STREAM),
    ])
    .await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let options = fast_options().with_retry_observer(move |_| trigger.cancel());
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        options,
    )
    .unwrap();
    let err = client.stream(hello(), cancel).await.err().unwrap();
    assert_eq!(err.kind, ErrorKind::Cancelled);
    assert_eq!(server.requests().len(), 1);

    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let err = client.stream(hello(), cancelled).await.err().unwrap();
    assert_eq!(err.kind, ErrorKind::Cancelled);
}

#[tokio::test]
async fn connection_refused_is_a_network_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let options = ClientOptions {
        max_retries: 1,
        ..fast_options()
    };
    let client = WireClient::new(
        &definition("openai-completions", &format!("http://{addr}")),
        None,
        options,
    )
    .unwrap();
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Network);
    assert!(err.message.contains("could not connect"), "{}", err.message);
}

#[tokio::test]
async fn html_error_pages_are_clipped() {
    let page = format!(
        "<!DOCTYPE html><html><body>{}</body></html>",
        "Bad gateway. ".repeat(500)
    );
    let server = serve(vec![Canned {
        status: 404,
        headers: vec![("content-type".into(), "text/html".into())],
        chunks: vec![page.into()],
        end: End::Complete,
    }])
    .await;
    let client = client("openai-completions", &server, None);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::BadRequest);
    assert!(err.message.contains("HTML page"));
    assert!(err.message.chars().count() < 1_200, "{}", err.message.len());
}

#[tokio::test]
async fn plain_text_instead_of_a_stream_is_explained() {
    // Changed deliberately: a JSON answer is now decoded (see glitches.rs); other content
    // types are still explained, and retried like any unreadable reply.
    let server = serve(vec![Canned {
        status: 200,
        headers: vec![("content-type".into(), "text/plain".into())],
        chunks: vec!["service is warming up".into()],
        end: End::Complete,
    }])
    .await;
    let options = ClientOptions {
        max_retries: 0,
        ..fast_options()
    };
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        None,
        options,
    )
    .unwrap();
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::InvalidResponse);
    assert!(
        err.message
            .contains("expected an event stream from http://127.0.0.1:"),
        "{}",
        err.message
    );
    assert!(err.message.contains("text/plain: service is warming up"));
}

#[tokio::test]
async fn a_key_echoed_where_the_error_is_clipped_leaves_no_prefix_behind() {
    // The key straddles the point where the error detail is clipped: redacting after clipping
    // would leave all but its last characters in the message.
    let key = "sk-clip-0123456789abcdefghijklmn";
    let padding = "x".repeat(2_000 - 12);
    let body = format!("not json {padding}{key} trailing text");
    let server = serve(vec![Canned::error(401, &body)]).await;
    let client = WireClient::new(
        &definition("openai-completions", &server.url()),
        Some(key.into()),
        fast_options(),
    )
    .unwrap();
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Auth);
    for cut in 8..key.len() {
        assert!(
            !err.message.contains(&key[..cut]),
            "{} characters of the key leaked: {}",
            cut,
            &err.message[err.message.len().saturating_sub(120)..]
        );
    }
}
