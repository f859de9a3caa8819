//! Subscription logins through the panel's API, against the fake authorization server:
//! start, poll to completion, cancel, a pasted redirect, and the guard in front of it all.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use braincode_test_support::{DevicePoll, FakeAuthConfig, FakeAuthServer};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Fixture, fixture, plain_client};

fn point_at(fixture: &Fixture, auth: &FakeAuthServer, redirect: &str) {
    std::fs::write(
        fixture.home.join("settings.json"),
        json!({"version": 1, "auth": {"oauth": auth.oauth_settings(redirect)}}).to_string(),
    )
    .unwrap();
}

async fn poll_until_finished(fixture: &Fixture, id: &str) -> Value {
    for _ in 0..300 {
        let answer = fixture.get_json(&format!("/api/oauth/login/{id}")).await;
        let status = answer["data"]["status"].as_str().unwrap().to_string();
        if status != "starting" && status != "pending" {
            return answer["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the login never finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_login_started_from_the_panel_completes_and_is_saved() {
    let auth = FakeAuthServer::start(FakeAuthConfig {
        polls: vec![DevicePoll::Pending, DevicePoll::Granted],
        ..FakeAuthConfig::default()
    })
    .await;
    let fixture = fixture().await;
    point_at(&fixture, &auth, "http://localhost:1/auth/callback");

    let providers = fixture.get_json("/api/oauth/providers").await;
    assert_eq!(providers["data"]["providers"][0]["id"], "github-copilot");
    assert_eq!(
        providers["data"]["providers"][1]["usesCallbackServer"],
        true
    );

    let (status, answer) = fixture
        .post(
            "/api/oauth/login",
            json!({"oauthProviderId": "github-copilot"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let session = &answer["data"];
    assert_eq!(session["userCode"], "ABCD-1234", "{session}");
    assert_ne!(session["status"], "starting");
    let done = poll_until_finished(&fixture, session["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["expires"].as_i64().is_some());
    assert!(
        !done.to_string().contains("gho_fake"),
        "a secret in the session state"
    );

    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.home.join("auth.json")).unwrap())
            .unwrap();
    assert_eq!(
        stored["providers"]["github-copilot"]["oauth"]["providerId"],
        "github-copilot"
    );
    let (_, page) = fixture.page("/auth").await;
    assert!(page.contains("Subscription login"));
    assert!(page.contains("expires"), "the auth status shows the entry");
    assert!(!page.contains("gho_fake"), "the page shows a secret");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_login_writes_nothing() {
    let auth = FakeAuthServer::start(FakeAuthConfig {
        polls: vec![DevicePoll::Pending],
        interval: 1,
        ..FakeAuthConfig::default()
    })
    .await;
    let fixture = fixture().await;
    point_at(&fixture, &auth, "http://localhost:1/auth/callback");
    let (_, answer) = fixture
        .post(
            "/api/oauth/login",
            json!({"oauthProviderId": "github-copilot"}),
        )
        .await;
    let id = answer["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(answer["data"]["status"], "pending");
    let (status, answer) = fixture
        .post(&format!("/api/oauth/login/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["data"]["status"], "cancelled", "{answer}");
    assert!(!fixture.home.join("auth.json").exists());
    let (status, _) = fixture
        .post(
            &format!("/api/oauth/login/{id}/manual-code"),
            json!({"code": "x"}),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a finished login took a code"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pasted_redirect_completes_a_codex_login() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let fixture = fixture().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    point_at(
        &fixture,
        &auth,
        &format!("http://localhost:{port}/auth/callback"),
    );
    let (_, answer) = fixture
        .post(
            "/api/oauth/login",
            json!({"oauthProviderId": "openai-codex"}),
        )
        .await;
    let session = &answer["data"];
    let url = session["authUrl"].as_str().unwrap();
    let reply = plain_client().get(url).send().await.unwrap();
    let location = reply.headers()["location"].to_str().unwrap().to_string();
    let id = session["id"].as_str().unwrap();
    let (status, _) = fixture
        .post(
            &format!("/api/oauth/login/{id}/manual-code"),
            json!({"code": location}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let done = poll_until_finished(&fixture, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(auth.log().verifier_mismatches, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_api_is_behind_the_guard() {
    let auth = FakeAuthServer::start(FakeAuthConfig::default()).await;
    let fixture = fixture().await;
    point_at(&fixture, &auth, "http://localhost:1/auth/callback");
    let client = plain_client();
    let refused = client
        .post(fixture.url("/api/oauth/login"))
        .json(&json!({"oauthProviderId": "github-copilot"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let foreign = fixture
        .client()
        .post(fixture.url("/api/oauth/login"))
        .header("origin", "http://evil.example")
        .json(&json!({"oauthProviderId": "github-copilot"}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    assert!(
        auth.log().requests.is_empty(),
        "a refused request started a login"
    );
    let (status, answer) = fixture
        .post("/api/oauth/login", json!({"oauthProviderId": "anthropic"}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "oauthProviderId");
}
