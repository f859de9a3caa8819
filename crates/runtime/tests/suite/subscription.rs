//! Subscription credentials as runs use them: renewal under auth.json's lock when two
//! resolutions race, a refused renewal, and the Codex Responses request a login produces —
//! against the fake authorization server and the scripted model server on 127.0.0.1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;

use braincode_config::{AuthStore, Home, OauthEntry, OauthSettings, journal::now_ms};
use braincode_llm::oauth::subscription_access;
use braincode_llm::{
    ChatMessage, ChatRequest, ClientOptions, ModelClient, WireClient, collect_stream,
};
use braincode_protocol::{ModelDefinition, OauthCredentials, OauthProvider};
use braincode_runtime::fresh_subscription;
use braincode_test_support::{
    FakeAuthConfig, FakeAuthServer, Matcher, Reply, Script, ScriptedServer, TempHome,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn oauth_settings(auth: &FakeAuthServer) -> OauthSettings {
    serde_json::from_value(auth.oauth_settings("http://localhost:1/auth/callback")).unwrap()
}

fn expired_codex(home: &TempHome, auth: &FakeAuthServer) -> Home {
    let home = Home::at(home.path());
    let mut extra = std::collections::BTreeMap::new();
    extra.insert("accountId".to_string(), json!("acct-fake-1"));
    AuthStore::new(&home)
        .set_oauth(
            "openai-codex",
            &OauthEntry {
                provider_id: "openai-codex".into(),
                credentials: OauthCredentials {
                    refresh: "codex-refresh-old".into(),
                    access: "codex-access-old".into(),
                    expires: now_ms() - 5_000,
                    extra,
                },
            },
        )
        .unwrap();
    auth.accept_refresh_token("codex-refresh-old");
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_resolutions_renew_once_and_keep_auth_json_whole() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let temp = TempHome::new();
    let home = expired_codex(&temp, &auth);
    let oauth = oauth_settings(&auth);
    // The provider rotates refresh tokens: a second renewal with the old one would be refused.
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let (home, oauth) = (home.clone(), oauth.clone());
            tokio::spawn(async move { fresh_subscription(&home, &oauth, "openai-codex").await })
        })
        .collect();
    let mut accesses = Vec::new();
    for task in tasks {
        let (login, creds) = task.await.unwrap().unwrap().unwrap();
        assert_eq!(login, OauthProvider::OpenaiCodex);
        accesses.push(creds.access);
    }
    let log = auth.log();
    assert_eq!(
        log.refreshes, 1,
        "the refresh token was spent more than once"
    );
    assert!(
        accesses.iter().all(|a| a == &log.codex_tokens[0]),
        "{accesses:?}"
    );
    let path = temp.path().join("auth.json");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let stored = AuthStore::new(&home)
        .oauth("openai-codex")
        .unwrap()
        .unwrap();
    assert_eq!(stored.credentials.access, log.codex_tokens[0]);
    assert!(stored.credentials.refresh.starts_with("codex-refresh-"));
    assert_ne!(stored.credentials.refresh, "codex-refresh-old");
    assert_eq!(
        stored.credentials.extra_str("accountId"),
        Some("acct-fake-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_refresh_says_to_log_in_again_and_changes_nothing() {
    let auth = FakeAuthServer::start(FakeAuthConfig {
        refresh_refused: true,
        ..FakeAuthConfig::default()
    })
    .await;
    let temp = TempHome::new();
    let home = expired_codex(&temp, &auth);
    let before = std::fs::read_to_string(temp.path().join("auth.json")).unwrap();
    let err = fresh_subscription(&home, &oauth_settings(&auth), "openai-codex")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("run `braincode auth login openai-codex` again"),
        "{err}"
    );
    assert!(err.contains("invalid_grant"), "{err}");
    assert_eq!(
        std::fs::read_to_string(temp.path().join("auth.json")).unwrap(),
        before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_login_calls_the_responses_api_with_its_account() {
    let server = ScriptedServer::start(Script::new().always(Matcher::Any, Reply::text("hi"))).await;
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let temp = TempHome::new();
    let home = expired_codex(&temp, &auth);
    let (login, creds) = fresh_subscription(&home, &oauth_settings(&auth), "openai-codex")
        .await
        .unwrap()
        .unwrap();
    let definition: ModelDefinition = serde_json::from_value(json!({
        "id": "openai-codex/gpt-5", "provider": "openai-codex", "modelId": "gpt-5",
        "baseUrl": format!("{}/backend-api/codex", server.url()),
    }))
    .unwrap();
    let access = subscription_access(login, &creds);
    let client =
        WireClient::for_subscription(&definition, &access, ClientOptions::default()).unwrap();
    let request = ChatRequest {
        messages: vec![ChatMessage::user_text("hello")],
        ..ChatRequest::default()
    };
    let stream = client
        .stream(request, CancellationToken::new())
        .await
        .unwrap();
    let completion = collect_stream(stream, |_| {}).await.unwrap();
    assert!(completion.text.contains("hi"), "{completion:?}");
    let sent = &server.chat_requests()[0];
    assert_eq!(sent.path, "/backend-api/codex/responses");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {}", creds.access).as_str())
    );
    assert_eq!(sent.header("chatgpt-account-id"), Some("acct-fake-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_nobody_answers_times_out_and_writes_nothing() {
    use braincode_runtime::{LoginChannels, LoginRequest, subscription_login};
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let temp = TempHome::new();
    let home = Home::at(temp.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let oauth: OauthSettings = serde_json::from_value(
        auth.oauth_settings(&format!("http://localhost:{port}/auth/callback")),
    )
    .unwrap();
    let (events, _shown) = tokio::sync::mpsc::unbounded_channel();
    let (_paste, pasted) = tokio::sync::mpsc::unbounded_channel();
    let err = subscription_login(
        &home,
        &oauth,
        LoginRequest {
            provider: OauthProvider::OpenaiCodex,
            enterprise_domain: String::new(),
            timeout: std::time::Duration::from_millis(300),
        },
        LoginChannels {
            events,
            pasted,
            cancel: CancellationToken::new(),
        },
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("timed out"), "{err}");
    assert!(err.contains("nothing was saved"), "{err}");
    assert!(!temp.path().join("auth.json").exists());
}
