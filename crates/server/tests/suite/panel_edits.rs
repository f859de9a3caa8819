//! The panel's in-place editors (settings, tools, Tavily, hooks, role prompts): a save
//! writes exactly the bytes it means to (the rest of the file is kept as its author wrote
//! it), bad input is a 400 naming its field with the file byte-identical, and a request
//! without the token or from another site changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use crate::common::{Fixture, fixture, form_version, plain_client};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The version of the form `id` on `page` (a page may carry several forms).
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
    assert_eq!(answer["ok"], false, "{answer}");
    assert_eq!(answer["field"], field, "{body}: {answer}");
    assert!(!answer["error"].as_str().unwrap().is_empty());
    assert_eq!(
        std::fs::read(path).ok(),
        before,
        "{body} changed {}",
        path.display()
    );
}

const SETTINGS: &str = "{\n    \"version\": 1,\n    \"theme\": \"dark\",\n    \"configServer\": {\"port\": 14580},\n    \"features\": {\n        \"hooks\": true\n    }\n}\n";

#[tokio::test]
async fn settings_change_only_the_values_that_changed() {
    let f = fixture().await;
    let path = f.home.join("settings.json");
    std::fs::write(&path, SETTINGS).unwrap();
    let (_, page) = f.page("/settings").await;
    assert!(page.contains("next start"), "the host/port note is shown");
    let v = form_version(&page);
    let (status, answer) = f
        .post(
            "/api/settings",
            json!({"version": v, "configServer": {"host": "127.0.0.1", "port": 15000},
                "mode": "radical", "features": {"hooks": false, "dynamicDispatch": true},
                "context": {"compactAtPercent": "80", "handoffSummarizer": "heuristic"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    // Unchanged values (host, dynamicDispatch, the context) are not written at all.
    assert_eq!(
        read(&path),
        "{\n    \"version\": 1,\n    \"theme\": \"dark\",\n    \"configServer\": {\"port\": 15000},\n    \"features\": {\n        \"hooks\": false\n    },\n    \"mode\": \"radical\"\n}\n"
    );
    let settings = braincode_config::load_settings(&braincode_config::Home::at(&f.home)).unwrap();
    assert_eq!(settings.config_server.port, 15000);
    assert!(!settings.features.hooks);

    let v = version(&f, "/settings").await;
    for (body, field) in [
        (
            json!({"version": v, "configServer": {"port": "abc"}}),
            "configServer.port",
        ),
        (
            json!({"version": v, "configServer": {"port": 70000}}),
            "configServer.port",
        ),
        (
            json!({"version": v, "configServer": {"host": "0.0.0.0"}}),
            "configServer.host",
        ),
        (
            json!({"version": v, "configServer": {"host": "example.com"}}),
            "configServer.host",
        ),
        (json!({"version": v, "mode": "wild"}), "mode"),
        (
            json!({"version": v, "defaultBrainId": "nope"}),
            "defaultBrainId",
        ),
        (
            json!({"version": v, "context": {"compactAtPercent": 10}}),
            "context.compactAtPercent",
        ),
        (
            json!({"version": v, "features": {"hooks": "maybe"}}),
            "features.hooks",
        ),
        // A good field before a bad one is not written either.
        (
            json!({"version": v, "mode": "auto", "configServer": {"port": 0}}),
            "configServer.port",
        ),
    ] {
        refused_at(&f, "/api/settings", body, field, &path).await;
    }
    // A stale version is a conflict, and nothing is written.
    let (status, _) = f
        .post(
            "/api/settings",
            json!({"version": "0000000000000000", "mode": "auto"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn settings_are_created_when_there_is_no_file() {
    let f = fixture().await;
    let path = f.home.join("settings.json");
    let (status, answer) = f
        .post(
            "/api/settings",
            json!({"version": "absent", "mode": "radical"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        read(&path),
        "{\n  \"version\": 1,\n  \"mode\": \"radical\"\n}\n"
    );
}

const TOOLS: &str = "{\n  \"tools\": [\n    { \"name\": \"read_file\", \"enabled\": true },\n    { \"name\": \"exec_command\", \"approvalPolicy\": \"confirm-dangerous\" }\n  ],\n  \"permissions\": {}\n}\n";

#[tokio::test]
async fn a_tool_switch_writes_its_entry_in_place() {
    let f = fixture().await;
    let path = f.home.join("tools.json");
    std::fs::write(&path, TOOLS).unwrap();
    let (_, page) = f.page("/tools").await;
    assert!(
        page.contains("data-tool=\"exec_command\""),
        "a card per tool"
    );
    let v = form_version(&page);
    let (status, answer) = f
        .post(
            "/api/tools/exec_command",
            json!({"version": v, "enabled": false, "approvalPolicy": "allow"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        read(&path),
        TOOLS.replace(
            "{ \"name\": \"exec_command\", \"approvalPolicy\": \"confirm-dangerous\" }",
            "{ \"name\": \"exec_command\", \"approvalPolicy\": \"allow\", \"enabled\": false }"
        )
    );
    // A tool the file does not list gets an entry naming only what differs.
    let v = version(&f, "/tools").await;
    let (status, answer) = f
        .post(
            "/api/tools/git_diff",
            json!({"version": v, "enabled": false, "approvalPolicy": "allow"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let tools = braincode_runtime::read_tools_file(&braincode_config::Home::at(&f.home))
        .unwrap()
        .unwrap();
    assert!(!tools.is_enabled("git_diff"));
    assert!(!tools.is_enabled("exec_command"));
    assert!(tools.is_enabled("read_file"));
    assert!(read(&path).ends_with("},\n    {\n      \"name\": \"git_diff\",\n      \"enabled\": false\n    }\n  ],\n  \"permissions\": {}\n}\n"), "{}", read(&path));

    let v = version(&f, "/tools").await;
    refused_at(
        &f,
        "/api/tools/read_file",
        json!({"version": v, "approvalPolicy": "sometimes"}),
        "approvalPolicy",
        &path,
    )
    .await;
    refused_at(
        &f,
        "/api/tools/read_file",
        json!({"version": v, "enabled": "yes"}),
        "enabled",
        &path,
    )
    .await;
    let before = read(&path);
    let (status, _) = f
        .post(
            "/api/tools/no_such_tool",
            json!({"version": v, "enabled": false}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(read(&path), before);
}

#[tokio::test]
async fn tavily_setup_stores_the_key_apart_and_never_shows_it() {
    let f = fixture().await;
    let key = "tvly-SECRET-0123456789abcdef";
    let auth = f.home.join("auth.json");
    let mcp = f.home.join("mcp.json");
    refused_at(&f, "/api/tools/tavily", json!({"key": "  "}), "key", &auth).await;
    assert!(!mcp.exists(), "an empty key writes nothing");
    let (status, answer) = f.post("/api/tools/tavily", json!({"key": key})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(!answer.to_string().contains(key), "{answer}");
    let stored = braincode_config::AuthStore::new(&braincode_config::Home::at(&f.home))
        .api_key("tavily")
        .unwrap()
        .unwrap();
    assert_eq!(stored.expose(), key);
    let servers: Value = serde_json::from_str(&read(&mcp)).unwrap();
    assert_eq!(
        servers["mcpServers"]["tavily"]["env"]["TAVILY_API_KEY"],
        "${BRAINCODE_AUTH:tavily}"
    );
    assert!(!read(&mcp).contains(key));
    let (_, page) = f.page("/tools").await;
    assert!(!page.contains(key));
    assert!(page.contains("a key is saved"), "{page}");
    // Again without "replace": refused at that box, nothing changed.
    refused_at(
        &f,
        "/api/tools/tavily",
        json!({"key": "tvly-other"}),
        "replace",
        &auth,
    )
    .await;
    let (status, _) = f
        .post(
            "/api/tools/tavily",
            json!({"key": "tvly-other", "replace": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
}

const HOOKS: &str = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          { \"type\": \"command\", \"command\": \"echo done\", \"trusted\": true }\n        ]\n      }\n    ]\n  },\n  \"note\": \"kept\"\n}\n";

#[tokio::test]
async fn hooks_are_added_switched_edited_and_removed_in_place() {
    let f = fixture().await;
    let path = f.home.join("hooks.json");
    std::fs::write(&path, HOOKS).unwrap();
    let at = |v: &str, extra: Value| {
        let mut body =
            json!({"version": v, "scope": "user", "event": "Stop", "group": 0, "index": 0});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let v = version(&f, "/mcp").await;
    let (status, answer) = f
        .post(
            "/api/hooks",
            at(&v, json!({"action": "toggle", "enabled": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        read(&path),
        HOOKS.replace(
            "\"trusted\": true }",
            "\"trusted\": true, \"enabled\": false }"
        )
    );
    let (_, page) = f.page("/mcp").await;
    assert!(page.contains("disabled"), "{page}");

    let v = version(&f, "/mcp").await;
    let (status, answer) = f
        .post(
            "/api/hooks",
            at(&v, json!({"action": "toggle", "enabled": true})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(read(&path), HOOKS, "switching on again removes the flag");

    let v = version(&f, "/mcp").await;
    let (status, answer) = f
        .post(
            "/api/hooks",
            at(
                &v,
                json!({"action": "edit", "command": "echo bye", "timeout": "30", "matcher": ""}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        read(&path),
        HOOKS.replace(
            "\"echo done\", \"trusted\": true }",
            "\"echo bye\", \"trusted\": true, \"timeout\": 30 }"
        )
    );

    let v = version(&f, "/mcp").await;
    let (status, answer) = f
        .post(
            "/api/hooks",
            json!({"version": v, "scope": "user", "action": "add", "event": "PreToolUse",
            "matcher": "exec_command", "command": "./check.sh", "timeout": 10, "trusted": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let home = braincode_config::Home::at(&f.home);
    let file = braincode_config::read_hooks_file(&home.hooks_path(), braincode_config::Scope::User)
        .unwrap()
        .unwrap();
    let pre = &file.file.hooks.events["PreToolUse"][0];
    assert_eq!(pre.matcher.as_deref(), Some("exec_command"));
    assert_eq!(pre.hooks[0].command.as_deref(), Some("./check.sh"));
    assert_eq!(pre.hooks[0].timeout, Some(10));
    assert!(pre.hooks[0].trusted && pre.hooks[0].enabled);
    assert!(read(&path).contains("\"note\": \"kept\""));

    let v = version(&f, "/mcp").await;
    for (body, field) in [
        (
            json!({"version": v, "scope": "user", "action": "add", "event": "OnLunch", "command": "x"}),
            "event",
        ),
        (
            json!({"version": v, "scope": "user", "action": "add", "event": "Stop", "command": "  "}),
            "command",
        ),
        (
            json!({"version": v, "scope": "user", "action": "add", "event": "Stop", "command": "x", "timeout": 0}),
            "timeout",
        ),
        (
            json!({"version": v, "scope": "user", "action": "add", "event": "Stop", "command": "x", "timeout": 99999}),
            "timeout",
        ),
        (
            json!({"version": v, "scope": "user", "action": "add", "event": "Stop", "command": "x", "matcher": "(unclosed"}),
            "matcher",
        ),
        (
            json!({"version": v, "scope": "elsewhere", "action": "add", "event": "Stop", "command": "x"}),
            "scope",
        ),
        (at(&v, json!({"action": "edit", "command": ""})), "command"),
    ] {
        refused_at(&f, "/api/hooks", body, field, &path).await;
    }

    let v = version(&f, "/mcp").await;
    let (status, answer) = f
        .post("/api/hooks", at(&v, json!({"action": "remove"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let value: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(value["hooks"]["Stop"], json!([]));
    assert_eq!(
        value["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "./check.sh"
    );
}

#[tokio::test]
async fn an_untrusted_projects_hooks_are_shown_but_not_edited() {
    let f = fixture().await;
    let project = f.project.clone();
    let path = project.join(".agents/hooks.json");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, HOOKS).unwrap();
    let (_, page) = f.page("/mcp").await;
    assert!(page.contains("echo done"), "the project's hook is listed");
    let v = "any: the refusal comes first";
    refused_at(
        &f,
        "/api/hooks",
        json!({"version": v, "scope": "project", "action": "toggle", "event": "Stop", "group": 0, "index": 0, "enabled": false}),
        "scope",
        &path,
    )
    .await;
}

#[tokio::test]
async fn every_new_route_wants_the_token_and_our_origin() {
    let f = fixture().await;
    std::fs::write(f.home.join("settings.json"), SETTINGS).unwrap();
    std::fs::write(f.home.join("hooks.json"), HOOKS).unwrap();
    let files = [
        "settings.json",
        "hooks.json",
        "tools.json",
        "brains.json",
        "auth.json",
        "mcp.json",
    ];
    let snapshot = || files.map(|name| std::fs::read(f.home.join(name)).ok());
    let before = snapshot();
    let port = f.panel.addr.port();
    for (route, body) in [
        (
            "/api/settings",
            json!({"version": "absent", "mode": "radical"}),
        ),
        (
            "/api/tools/exec_command",
            json!({"version": "absent", "enabled": false}),
        ),
        ("/api/tools/tavily", json!({"key": "tvly-x"})),
        (
            "/api/hooks",
            json!({"version": "absent", "scope": "user", "action": "add", "event": "Stop", "command": "x"}),
        ),
        (
            "/api/role-prompts",
            json!({"version": "absent", "brain": "brain", "role": "backend", "prompt": "x"}),
        ),
        (
            "/api/role-prompts/preview",
            json!({"brain": "brain", "role": "backend", "prompt": "x"}),
        ),
    ] {
        let without_token = plain_client()
            .post(f.url(route))
            .header("Host", format!("127.0.0.1:{port}"));
        let from_another_site = f
            .client()
            .post(f.url(route))
            .header("Origin", "http://evil.example");
        let from_a_cross_site_form =
            (f.client().post(f.url(route))).header("Sec-Fetch-Site", "cross-site");
        for (request, expected, what) in [
            (without_token, StatusCode::UNAUTHORIZED, "without the token"),
            (
                from_another_site,
                StatusCode::FORBIDDEN,
                "from another site",
            ),
            (
                from_a_cross_site_form,
                StatusCode::FORBIDDEN,
                "from a cross-site form",
            ),
        ] {
            let response = request.json(&body).send().await.unwrap();
            assert_eq!(response.status(), expected, "{route} {what}");
        }
    }
    assert_eq!(snapshot(), before, "no refused request changed a file");
}
