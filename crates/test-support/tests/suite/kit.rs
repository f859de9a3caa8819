//! Tests of the test kit itself: rule matching, recording, and the server's SSE as parsed by
//! our own Chat Completions client.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_llm::{
    ChatMessage, ChatRequest, ClientOptions, ErrorKind, ModelClient, ModelEvent, StopReason,
    ToolSpec, WireClient, collect_stream,
};
use braincode_protocol::Usage;
use braincode_test_support::{
    Matcher, Reply, Rule, Script, ScriptedModel, ScriptedServer, TempHome, TempRepo,
    scripted_model_entry,
};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn request(system: &str, user: &str) -> ChatRequest {
    ChatRequest {
        system: Some(system.into()),
        messages: vec![ChatMessage::user_text(user)],
        ..ChatRequest::default()
    }
}

fn with_tools(mut request: ChatRequest) -> ChatRequest {
    request.tools = vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object"}),
    }];
    request
}

fn client_for(server: &ScriptedServer, options: ClientOptions) -> WireClient {
    WireClient::new(
        &scripted_model_entry("scripted/main", &server.base_url()),
        None,
        options,
    )
    .unwrap()
}

fn fast() -> ClientOptions {
    ClientOptions {
        retry_base_delay: Duration::from_millis(5),
        max_backoff: Duration::from_millis(10),
        ..ClientOptions::default()
    }
}

fn parallel_script() -> Script {
    Script::new()
        .rule(
            Rule::new(Matcher::system_contains("You are the router"))
                .named("router")
                .reply(Reply::json(&json!({"mode": "team"}))),
        )
        .rule(
            Rule::new(Matcher::system_contains("security").and(Matcher::has_tools()))
                .named("security")
                .reply(Reply::tool_call("read_file", json!({"path": "auth.rs"})))
                .reply(Reply::text("no issues")),
        )
        .rule(
            Rule::new(Matcher::last_user_contains("database"))
                .named("dba")
                .reply(Reply::text_chunks(["index ", "the ", "column"])),
        )
        .always(Matcher::Any, Reply::text("generic"))
}

#[tokio::test]
async fn in_process_rules_answer_parallel_workers() {
    let model = ScriptedModel::new(parallel_script());
    let security = with_tools(request("You are the security reviewer", "check auth"));
    let dba = request("You are the dba", "tune the database");
    let router = request("You are the router", "plan");
    let (a, b, c) = tokio::join!(
        async {
            collect_stream(
                model
                    .stream(security.clone(), CancellationToken::new())
                    .await
                    .unwrap(),
                |_| {},
            )
            .await
            .unwrap()
        },
        async {
            collect_stream(
                model
                    .stream(dba.clone(), CancellationToken::new())
                    .await
                    .unwrap(),
                |_| {},
            )
            .await
            .unwrap()
        },
        async {
            collect_stream(
                model
                    .stream(router.clone(), CancellationToken::new())
                    .await
                    .unwrap(),
                |_| {},
            )
            .await
            .unwrap()
        },
    );
    assert_eq!(a.tool_calls[0].name, "read_file");
    assert_eq!(a.tool_calls[0].arguments, json!({"path": "auth.rs"}));
    assert_eq!(a.stop, Some(StopReason::ToolUse));
    assert_eq!(b.text, "index the column");
    assert_eq!(c.text, "{\"mode\":\"team\"}");
    let again = collect_stream(
        model
            .stream(security.clone(), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(again.text, "no issues");
    let third = collect_stream(
        model
            .stream(security, CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(third.text, "generic", "the security queue is exhausted");
    assert_eq!(
        (
            model.hits("security"),
            model.hits("dba"),
            model.hits("router"),
            model.hits("rule 3")
        ),
        (2, 1, 1, 1)
    );
    let recorded = model.requests();
    assert_eq!(recorded.len(), 5);
    assert!(recorded.iter().any(|r| r == &dba));
}

#[tokio::test]
async fn in_process_model_names_errors_and_failures() {
    let script = Script::new()
        .when(Matcher::model("fast"), [Reply::text("from fast")])
        .when(
            Matcher::Any,
            [
                Reply::http_error(429, r#"{"error":{"message":"slow down"}}"#)
                    .with_retry_after("2"),
                Reply::empty(),
                Reply::text("partial").cut_mid_stream(),
                Reply::text("thinking…").then_stall(),
            ],
        );
    let model = ScriptedModel::new(script);
    let fast = model.named("fast");
    let done = collect_stream(
        fast.stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.text, "from fast");

    let err = model
        .stream(request("s", "u"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(
        (err.kind, err.status, err.retry_after),
        (
            ErrorKind::RateLimit,
            Some(429),
            Some(Duration::from_secs(2))
        )
    );

    let err = collect_stream(
        model
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::EmptyReply);

    let err = collect_stream(
        model
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);

    let cancel = CancellationToken::new();
    let mut stream = model
        .stream(request("s", "u"), cancel.clone())
        .await
        .unwrap();
    assert_eq!(
        stream.next().await.unwrap().unwrap(),
        ModelEvent::TextDelta {
            text: "thinking…".into()
        }
    );
    cancel.cancel();
    assert_eq!(
        stream.next().await.unwrap().unwrap_err().kind,
        ErrorKind::Cancelled
    );
    assert!(stream.next().await.is_none());

    let err = model
        .stream(request("s", "nothing left"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert!(
        err.message
            .contains("no scripted reply matches this request"),
        "{}",
        err.message
    );
    assert!(err.message.contains("nothing left"));
    assert_eq!(model.unmatched(), 1);
}

#[tokio::test]
async fn server_sse_is_parsed_by_our_chat_client() {
    let script = Script::new()
        .when(
            Matcher::has_tools(),
            [Reply::default()
                .with_reasoning("look first")
                .with_text("Reading both files.")
                .with_tool_call("read_file", json!({"path": "a.rs"}))
                .with_tool_call_raw("read_file", "{\"path\": \"b.rs\"")
                .with_call_id("call_custom")
                .with_usage(Usage::new(100, 20, 50, 0))],
        )
        .always(
            Matcher::Any,
            Reply::text_chunks(["Hel", "lo ", "wörld"]).with_chunk_delay(Duration::from_millis(2)),
        );
    let server = ScriptedServer::start(script).await;
    let client = client_for(&server, fast());

    let done = collect_stream(
        client
            .stream(with_tools(request("sys", "go")), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.reasoning, "look first");
    assert_eq!(done.text, "Reading both files.");
    assert_eq!(done.stop, Some(StopReason::ToolUse));
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].id, "call_1");
    assert_eq!(done.tool_calls[0].arguments, json!({"path": "a.rs"}));
    assert_eq!(done.tool_calls[1].id, "call_custom");
    assert!(
        done.tool_calls[1].argument_error.is_some(),
        "malformed JSON arrives as scripted"
    );
    assert_eq!(done.tool_calls[1].raw_arguments, "{\"path\": \"b.rs\"");
    assert_eq!(done.usage, Some(Usage::new(100, 20, 50, 0)));

    let done = collect_stream(
        client
            .stream(request("You are QA", "hello"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.text, "Hello wörld");
    assert!(
        done.usage.unwrap().total > 0,
        "usage is estimated when not scripted"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].model(), Some("main"));
    assert_eq!(requests[0].tool_names(), vec!["read_file"]);
    assert_eq!(requests[1].system_prompt(), "You are QA");
    assert_eq!(requests[1].last_user_text(), "hello");
    assert!(requests[1].all_text().contains("You are QA\nhello"));
    assert_eq!(requests[1].texts_of("user"), vec!["hello"]);
    assert_eq!(requests[1].header("accept"), Some("text/event-stream"));
    assert_eq!(server.hits_by_index(0), 1);
    assert_eq!(server.hits_by_index(1), 1);
}

#[tokio::test]
async fn server_failures_drive_the_client_rules() {
    let script = Script::replies([
        Reply::http_error(429, r#"{"error":{"message":"Rate limit"}}"#).with_retry_after("0"),
        Reply::text("after retry"),
        Reply::text("half").cut_mid_stream(),
        Reply::empty(),
        Reply::stall(),
        Reply::text("late").delayed(Duration::from_millis(30)),
    ]);
    let server = ScriptedServer::start(script).await;
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    let options = ClientOptions {
        idle_timeout: Duration::from_millis(300),
        max_retries: 0,
        ..fast()
    };
    let retrying = client_for(
        &server,
        ClientOptions {
            max_retries: 1,
            ..options.clone()
        }
        .with_retry_observer(move |n| sink.lock().unwrap().push(n.clone())),
    );
    let client = client_for(&server, options);

    let done = collect_stream(
        retrying
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.text, "after retry");
    assert_eq!(notices.lock().unwrap()[0].status, Some(429));

    let err = collect_stream(
        client
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap_err();
    // Cut after content was delivered: the whole call must be re-issued, and the cause kept.
    assert_eq!(err.kind, ErrorKind::StreamInterrupted, "{err}");
    assert_eq!(err.cause, Some(ErrorKind::Network), "{err}");

    let err = collect_stream(
        client
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::EmptyReply);

    let err = client
        .stream(request("s", "u"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind, ErrorKind::Timeout);

    let done = collect_stream(
        client
            .stream(request("s", "u"), CancellationToken::new())
            .await
            .unwrap(),
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(done.text, "late");

    let err = client
        .stream(request("s", "unscripted"), CancellationToken::new())
        .await
        .err()
        .unwrap();
    assert_eq!((err.kind, err.status), (ErrorKind::Server, Some(500)));
    assert!(
        err.message
            .contains("no scripted reply matches this request"),
        "{}",
        err.message
    );
    assert_eq!(server.unmatched(), 1);
    assert_eq!(server.chat_requests().len(), 7);
}

#[tokio::test]
async fn server_lists_models() {
    let server = ScriptedServer::start(
        Script::new().when(Matcher::model("router-model"), [Reply::text("x")]),
    )
    .await;
    let models = braincode_llm::discover_models(
        &server.base_url(),
        braincode_protocol::ModelApi::OpenaiCompletions,
        None,
    )
    .await
    .unwrap();
    let ids: Vec<_> = models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, vec!["scripted", "router-model"]);
}

#[test]
fn temp_home_and_repo() {
    let home = TempHome::new();
    let models = home.write_models(&[scripted_model_entry("scripted/a", "http://127.0.0.1:9/v1")]);
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(models).unwrap()).unwrap();
    assert_eq!(written["models"][0]["id"], "scripted/a");
    assert_eq!(written["models"][0]["api"], "openai-completions");
    assert!(braincode_llm::is_keyless(&scripted_model_entry(
        "x",
        "http://127.0.0.1:9/v1"
    )));
    home.write_settings(&json!({"defaultBrain": "balanced"}));
    home.write_brains(&json!({"brains": []}));
    let auth = home.write_auth_keys(&[("openai", "sk-test")]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(auth).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert_eq!(home.env().0, "BRAINCODE_HOME");

    let repo = TempRepo::new();
    assert_eq!(repo.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
    repo.write("src/lib.rs", "pub fn f() {}\n");
    let sha = repo.commit("add lib");
    assert_eq!(sha.len(), 40);
    assert_eq!(repo.read("src/lib.rs"), "pub fn f() {}\n");
    assert!(repo.git(&["status", "--porcelain"]).is_empty());
}

#[tokio::test]
async fn computed_rules_see_who_asks_and_hits_count_by_matcher_name() {
    let router_prompt = braincode_brain::ROUTE_BRAIN_PROMPT;
    let handoff = format!("{}\n\nDo it.", braincode_brain::WORKER_HANDOFF_OPENING);
    let model = ScriptedModel::new(
        Script::new()
            .always(Matcher::router(), Reply::text("plan"))
            .when_fn(Matcher::any_support(), |request| {
                Reply::text(format!("{} results", request.tool_results().len()))
            }),
    );
    let ask = |system: &str, user: &str| {
        let model = model.named("test/m");
        let request = request(system, user);
        async move {
            let stream = model
                .stream(request, CancellationToken::new())
                .await
                .unwrap();
            collect_stream(stream, |_| {}).await.unwrap().text
        }
    };
    assert_eq!(ask(router_prompt, "plan this").await, "plan");
    assert_eq!(ask("You are a worker", &handoff).await, "0 results");
    assert_eq!(model.hits("router"), 1);
    assert_eq!(model.hits("support"), 1);
    let calls = model.calls();
    assert_eq!(calls[1].answered_by.as_deref(), Some("support"));
    assert_eq!(calls[1].model.as_deref(), Some("test/m"));
    assert_eq!(calls[1].kind(), braincode_test_support::CallKind::Support);
}

#[tokio::test]
async fn raw_replies_answer_any_path_rendered_ones_only_model_calls() {
    let listing = r#"{"object":"list","data":[{"id":"from-the-script"}]}"#;
    let server = ScriptedServer::start(
        Script::new()
            .when(
                Matcher::Any,
                [braincode_test_support::RawReply::json(listing).into()],
            )
            .always(Matcher::Any, Reply::text("hello")),
    )
    .await;
    let base_url = server.base_url();
    let discover = || {
        braincode_llm::discover_models(
            &base_url,
            braincode_protocol::ModelApi::OpenaiCompletions,
            None,
        )
    };
    let first = discover().await.unwrap();
    assert_eq!(first[0].id, "from-the-script");
    // The raw reply is used: the next listing is the server's own.
    let second = discover().await.unwrap();
    assert!(second.iter().any(|m| m.id == "scripted"), "{second:?}");
    let stream = client_for(&server, fast())
        .stream(request("sys", "hi"), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(collect_stream(stream, |_| {}).await.unwrap().text, "hello");
}
