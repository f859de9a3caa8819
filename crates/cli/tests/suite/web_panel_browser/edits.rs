//! The editors added to the panel, in the browser: the EN/中文 switch (kept across pages,
//! error messages included), a settings edit refused at its field then saved, and a role
//! prompt previewed as a diff then saved.

use std::path::Path;
use std::time::Duration;

use fantoccini::{Client, Locator};
use serde_json::Value;

use super::{WAIT, fill, screenshot, submit, wait_for};

async fn text(client: &Client, css: &str) -> String {
    wait_for(client, css).await.text().await.unwrap()
}

async fn click(client: &Client, css: &str) {
    wait_for(client, css).await.click().await.unwrap();
}

/// Waits until `read` of the file at `path` says yes.
async fn until_file(path: &Path, what: &str, ok: impl Fn(&str) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if ok(&text) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Settings: a port that is not one is refused at its field and nothing is written; a good
/// one is written into settings.json.
pub async fn settings_flow(client: &Client, base: &str, home: &Path) {
    let path = home.join("settings.json");
    let before = std::fs::read(&path).ok();
    client.goto(&format!("{base}/settings")).await.unwrap();
    wait_for(client, "#settings-form").await;
    assert!(text(client, "#next-start").await.contains("next start"));
    fill(client, "#settings-form", "configServer.port", "80000").await;
    submit(client, "#settings-form").await;
    let error = text(client, ".field-error[data-error-for=\"configServer.port\"]").await;
    assert!(error.contains("not a port"), "{error}");
    screenshot(client, "settings-field-error").await;
    assert_eq!(
        std::fs::read(&path).ok(),
        before,
        "a refused port wrote nothing"
    );
    fill(client, "#settings-form", "configServer.port", "15123").await;
    submit(client, "#settings-form").await;
    until_file(&path, "the port was not saved", |text| {
        serde_json::from_str::<Value>(text).is_ok_and(|v| v["configServer"]["port"] == 15123)
    })
    .await;
}

/// The language switch: 中文 draws the page in Chinese, the next page too (and the errors
/// the script and the server give), and EN goes back.
pub async fn language_switch(client: &Client, base: &str) {
    client.goto(&format!("{base}/settings")).await.unwrap();
    click(client, ".lang a[data-lang=\"zh\"]").await;
    wait_for(client, "html[lang=\"zh\"]").await;
    assert_eq!(text(client, "nav a.active").await, "设置");
    screenshot(client, "settings-zh").await;
    // Another page, reached without ?lang=: still Chinese.
    client.goto(&format!("{base}/tools")).await.unwrap();
    wait_for(client, "html[lang=\"zh\"]").await;
    assert_eq!(text(client, "main h1").await, "工具");
    // A check of the script and one of the server, both in Chinese.
    client.goto(&format!("{base}/settings")).await.unwrap();
    wait_for(client, "#settings-form").await;
    fill(client, "#settings-form", "configServer.port", "abc").await;
    submit(client, "#settings-form").await;
    let error = text(client, ".field-error[data-error-for=\"configServer.port\"]").await;
    assert!(error.contains("不是正整数"), "{error}");
    fill(client, "#settings-form", "configServer.host", "0.0.0.0").await;
    fill(client, "#settings-form", "configServer.port", "15123").await;
    submit(client, "#settings-form").await;
    let error = text(client, ".field-error[data-error-for=\"configServer.host\"]").await;
    assert!(error.contains("不是本机"), "{error}");
    assert!(
        text(client, "#settings-form [data-status]")
            .await
            .contains("未保存")
    );
    screenshot(client, "settings-zh-error").await;
    click(client, ".lang a[data-lang=\"en\"]").await;
    wait_for(client, "html[lang=\"en\"]").await;
    assert_eq!(text(client, "nav a.active").await, "Settings");
}

/// A role prompt: edited, previewed as a diff (nothing written yet), then saved.
pub async fn role_prompt_flow(client: &Client, base: &str, home: &Path) {
    let path = home.join("brains.json");
    let before = std::fs::read(&path).unwrap();
    client
        .goto(&format!("{base}/routing?brain=test"))
        .await
        .unwrap();
    click(client, "details[data-role=\"backend\"] > summary").await;
    let form = "details[data-role=\"backend\"] form";
    let area = wait_for(client, &format!("{form} textarea")).await;
    area.clear().await.unwrap();
    area.send_keys("You write careful Rust.\nEvery change has a test.")
        .await
        .unwrap();
    client
        .find(Locator::Css(&format!("{form} button[type=submit]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let added = text(client, "#preview-backend pre.diff ins").await;
    assert!(added.contains("You write careful Rust."), "{added}");
    client
        .execute(
            "document.getElementById('preview-backend').scrollIntoView({block: 'center'})",
            vec![],
        )
        .await
        .unwrap();
    screenshot(client, "role-prompt-diff").await;
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a preview writes nothing"
    );
    click(client, "#preview-backend button[data-action]").await;
    until_file(&path, "the prompt was not saved", |text| {
        text.contains("You write careful Rust.\\nEvery change has a test.")
    })
    .await;
    client
        .goto(&format!("{base}/routing?brain=test"))
        .await
        .unwrap();
    let badge = text(client, "details[data-role=\"backend\"] .tag").await;
    assert_eq!(badge, "custom");
}
