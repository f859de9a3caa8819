//! Configurable limits: first-byte, idle (keep-alives do not count) and total timeouts,
//! retries, the reply cap; models.json entry > settings.json > built-in default.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_llm::{
    ClientOptions, ErrorKind, ModelClient, REPLY_CUT_MARKER, RetryNotice, StopReason, WireClient,
    collect_stream,
};
use braincode_protocol::{ModelCallSettings, ModelDefinition, ModelTimeouts};
use bytes::Bytes;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::{Canned, End, definition, fast_options, hello, serve};

const CHAT: &str = "openai-completions";

fn observed(
    definition: &ModelDefinition,
    options: ClientOptions,
) -> (WireClient, Arc<Mutex<Vec<RetryNotice>>>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let options = options.with_retry_observer(move |n| sink.lock().unwrap().push(n.clone()));
    (WireClient::new(definition, None, options).unwrap(), notices)
}

/// Generous limits everywhere, so only the limit under test can fire.
fn patient() -> ClientOptions {
    ClientOptions {
        first_byte_timeout: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(60),
        total_timeout: Duration::from_secs(300),
        ..fast_options()
    }
}

fn keep_alives_only() -> Canned {
    Canned::sse(": keep-alive\n\n").ending(End::KeepAlive(Duration::from_millis(50)))
}

#[tokio::test]
async fn keep_alives_alone_fail_after_the_idle_timeout_set_in_settings() {
    let server = serve(vec![keep_alives_only()]).await;
    let settings: ModelCallSettings =
        serde_json::from_value(json!({"timeouts": {"idleMs": 400}, "maxRetries": 0})).unwrap();
    let options = patient().with_settings(&settings);
    let (client, _) = observed(&definition(CHAT, &server.url()), options);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
    assert!(err.message.contains("idle timeout"), "{}", err.message);
    assert!(err.message.contains("0.4s"), "{}", err.message);
    assert!(
        err.message
            .contains("settings.json → models.timeouts.idleMs"),
        "{}",
        err.message
    );
    assert!(
        !err.message.contains("total time limit") && !err.message.contains("first-byte"),
        "{}",
        err.message
    );
    let outcome = server.wait_for_outcomes(1).await;
    assert!(
        outcome[0].client_gone,
        "the client hung up on the keep-alives"
    );
}

#[tokio::test]
async fn the_model_entry_wins_and_is_named_in_the_error() {
    let server = serve(vec![keep_alives_only(), keep_alives_only()]).await;
    let mut definition = definition(CHAT, &server.url());
    definition.timeouts.idle_ms = Some(300);
    definition.max_retries = Some(1);
    let settings = ModelCallSettings {
        timeouts: ModelTimeouts {
            idle_ms: Some(50_000),
            ..ModelTimeouts::default()
        },
        max_retries: Some(5),
        ..ModelCallSettings::default()
    };
    let (client, notices) = observed(&definition, patient().with_settings(&settings));
    assert_eq!(client.options().idle_timeout, Duration::from_millis(300));
    assert_eq!(client.options().max_retries, 1);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(
        err.message
            .contains("raise models.json → test/openai-completions.timeouts.idleMs"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(
            "after 2 attempts; retries are set by models.json → test/openai-completions.maxRetries"
        ),
        "{}",
        err.message
    );
    assert_eq!(server.requests().len(), 2, "the entry's maxRetries (1)");
    let notices = notices.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, ErrorKind::Timeout);
}

#[tokio::test]
async fn no_first_byte_fails_after_the_first_byte_timeout_with_retries_honoured() {
    let server = serve(vec![Canned::hang(), Canned::hang(), Canned::hang()]).await;
    let options = ClientOptions {
        first_byte_timeout: Duration::from_millis(300),
        max_retries: 1,
        ..patient()
    };
    let (client, notices) = observed(&definition(CHAT, &server.url()), options);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout, "{err}");
    assert!(
        err.message.contains("first-byte timeout"),
        "{}",
        err.message
    );
    assert!(
        err.message.contains("waiting for the response headers"),
        "{}",
        err.message
    );
    assert!(
        err.message
            .contains("settings.json → models.timeouts.firstByteMs"),
        "{}",
        err.message
    );
    assert!(err.message.contains("after 2 attempts"), "{}", err.message);
    assert_eq!(
        server.requests().len(),
        2,
        "first attempt + max_retries (1)"
    );
    assert_eq!(notices.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn the_total_timeout_is_named_and_ends_the_retries() {
    let server = serve(vec![Canned::hang(), Canned::hang()]).await;
    let options = ClientOptions {
        total_timeout: Duration::from_millis(400),
        max_retries: 3,
        ..patient()
    };
    let (client, _) = observed(&definition(CHAT, &server.url()), options);
    let err = client
        .stream(hello(), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert!(
        err.message.contains("total time limit of 0.4s"),
        "{}",
        err.message
    );
    assert!(err.message.contains("timeouts.totalMs"), "{}", err.message);
    assert_eq!(server.requests().len(), 1, "no time left for a retry");
}

/// A Chat Completions chunk of about 64 KiB: 62 events of 1,000 bytes of text each.
fn big_text_chunk() -> Bytes {
    let event = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}},\"finish_reason\":null}}]}}\n\n",
        "x".repeat(1_000)
    );
    Bytes::from(event.repeat(62))
}

#[tokio::test]
async fn a_50_mb_reply_is_cut_at_the_cap_and_the_connection_dropped() {
    let chunk = big_text_chunk();
    let count = 50 * 1024 * 1024 / chunk.len();
    let mut canned = Canned::sse("");
    canned.chunks = vec![chunk; count];
    let server = serve(vec![canned]).await;
    let options = ClientOptions {
        max_reply_bytes: 1024 * 1024,
        ..patient()
    };
    let (client, _) = observed(&definition(CHAT, &server.url()), options);
    let stream = client
        .stream(hello(), CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert_eq!(done.stop, Some(StopReason::MaxTokens));
    let (kept, marker) = done.text.split_at(1024 * 1024);
    assert!(kept.bytes().all(|b| b == b'x'));
    assert!(
        marker.starts_with(&format!("\n\n{REPLY_CUT_MARKER}1048576 bytes: ")),
        "{marker}"
    );
    assert!(
        marker.contains("1048576-byte reply cap")
            && marker.contains("settings.json → models.maxReplyBytes"),
        "{marker}"
    );
    let outcomes = server.wait_for_outcomes(1).await;
    assert_eq!(outcomes.len(), 1, "the body ended");
    assert!(outcomes[0].client_gone, "the client went away");
    assert!(
        outcomes[0].sent < outcomes[0].total / 2,
        "the rest was not read: {:?}",
        outcomes[0]
    );
}

#[tokio::test]
async fn tool_arguments_past_the_max_tokens_cap_are_dropped() {
    let mut body = String::from(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\",\"input\":{}}}\n\n",
    ));
    let delta = format!(
        "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}}}\n\n",
        "a".repeat(1_000)
    );
    for _ in 0..2_000 {
        body.push_str(&delta);
    }
    let server = serve(vec![Canned::sse(&body)]).await;
    let (client, _) = observed(&definition("anthropic-messages", &server.url()), patient());
    let mut request = hello();
    request.max_tokens = Some(1_000);
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    let done = collect_stream(stream, |_| {}).await.unwrap();
    assert!(done.tool_calls.is_empty());
    assert_eq!(done.stop, Some(StopReason::MaxTokens));
    assert_eq!(
        done.text,
        format!(
            "{REPLY_CUT_MARKER}0 bytes: the model's reply exceeded 16000 bytes (16 bytes for each of the call's 1000 max tokens); the rest was not read; an unfinished tool call was dropped]"
        )
    );
    let outcomes = server.wait_for_outcomes(1).await;
    assert!(outcomes[0].client_gone);
    assert!(outcomes[0].sent < outcomes[0].total);
}

#[tokio::test]
async fn a_json_answer_is_capped_too() {
    let text = "y".repeat(3_000);
    let body = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
    let server = serve(vec![Canned::json(&body.to_string())]).await;
    let options = ClientOptions {
        max_reply_bytes: 1_000,
        ..patient()
    };
    let mut definition = definition(CHAT, &server.url());
    definition.max_reply_bytes = Some(2_000);
    let (client, _) = observed(&definition, options);
    let done = collect_stream(
        client
            .stream(hello(), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.stop, Some(StopReason::MaxTokens));
    assert!(done.text.starts_with(&"y".repeat(2_000)));
    assert!(
        done.text.contains(&format!(
            "{REPLY_CUT_MARKER}2000 bytes: the model's reply exceeded the 2000-byte reply cap (raise models.json → test/openai-completions.maxReplyBytes)"
        )),
        "{}",
        done.text
    );
}

#[test]
fn model_definitions_round_trip_the_new_fields_and_old_files_still_parse() {
    let old = json!({"id": "openai/gpt", "provider": "openai", "modelId": "gpt",
        "api": "openai-completions", "maxTokens": 4096});
    let parsed: ModelDefinition = serde_json::from_value(old.clone()).unwrap();
    assert!(parsed.timeouts.is_empty());
    assert_eq!((parsed.max_retries, parsed.max_reply_bytes), (None, None));
    let back = serde_json::to_value(&parsed).unwrap();
    for key in ["timeouts", "maxRetries", "maxReplyBytes"] {
        assert!(back.get(key).is_none(), "{key} is not written when unset");
    }

    let new = json!({"id": "ollama/qwen", "provider": "ollama", "modelId": "qwen",
        "baseUrl": "http://localhost:11434",
        "timeouts": {"connectMs": 2000, "firstByteMs": 120000, "idleMs": 90000, "totalMs": 1200000},
        "maxRetries": 0, "maxReplyBytes": 1048576});
    let parsed: ModelDefinition = serde_json::from_value(new.clone()).unwrap();
    assert_eq!(
        parsed.timeouts,
        ModelTimeouts {
            connect_ms: Some(2_000),
            first_byte_ms: Some(120_000),
            idle_ms: Some(90_000),
            total_ms: Some(1_200_000),
        }
    );
    assert_eq!(parsed.call_settings().max_retries, Some(0));
    let back = serde_json::to_value(&parsed).unwrap();
    assert_eq!(back["timeouts"], new["timeouts"]);
    assert_eq!(back["maxRetries"], 0);
    assert_eq!(back["maxReplyBytes"], 1_048_576);
    assert_eq!(
        serde_json::from_value::<ModelDefinition>(back).unwrap(),
        parsed
    );

    let options = ClientOptions::default().for_model(&parsed);
    assert_eq!(options.connect_timeout, Duration::from_secs(2));
    assert_eq!(options.first_byte_timeout, Duration::from_secs(120));
    assert_eq!(options.idle_timeout, Duration::from_secs(90));
    assert_eq!(options.total_timeout, Duration::from_secs(1_200));
    assert_eq!(options.max_retries, 0);
    assert_eq!(options.max_reply_bytes, 1_048_576);

    let minimal: ModelDefinition =
        serde_json::from_value(json!({"id": "", "provider": "", "modelId": ""})).unwrap();
    assert_eq!(
        minimal,
        ModelDefinition::default(),
        "Default matches the file defaults"
    );

    let typo = json!({"id": "a", "provider": "p", "modelId": "m", "timeouts": {"idle": 5}});
    let err = serde_json::from_value::<ModelDefinition>(typo).unwrap_err();
    assert!(err.to_string().contains("unknown field `idle`"), "{err}");

    let settings: ModelCallSettings =
        serde_json::from_value(json!({"timeouts": {"firstByteMs": 5000}, "maxReplyBytes": 0}))
            .unwrap();
    assert_eq!(settings.invalid_field(), Some("maxReplyBytes"));
}

#[test]
fn a_zero_limit_in_models_json_is_a_config_error_naming_the_field() {
    let mut definition = definition(CHAT, "http://127.0.0.1:1");
    definition.timeouts.idle_ms = Some(0);
    let err = WireClient::new(&definition, None, ClientOptions::default())
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Config);
    assert!(
        err.message
            .contains("models.json → test/openai-completions.timeouts.idleMs is 0"),
        "{}",
        err.message
    );
}
