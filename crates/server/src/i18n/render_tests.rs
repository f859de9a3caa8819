//! Every page of the panel, an error answer and a refusal, rendered in Chinese: no text a
//! person reads may be a catalogue entry left in English.

use braincode_config::{Home, JournalWriter};
use braincode_protocol::{Record, SessionId};
use serde_json::{Value, json};

use super::catalogue;
use crate::{ServeOptions, start};

fn decode(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// What a person reads on a page: its text nodes and the attributes a browser shows.
fn visible(html: &str) -> Vec<String> {
    let text = regex::Regex::new(r">([^<]+)<").unwrap();
    let attrs =
        regex::Regex::new(r#"(?:placeholder|title|aria-label|data-confirm)="([^"]*)""#).unwrap();
    text.captures_iter(html)
        .chain(attrs.captures_iter(html))
        .map(|c| decode(&c[1]).trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn has_chinese(text: &str) -> bool {
    text.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// The English entries a Chinese page must not show (those that differ in Chinese).
fn english_entries() -> Vec<&'static str> {
    catalogue()
        .into_iter()
        .filter(|(en, zh)| en != zh)
        .map(|(en, _)| en)
        .collect()
}

/// Names that are data (the built-in brains' display names), whatever they look like.
fn data_names() -> Vec<String> {
    braincode_brain::default_brains()
        .into_iter()
        .filter_map(|preset| preset.name)
        .collect()
}

fn untranslated(html: &str) -> Vec<String> {
    let english = english_entries();
    let data = data_names();
    let mut found = Vec::new();
    for shown in visible(html)
        .into_iter()
        .filter(|shown| !data.contains(shown))
    {
        for en in &english {
            // A whole text that is an English entry, or a long entry inside a text.
            if shown == *en || (en.len() >= 16 && !en.contains('{') && shown.contains(en)) {
                found.push(format!("{shown:?} (entry {en:?})"));
            }
        }
    }
    found
}

#[tokio::test]
async fn every_page_in_chinese_shows_no_english_catalogue_text() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(project.join(".agents")).unwrap();
    std::fs::write(
        home.join("hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "trusted": true}]}]}}"#,
    )
    .unwrap();
    std::fs::write(
        project.join(".agents/hooks.json"),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "make lint"}]}]}}"#,
    )
    .unwrap();
    let session = SessionId::new("20261101-000000-cccccc").unwrap();
    {
        let home = Home::at(&home);
        let mut writer = JournalWriter::open(&home, &session).unwrap();
        for record in [
            json!({"type": "run_start", "prompt": "hello", "runId": "r1"}),
            json!({"type": "token_usage", "role": "backend", "modelId": "local/smollm2",
                "usage": {"input": 10, "output": 5, "cacheRead": 5, "cacheWrite": 0}}),
            json!({"type": "run_end", "summary": "done", "status": "completed"}),
        ] {
            writer
                .append(&serde_json::from_value::<Record>(record).unwrap())
                .unwrap();
        }
    }
    let token = "a".repeat(64);
    let panel = start(ServeOptions {
        home: Home::at(&home),
        project_root: project.canonicalize().unwrap(),
        port: 0,
        token: Some(token.clone()),
    })
    .await
    .unwrap();
    let port = panel.addr.port();
    let client = reqwest::Client::new();
    let get = |path: String, cookie: String| {
        let client = client.clone();
        async move {
            let response = client
                .get(format!("http://127.0.0.1:{port}{path}"))
                .header("Cookie", cookie)
                .send()
                .await
                .unwrap();
            (response.status(), response.text().await.unwrap())
        }
    };
    let cookie = format!("braincode_panel_{port}={token}; braincode_lang=zh");
    let mut problems = Vec::new();
    for path in [
        "/settings",
        "/auth",
        "/models",
        "/brains",
        "/brains/brain",
        "/brains/nope",
        "/routing",
        "/routing?brain=brain",
        "/tools",
        "/permissions",
        "/mcp",
        "/sessions",
        "/sessions?q=hello",
        "/sessions/20261101-000000-cccccc",
        "/sessions/nope",
        "/usage",
        "/usage?by=model",
        "/nowhere",
    ] {
        let (_, html) = get(path.to_string(), cookie.clone()).await;
        assert!(html.contains("<html lang=\"zh\">"), "{path}");
        for problem in untranslated(&html) {
            problems.push(format!("{path}: {problem}"));
        }
    }
    assert!(
        problems.is_empty(),
        "untranslated:\n{}",
        problems.join("\n")
    );

    // The language also comes from ?lang= and from Accept-Language.
    let (_, html) = get(
        "/models?lang=zh".into(),
        format!("braincode_panel_{port}={token}"),
    )
    .await;
    assert!(html.contains("<html lang=\"zh\">"));
    let response = client
        .get(format!("http://127.0.0.1:{port}/models"))
        .header("Cookie", format!("braincode_panel_{port}={token}"))
        .header("Accept-Language", "zh-CN,zh;q=0.9,en;q=0.8")
        .send()
        .await
        .unwrap();
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("<html lang=\"zh\">")
    );

    // The refusal page (no token) and the error answers speak it too.
    let (status, html) = get("/models".into(), "braincode_lang=zh".into()).await;
    assert_eq!(status, reqwest::StatusCode::UNAUTHORIZED);
    assert!(
        untranslated(&html).is_empty() && has_chinese(&html),
        "{html}"
    );
    for (route, body) in [
        (
            "/api/settings",
            json!({"version": "absent", "configServer": {"port": "abc"}}),
        ),
        (
            "/api/hooks",
            json!({"version": "absent", "scope": "user", "action": "add", "event": "Lunch", "command": "x"}),
        ),
        (
            "/api/brains/brain",
            json!({"version": "absent", "budget": {"maxTokens": "abc"}}),
        ),
        (
            "/api/models",
            json!({"version": "absent", "id": "bad id", "provider": "p", "modelId": "m", "contextWindow": 1}),
        ),
        (
            "/api/role-prompts",
            json!({"version": "absent", "brain": "brain", "role": "backend", "prompt": "x".repeat(20_001)}),
        ),
    ] {
        let answer: Value = client
            .post(format!("http://127.0.0.1:{port}{route}"))
            .header("Cookie", cookie.clone())
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let error = answer["error"].as_str().unwrap();
        assert!(has_chinese(error), "{route}: {error}");
    }
    panel.shutdown().await.unwrap();
}
