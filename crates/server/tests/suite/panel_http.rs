//! The control panel over real HTTP: who gets in (token, Host, Origin), what a write does to
//! the files (validated, atomic, never blind over a newer file), and what the pages and the
//! live stream show of real journals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::{fixture, form_version, model, plain_client, write_session};
use braincode_config::Home;
use braincode_protocol::{Record, Role, TokenUsage, Usage};
use braincode_server::{ServeOptions, start};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn without_the_token_nothing_is_served() {
    let f = fixture().await;
    let client = plain_client();
    for path in ["/", "/models", "/api/health", "/assets/app.js", "/sessions"] {
        let response = client.get(f.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    // A wrong token, in the address or in the cookie.
    let response = client.get(f.url("/?token=0000")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let forged = format!("braincode_panel_{}=ffff", f.panel.addr.port());
    let response = client
        .get(f.url("/models"))
        .header("Cookie", forged)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // A write without the token changes nothing.
    let response = client
        .post(f.url("/api/models"))
        .json(&model("evil/m", "absent"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(!f.home.join("models.json").exists());
}

#[tokio::test]
async fn the_printed_address_sets_a_strict_http_only_cookie_and_drops_the_token() {
    let f = fixture().await;
    let response = plain_client().get(f.panel.url()).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/");
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&f.cookie()), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    // With the cookie every page is served, with the protective headers.
    for path in [
        "/models",
        "/brains",
        "/brains/brain",
        "/routing",
        "/permissions",
        "/mcp",
        "/sessions",
        "/usage",
    ] {
        let response = f.client().get(f.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap();
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert_eq!(response.headers()["x-frame-options"], "DENY");
        let body = response.text().await.unwrap();
        assert!(body.contains("/assets/app.js"), "{path}");
    }
    // A script may use the token as a bearer header instead.
    let response = plain_client()
        .get(f.url("/api/health"))
        .bearer_auth(&f.panel.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_foreign_host_or_origin_is_refused_even_with_the_cookie() {
    let f = fixture().await;
    // DNS rebinding: evil.example resolves to 127.0.0.1, the browser sends its own Host.
    let port = f.panel.addr.port();
    let response = f
        .client()
        .get(f.url("/models"))
        .header("Host", format!("evil.example:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    // CSRF: a page elsewhere posts to the panel.
    let response = f
        .client()
        .post(f.url("/api/models"))
        .header("Origin", "http://evil.example")
        .json(&model("evil/m", "absent"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let response = f
        .client()
        .post(f.url("/api/models"))
        .header("Sec-Fetch-Site", "cross-site")
        .json(&model("evil/m", "absent"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    assert!(
        !f.home.join("models.json").exists(),
        "a refused write wrote"
    );
    // Its own origin (either name) is fine.
    let response = f
        .client()
        .post(f.url("/api/models"))
        .header("Origin", format!("http://localhost:{port}"))
        .json(&model("ok/m", "absent"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
}

#[tokio::test]
async fn an_added_model_is_validated_saved_and_read_by_the_cli_loader() {
    let f = fixture().await;
    let mut broken = model("my/m", "absent");
    broken["contextWindow"] = json!(0);
    let (status, answer) = f.post("/api/models", broken).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "contextWindow", "{answer}");
    let mut missing = model("my/m", "absent");
    missing.as_object_mut().unwrap().remove("provider");
    let (status, answer) = f.post("/api/models", missing).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "provider", "{answer}");
    assert!(!f.home.join("models.json").exists());

    let (status, answer) = f.post("/api/models", model("my/m", "absent")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let version = answer["data"]["version"].as_str().unwrap().to_string();
    let catalog = braincode_config::load_models(&Home::at(&f.home)).unwrap();
    let added = catalog.iter().find(|m| m.id == "my/m").unwrap();
    assert_eq!(added.context_window, 262_144);
    assert_eq!(added.pricing.unwrap().output, 1.6);
    let (_, page) = f.page("/models").await;
    assert!(page.contains("my/m"));
    // The same id again is an error at the id field.
    let (status, answer) = f.post("/api/models", model("my/m", &version)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "id");
    // Removing it.
    let (status, _) = f
        .post(
            "/api/models/remove",
            json!({"id": "my/m", "version": version}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let catalog = braincode_config::load_models(&Home::at(&f.home)).unwrap();
    assert!(catalog.iter().all(|m| m.id != "my/m"));
}

#[tokio::test]
async fn concurrent_edits_do_not_lose_a_write() {
    let f = fixture().await;
    // Two tabs read the file at the same version and both save.
    let (a, b) = tokio::join!(
        f.post("/api/models", model("tab/a", "absent")),
        f.post("/api/models", model("tab/b", "absent")),
    );
    let mut statuses = [a.0, b.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CONFLICT],
        "{a:?} {b:?}"
    );
    let winner = if a.0 == StatusCode::OK {
        "tab/a"
    } else {
        "tab/b"
    };
    let loser = if a.0 == StatusCode::OK { &b.1 } else { &a.1 };
    assert!(
        loser["error"].as_str().unwrap().contains("changed since"),
        "{loser}"
    );
    let doc = braincode_config::read_models_file(&Home::at(&f.home))
        .unwrap()
        .unwrap();
    assert_eq!(
        doc.models.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
        [winner]
    );
    // The loser reloads (new version) and saves: both are kept.
    let version = f.get_json("/api/models").await["data"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    let other = if winner == "tab/a" { "tab/b" } else { "tab/a" };
    let (status, _) = f.post("/api/models", model(other, &version)).await;
    assert_eq!(status, StatusCode::OK);
    // Someone edits the file outside the panel: a save from the old version is refused and
    // the outside edit stays.
    let path = f.home.join("models.json");
    let outside = std::fs::read_to_string(&path)
        .unwrap()
        .replace("tab/a", "tab/renamed");
    std::fs::write(&path, &outside).unwrap();
    let (status, _) = f.post("/api/models", model("tab/c", &version)).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), outside);
}

#[tokio::test]
async fn a_broken_brain_is_refused_at_its_field_and_a_good_edit_is_saved() {
    let f = fixture().await;
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": "absent", "extends": "",
                "roles": {"backend": {"modelId": "no/such-model", "fallbackModelIds": ""}}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "roles.backend.modelId", "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("no/such-model"),
        "{answer}"
    );
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": "absent", "extends": "",
                "roles": {"qa": {"modelId": "local/smollm2", "fallbackModelIds": "nope/fallback"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "roles.qa.fallbackModelIds", "{answer}");
    assert!(!f.home.join("brains.json").exists(), "a refused edit wrote");

    // A brain that extends itself is an inheritance cycle, shown at `extends`.
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": "absent", "extends": "brain", "roles": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "extends", "{answer}");

    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": "absent", "extends": "",
                "roles": {"qa": {"modelId": "local/smollm2", "fallbackModelIds": "openai/gpt-5.5"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let presets = braincode_config::load_brains(&Home::at(&f.home)).unwrap();
    let brain = braincode_brain::select_brain(&presets, "brain").unwrap();
    assert_eq!(
        brain.policy(Role::Qa).chain(),
        ["local/smollm2", "openai/gpt-5.5"]
    );
    let (_, page) = f.page("/brains/brain").await;
    assert!(page.contains("openai/gpt-5.5"));

    // The brain's own budget: validated at its field, then saved.
    let version = form_version(&page);
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": version, "extends": "", "roles": {},
                "budget": {"maxTokens": 0}}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "budget.maxTokens", "{answer}");
    let (status, answer) = f
        .post(
            "/api/brains/brain",
            json!({"version": version, "extends": "", "roles": {},
                "budget": {"maxTokens": 2_000_000, "maxCostUsd": 5}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let presets = braincode_config::load_brains(&Home::at(&f.home)).unwrap();
    let brain = braincode_brain::select_brain(&presets, "brain").unwrap();
    assert_eq!(brain.budget.max_tokens, Some(2_000_000));
    assert_eq!(brain.budget.max_cost_usd, Some(5.0));
    assert_eq!(
        brain.policy(Role::Qa).chain(),
        ["local/smollm2", "openai/gpt-5.5"],
        "an edit of the budget kept the roles"
    );
}

#[tokio::test]
async fn a_malformed_file_is_shown_not_overwritten() {
    let f = fixture().await;
    let path = f.home.join("models.json");
    std::fs::write(&path, "{\"models\": [ {\"id\": ").unwrap();
    let (status, page) = f.page("/models").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("models.json"), "{page}");
    let version = f.get_json("/api/models").await;
    assert_eq!(version["ok"], false);
    let bytes = std::fs::read(&path).unwrap();
    let (status, _) = f.post("/api/models", model("x/y", "absent")).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // Bad JSON bodies and unknown API paths get the JSON error shape.
    let response = f
        .client()
        .post(f.url("/api/models/test"))
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(response.json::<Value>().await.unwrap()["ok"], false);
    let missing = f.get_json("/api/nothing-here").await;
    assert_eq!(
        missing,
        json!({"ok": false, "error": "Not found", "field": null})
    );
}

fn usage_record(role: Role, model: &str, usage: Usage) -> Record {
    Record::TokenUsage(TokenUsage {
        role: Some(role),
        model_id: Some(model.to_string()),
        usage,
        ..TokenUsage::default()
    })
}

#[tokio::test]
async fn usage_totals_are_the_sum_of_the_journals_token_usage_records() {
    let f = fixture().await;
    let calls = [
        (
            Role::Backend,
            "openai/gpt-5.5",
            Usage::new(1_000, 200, 300, 0),
        ),
        (
            Role::Review,
            "anthropic/claude-sonnet-4-6",
            Usage::new(4_000, 50, 0, 100),
        ),
        (Role::Rush, "local/smollm2", Usage::new(10, 5, 0, 0)),
    ];
    for (i, chunk) in calls.chunks(2).enumerate() {
        let records: Vec<Value> = chunk
            .iter()
            .map(|(role, model, usage)| {
                serde_json::to_value(usage_record(*role, model, *usage)).unwrap()
            })
            .collect();
        write_session(&f.home, &format!("2026-12-01T00-00-0{i}-usage"), &records);
    }
    let summary = f.get_json("/api/usage?by=model").await;
    let total = &summary["data"]["total"];
    assert_eq!(total["calls"], 3);
    assert_eq!(total["usage"]["input"], 5_010);
    assert_eq!(total["usage"]["output"], 255);
    assert_eq!(total["usage"]["cacheRead"], 300);
    assert_eq!(total["usage"]["cacheWrite"], 100);
    // Priced by the built-in prices: 1000·5 + 200·30 + 300·0.5 (GPT-5.5) and
    // 4000·3 + 50·15 + 100·3.75 (Sonnet 4.6), per million tokens.
    let expected = (5_000.0 + 6_000.0 + 150.0 + 12_000.0 + 750.0 + 375.0) / 1e6;
    let cost = total["costUsd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    let (status, page) = f.page("/usage?by=role").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("usage-chart") && page.contains("review"));
    let answer = f.get_json("/api/usage?by=weekday").await;
    assert_eq!(answer["field"], "by");
}

#[tokio::test]
async fn sessions_are_searchable_and_a_running_one_streams_its_new_records() {
    let f = fixture().await;
    write_session(
        &f.home,
        "2026-12-01T10-00-00-older",
        &[
            json!({"type": "run_start", "prompt": "Rename the Flux capacitor", "attempt": 1}),
            json!({"type": "run_end", "summary": "renamed"}),
        ],
    );
    let path = write_session(
        &f.home,
        "2026-12-01T11-00-00-live",
        &[json!({"type": "run_start", "prompt": "Add rate limiting", "attempt": 1})],
    );
    let (_, page) = f.page("/sessions?q=flux").await;
    assert!(page.contains("1 session(s) of 2"), "{page}");
    assert!(page.contains("[Flux]"), "{page}");
    let (_, page) = f.page("/sessions/2026-12-01T11-00-00-live").await;
    assert!(page.contains("data-live-session"), "{page}");
    let offset = std::fs::metadata(&path).unwrap().len();

    let response = f
        .client()
        .get(f.url(&format!(
            "/api/sessions/2026-12-01T11-00-00-live/events?offset={offset}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    // The run goes on in "another process": records are appended to the journal.
    let writer_path = f.home.clone();
    let appender = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        write_session(
            &writer_path,
            "2026-12-01T11-00-00-live",
            &[
                json!({"type": "worker_start", "phase": "support", "worker": "librarian",
                    "goal": "Map the login code"}),
                json!({"type": "run_end", "summary": "limited"}),
            ],
        );
    });
    let mut stream = response;
    let mut text = String::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if text.contains("event: end") {
                break;
            }
        }
    })
    .await;
    appender.await.unwrap();
    assert!(read.is_ok(), "the stream did not end: {text}");
    let worker = text.find("Map the login code").expect(&text);
    let end = text.find("event: end").unwrap();
    assert!(worker < end);
    assert!(
        !text.contains("Add rate limiting"),
        "sent what was there before the offset"
    );
}

#[tokio::test]
async fn routing_preview_and_permission_check_answer_with_the_run_engines() {
    let f = fixture().await;
    let (status, answer) = f
        .post(
            "/api/routing/preview",
            json!({"task": "Add rate limiting to the login endpoint and a test for it",
                "brain": "", "heuristic": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let plan = &answer["data"]["plan"];
    assert_eq!(plan["source"], "heuristic");
    assert!(
        answer["data"]["html"]
            .as_str()
            .unwrap()
            .contains("todo-graph")
    );
    let (status, answer) = f
        .post(
            "/api/routing/preview",
            json!({"task": "  ", "heuristic": true}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "task");

    let (status, answer) = f
        .post(
            "/api/permissions/check",
            json!({"tool": "exec_command", "command": "git push --force origin main"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        answer["data"]["explanation"]["evaluation"]["decision"], "deny",
        "{answer}"
    );
    assert!(answer["data"]["html"].as_str().unwrap().contains("denied"));
}

#[tokio::test]
async fn a_model_is_tested_and_an_endpoint_discovered_over_real_http() {
    use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, scripted_model_entry};
    let server = ScriptedServer::start(
        Script::new().always(Matcher::model("qwen-coder"), Reply::text("pong")),
    )
    .await;
    let f = fixture().await;
    let entry = scripted_model_entry("lab/qwen-coder", &server.url());
    std::fs::write(
        f.home.join("models.json"),
        serde_json::to_string(&json!({"models": [entry]})).unwrap(),
    )
    .unwrap();
    let (status, answer) = f
        .post("/api/models/test", json!({"id": "lab/qwen-coder"}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["data"]["ok"], true, "{answer}");
    assert!(answer["data"]["html"].as_str().unwrap().contains("pong"));
    // A model without a key fails with the reason, not an error page.
    let (_, answer) = f
        .post("/api/models/test", json!({"id": "openai/gpt-5.5"}))
        .await;
    assert_eq!(answer["data"]["ok"], false, "{answer}");
    assert!(answer["data"]["html"].as_str().unwrap().contains("API key"));

    let (status, answer) = f
        .post(
            "/api/models/discover",
            json!({"baseUrl": server.url(), "api": "openai-completions", "provider": "lab"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["data"]["count"], 2);
    let html = answer["data"]["html"].as_str().unwrap();
    assert!(html.contains("lab/qwen-coder"), "{html}");
    // An endpoint that is not there: the error is at the base URL field.
    let (status, answer) = f
        .post(
            "/api/models/discover",
            json!({"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "baseUrl", "{answer}");
}

#[tokio::test]
async fn a_port_in_use_is_an_error_that_says_which_and_what_to_do() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let err = start(ServeOptions {
        home: Home::at(dir.path()),
        project_root: dir.path().to_path_buf(),
        port,
        token: None,
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
    assert!(err.contains("--port"), "{err}");
}

#[tokio::test]
async fn an_unknown_session_or_brain_is_a_not_found_page() {
    let f = fixture().await;
    for path in [
        "/sessions/no-such-session",
        "/api/sessions/no-such-session/events",
        "/brains/no-such-brain",
    ] {
        let (status, body) = f.page(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(
            body.contains("no-such") || body.contains("No such"),
            "{path}: {body}"
        );
    }
}
