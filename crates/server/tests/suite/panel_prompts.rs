//! The role-prompt editor (a preview that writes nothing, then the confirming save, the
//! reset, the limits) and the usage page's cache hits and recent calls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::common::{Fixture, fixture, form_version, write_session};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

async fn version(f: &Fixture, page: &str) -> String {
    let (status, text) = f.page(page).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    form_version(&text)
}

/// A bad request is refused at `field` and leaves `path` as it was.
async fn refused_at(f: &Fixture, route: &str, body: Value, field: &str, path: &Path) {
    let before = std::fs::read(path).ok();
    let (status, answer) = f.post(route, body.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
    assert_eq!(answer["field"], field, "{body}: {answer}");
    assert_eq!(
        std::fs::read(path).ok(),
        before,
        "{body} changed {}",
        path.display()
    );
}

const BRAINS: &str = "{\n  \"brains\": [\n    {\n      \"id\": \"mine\",\n      \"extends\": \"brain\",\n      \"description\": \"kept as written\"\n    }\n  ]\n}\n";

#[tokio::test]
async fn a_role_prompt_is_previewed_then_saved_then_reset() {
    let f = fixture().await;
    let path = f.home.join("brains.json");
    std::fs::write(&path, BRAINS).unwrap();
    let (_, page) = f.page("/routing?brain=mine").await;
    assert!(page.contains("data-role=\"backend\""), "{page}");
    let v = form_version(&page);
    let body = json!({"version": v, "brain": "mine", "role": "backend", "prompt": "You write careful Rust.\nAlways test."});
    let (status, answer) = f.post("/api/role-prompts/preview", body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["data"]["changed"], true);
    assert_eq!(answer["data"]["added"], 2, "{answer}");
    let html = answer["data"]["html"].as_str().unwrap();
    assert!(
        html.contains("<ins>+ You write careful Rust.\n</ins>"),
        "{html}"
    );
    assert!(html.contains("<del>"), "{html}");
    assert_eq!(read(&path), BRAINS, "a preview writes nothing");

    let (status, answer) = f.post("/api/role-prompts", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        read(&path),
        BRAINS.replace(
            "\"description\": \"kept as written\"\n",
            "\"description\": \"kept as written\",\n      \"roles\": {\n        \"backend\": {\n          \"systemPrompt\": \"You write careful Rust.\\nAlways test.\"\n        }\n      }\n"
        )
    );
    let (_, page) = f.page("/routing?brain=mine").await;
    assert!(
        page.contains("class=\"tag custom\""),
        "the badge says custom"
    );

    let v = version(&f, "/routing?brain=mine").await;
    let long = "x".repeat(20_001);
    refused_at(
        &f,
        "/api/role-prompts",
        json!({"version": v, "brain": "mine", "role": "backend", "prompt": long}),
        "prompt",
        &path,
    )
    .await;
    let (_, answer) = f
        .post(
            "/api/role-prompts",
            json!({"version": v, "brain": "mine", "role": "backend", "prompt": "x".repeat(20_001)}),
        )
        .await;
    assert!(
        answer["error"].as_str().unwrap().contains("20000"),
        "{answer}"
    );
    refused_at(
        &f,
        "/api/role-prompts",
        json!({"version": v, "brain": "mine", "role": "chef", "prompt": "x"}),
        "role",
        &path,
    )
    .await;
    refused_at(
        &f,
        "/api/role-prompts",
        json!({"version": v, "brain": "nope", "role": "backend", "prompt": "x"}),
        "brain",
        &path,
    )
    .await;

    // Empty is the reset: the key goes, the rest stays.
    let (status, answer) = f
        .post(
            "/api/role-prompts",
            json!({"version": v, "brain": "mine", "role": "backend", "prompt": "  "}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let value: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(value["brains"][0]["roles"]["backend"], json!({}));
    assert_eq!(value["brains"][0]["description"], "kept as written");
}

#[tokio::test]
async fn a_built_in_brains_prompt_copies_the_brain_into_the_file() {
    let f = fixture().await;
    let path = f.home.join("brains.json");
    let (status, answer) = f
        .post(
            "/api/role-prompts",
            json!({"version": "absent", "brain": "brain", "role": "frontend", "prompt": "Pixels."}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let presets = braincode_config::load_brains(&braincode_config::Home::at(&f.home)).unwrap();
    let brain = braincode_brain::select_brain(&presets, "brain").unwrap();
    assert_eq!(
        braincode_brain::role_system_prompt(braincode_protocol::Role::Frontend, &brain),
        "Pixels."
    );
    assert!(path.exists());
}

#[tokio::test]
async fn the_usage_page_shows_cache_hits_and_recent_calls() {
    let f = fixture().await;
    write_session(
        &f.home,
        "20261101-000000-bbbbbb",
        &[
            json!({"type": "token_usage", "role": "backend", "modelId": "local/smollm2",
            "usage": {"input": 30, "output": 5, "cacheRead": 70, "cacheWrite": 0}}),
        ],
    );
    let (status, page) = f.page("/usage").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("<dd data-total=\"cache-hit\">70.0% "),
        "{page}"
    );
    assert!(page.contains("id=\"recent-calls\""), "{page}");
    assert!(page.contains("<code>local/smollm2</code>"), "{page}");
}
