//! What a save accepts and refuses: bad input is a 400 that names its field and leaves the
//! file as it was (never a silent "saved" that dropped the value), and a save changes only
//! what it was asked to change (the other entries of the file keep their bytes).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{fixture, form_version, model};
use braincode_config::Home;
use reqwest::StatusCode;
use serde_json::{Value, json};

fn budget_body(version: &str, max_tokens: Value, max_cost: Value) -> Value {
    json!({"version": version, "extends": "", "roles": {},
        "budget": {"maxTokens": max_tokens, "maxCostUsd": max_cost}})
}

fn brain_budget(home: &std::path::Path) -> braincode_brain::BrainBudget {
    let presets = braincode_config::load_brains(&Home::at(home)).unwrap();
    braincode_brain::select_brain(&presets, "brain")
        .unwrap()
        .budget
}

#[tokio::test]
async fn a_token_budget_takes_k_and_m_and_refuses_anything_else_at_its_field() {
    let f = fixture().await;
    let path = f.home.join("brains.json");
    // A limit is set first: a bad value later must not remove it.
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            budget_body("absent", json!("50k"), json!("5")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let budget = brain_budget(&f.home);
    assert_eq!(budget.max_tokens, Some(50_000));
    assert_eq!(budget.max_cost_usd, Some(5.0));

    for (text, expected) in [
        ("1.5m", 1_500_000),
        ("2M", 2_000_000),
        (" 12000 ", 12_000),
        ("2.5k", 2_500),
    ] {
        let (_, page) = f.page("/brains/brain").await;
        let (status, answer) = f
            .post(
                "/api/brains/brain",
                budget_body(&form_version(&page), json!(text), json!("5")),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{text}: {answer}");
        assert_eq!(brain_budget(&f.home).max_tokens, Some(expected), "{text}");
    }

    let (_, page) = f.page("/brains/brain").await;
    let version = form_version(&page);
    let before = std::fs::read(&path).unwrap();
    for bad in [
        json!("abc"),
        json!("50 k"),
        json!("1.2345k"),
        json!("-5"),
        json!("0"),
        json!("5g"),
        json!(1.5),
        json!(-3),
        json!(true),
    ] {
        let (status, answer) = f
            .post(
                "/api/brains/brain",
                budget_body(&version, bad.clone(), json!("5")),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {answer}");
        assert_eq!(answer["ok"], false, "{answer}");
        assert_eq!(answer["field"], "budget.maxTokens", "{bad}: {answer}");
        assert!(
            !answer["error"].as_str().unwrap().is_empty(),
            "{bad}: no reason given"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{bad} changed brains.json"
        );
    }
    for bad in [json!("abc"), json!("-1"), json!("1e999")] {
        let (status, answer) = f
            .post(
                "/api/brains/brain",
                budget_body(&version, json!("2.5k"), bad.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {answer}");
        assert_eq!(answer["field"], "budget.maxCostUsd", "{bad}: {answer}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
    let budget = brain_budget(&f.home);
    assert_eq!(
        budget.max_tokens,
        Some(2_500),
        "a refused save kept the limit"
    );

    // Empty is "no limit", as the form says.
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            budget_body(&version, json!(""), json!("")),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let budget = brain_budget(&f.home);
    assert_eq!(budget.max_tokens, None);
    assert_eq!(budget.max_cost_usd, None);
    let (_, page) = f.page("/brains/brain").await;
    assert!(
        page.contains("empty: no limit"),
        "the form says what empty means"
    );
}

#[tokio::test]
async fn a_model_id_with_spaces_or_a_base_url_that_is_not_http_is_refused_at_its_field() {
    let f = fixture().await;
    let cases = [
        ("id", json!("bad id with spaces"), "id"),
        ("id", json!("a,b"), "id"),
        ("baseUrl", json!("not a url"), "baseUrl"),
        ("baseUrl", json!("ftp://example.com/v1"), "baseUrl"),
        ("baseUrl", json!("https://"), "baseUrl"),
        ("contextWindow", json!("abc"), "contextWindow"),
        ("contextWindow", json!(1.5), "contextWindow"),
    ];
    for (key, value, field) in cases {
        let mut body = model("lab/ok", "absent");
        body[key] = value.clone();
        let (status, answer) = f.post("/api/models", body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{value}: {answer}");
        assert_eq!(answer["field"], field, "{value}: {answer}");
        assert!(!f.home.join("models.json").exists(), "{value} was saved");
    }
    let mut body = model("lab/ok", "absent");
    body["baseUrl"] = json!("http://127.0.0.1:11434/v1");
    let (status, answer) = f.post("/api/models", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}

/// A models.json written by hand: its own layout, and an entry without `name` (which the
/// serde defaults would turn into `"name": ""` if the file were re-serialized).
const HAND_WRITTEN: &str = r#"{
    "models": [
        {"id": "lab/hand", "provider": "lab", "modelId": "hand-1", "contextWindow": 32000},
        {
            "id": "lab/second",
            "provider": "lab",
            "modelId": "second",
            "api": "openai-completions"
        }
    ],
    "providers": [{"provider": "lab", "baseUrl": "http://127.0.0.1:9/v1"}]
}
"#;

#[tokio::test]
async fn adding_or_removing_a_model_leaves_the_other_entries_byte_for_byte() {
    let f = fixture().await;
    let path = f.home.join("models.json");
    std::fs::write(&path, HAND_WRITTEN).unwrap();
    let version = f.get_json("/api/models").await["data"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = model("lab/new", &version);
    body["name"] = json!("");
    let (status, answer) = f.post("/api/models", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let text = std::fs::read_to_string(&path).unwrap();
    for kept in [
        r#"{"id": "lab/hand", "provider": "lab", "modelId": "hand-1", "contextWindow": 32000},"#,
        "        {\n            \"id\": \"lab/second\",\n            \"provider\": \"lab\",\n            \"modelId\": \"second\",\n            \"api\": \"openai-completions\"\n        }",
        r#""providers": [{"provider": "lab", "baseUrl": "http://127.0.0.1:9/v1"}]"#,
    ] {
        assert!(text.contains(kept), "lost {kept:?} in\n{text}");
    }
    let value: Value = serde_json::from_str(&text).unwrap();
    let models = value["models"].as_array().unwrap();
    assert_eq!(models.len(), 3);
    assert!(models[0].get("name").is_none(), "{text}");
    assert!(models[1].get("name").is_none(), "{text}");
    assert_eq!(models[2]["id"], "lab/new");
    let doc = braincode_config::read_models_file(&Home::at(&f.home))
        .unwrap()
        .unwrap();
    assert_eq!(doc.models[2].pricing.unwrap().output, 1.6);

    // Removing the new one gives the hand-written file back, byte for byte.
    let version = answer["data"]["version"].as_str().unwrap();
    let (status, answer) = f
        .post(
            "/api/models/remove",
            json!({"id": "lab/new", "version": version}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), HAND_WRITTEN);
    // Removing the first keeps the second as written.
    let version = answer["data"]["version"].as_str().unwrap();
    let (status, answer) = f
        .post(
            "/api/models/remove",
            json!({"id": "lab/hand", "version": version}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains("        {\n            \"id\": \"lab/second\",\n"),
        "{text}"
    );
    assert!(!text.contains("lab/hand"), "{text}");
    let doc = braincode_config::read_models_file(&Home::at(&f.home))
        .unwrap()
        .unwrap();
    assert_eq!(doc.models.len(), 1);
}

/// An image-generation model (what imageMaker generates images with) can be added from the
/// panel: its `openai-images` API is offered by the form and kept in models.json, and a text
/// role never takes it.
#[tokio::test]
async fn an_image_model_is_added_with_its_api() {
    let f = fixture().await;
    let (_, page) = f.page("/models").await;
    assert!(page.contains(r#"<option value="openai-images">"#), "{page}");
    let version = f.get_json("/api/models").await["data"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    let mut body = model("lab/painter", &version);
    body["api"] = json!("openai-images");
    let (status, answer) = f.post("/api/models", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let doc = braincode_config::read_models_file(&Home::at(&f.home))
        .unwrap()
        .unwrap();
    let painter = doc.models.iter().find(|m| m.id == "lab/painter").unwrap();
    assert_eq!(painter.api, braincode_protocol::ModelApi::OpenaiImages);
}
