//! The control panel in a real headless Chromium, driven over WebDriver: `braincode config`
//! prints its address, the browser opens it, sees every page, adds a model, breaks a brain and
//! sees the error at the field, and watches a running session update live; then every table
//! page at 1400 and 1024 px, in English and in Chinese, must keep its words whole. The
//! language switch, a settings edit and a role-prompt preview and save are in `edits`.
//! Screenshots are saved under
//! `target/tmp/web-panel/`.
//!
//! Needs `chromium` and `chromedriver` (Debian: chromium, chromium-driver; `.ci/run` installs
//! them and sets BRAINCODE_REQUIRE_BROWSER=1, which turns their absence into a failure).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

mod edits;
mod layout;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::run_harness::{command, configure_one_model, repo};
use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

const WAIT: Duration = Duration::from_secs(20);

fn tool(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    })
}

/// Chromium and its driver, or `None` (the test is skipped) when they are not installed
/// and not required.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = tool("chromium").or_else(|| tool("chromium-browser"));
    let driver = tool("chromedriver");
    match (chromium, driver) {
        (Some(chromium), Some(driver)) => Some((chromium, driver)),
        _ => {
            assert!(
                std::env::var_os("BRAINCODE_REQUIRE_BROWSER").is_none(),
                "chromium and chromedriver are required (apt-get install chromium chromium-driver)"
            );
            eprintln!("skipped: chromium or chromedriver is not installed");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start_driver(driver: &Path) -> (Child, u16) {
    let port = free_port();
    let child = tokio::process::Command::new(driver)
        .arg(format!("--port={port}"))
        .arg("--allowed-ips=127.0.0.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (child, port);
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "chromedriver did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn open_browser(chromium: &Path, driver_port: u16, profile: &Path) -> Client {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run", "--disable-quic", "--window-size=1280,900",
                format!("--user-data-dir={}", profile.display())],
        }),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{driver_port}"))
        .await
        .unwrap()
}

/// `braincode config --no-open`: the process and the address it printed.
async fn start_panel(home: &TempHome, project: &Path) -> (Child, String) {
    let mut child = command(home, project, &["config", "--no-open"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("the panel printed nothing")
        .unwrap()
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|word| word.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, url)
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-panel");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.unwrap();
    std::fs::write(artifacts().join(format!("{name}.png")), png).unwrap();
}

async fn wait_for(client: &Client, css: &str) -> fantoccini::elements::Element {
    client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::Css(css))
        .await
        .unwrap_or_else(|err| panic!("{css} did not appear: {err}"))
}

async fn fill(client: &Client, form: &str, name: &str, value: &str) {
    let input = client
        .find(Locator::Css(&format!("{form} [name=\"{name}\"]")))
        .await
        .unwrap();
    input.clear().await.unwrap();
    input.send_keys(value).await.unwrap();
}

async fn submit(client: &Client, form: &str) {
    client
        .find(Locator::Css(&format!("{form} button[type=submit]")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// Every table page at a wide and a narrow window: no word of a cell is broken across
/// lines, the main column uses the window's width, and nothing scrolls sideways; a
/// screenshot of each.
async fn check_layout(client: &Client, base: &str, session: &str) {
    let mut problems = Vec::new();
    for (width, lang) in [(1400u32, "en"), (1024, "en"), (1400, "zh"), (1024, "zh")] {
        client.set_window_size(width, 900).await.unwrap();
        for (path, name) in [
            ("/settings".to_string(), "settings"),
            ("/models".to_string(), "models"),
            ("/brains".to_string(), "brains"),
            ("/brains/test".to_string(), "brain-test"),
            ("/routing".to_string(), "routing"),
            ("/routing?brain=test".to_string(), "role-prompts"),
            ("/tools".to_string(), "tools"),
            ("/permissions".to_string(), "permissions"),
            ("/mcp".to_string(), "mcp"),
            ("/sessions".to_string(), "sessions"),
            (format!("/sessions/{session}"), "session"),
            ("/usage".to_string(), "usage"),
        ] {
            let join = if path.contains('?') { '&' } else { '?' };
            client
                .goto(&format!("{base}{path}{join}lang={lang}"))
                .await
                .unwrap();
            wait_for(client, "main h1").await;
            if name == "role-prompts" {
                // The edited prompt's card open, with its text.
                client
                    .execute(
                        "document.querySelector('details[data-role=\"backend\"]').open = true",
                        vec![],
                    )
                    .await
                    .unwrap();
            }
            if name == "routing" {
                fill(
                    client,
                    "#routing-form",
                    "task",
                    "Add rate limiting to the login endpoint and a test for it",
                )
                .await;
                submit(client, "#routing-form").await;
                wait_for(client, "#workers tbody tr").await;
            }
            for word in layout::broken_words(client).await {
                problems.push(format!("{path} ({lang}) at {width} px: {word}"));
            }
            let share = layout::main_width_share(client).await;
            if share < 0.95 {
                problems.push(format!(
                    "{path} ({lang}) at {width} px: the page uses {:.0} % of the width",
                    share * 100.0
                ));
            }
            if layout::overflows_sideways(client).await {
                problems.push(format!(
                    "{path} ({lang}) at {width} px: the page scrolls sideways"
                ));
            }
            screenshot(client, &format!("layout-{name}-{width}-{lang}")).await;
        }
    }
    client
        .goto(&format!("{base}/models?lang=en"))
        .await
        .unwrap();
    client.set_window_size(1280, 900).await.unwrap();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

async fn row_count(client: &Client) -> usize {
    client
        .find_all(Locator::Css("#records tbody tr"))
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_panel_in_a_real_browser() {
    let Some((chromium, driver)) = browser() else {
        return;
    };
    // Every call of the scripted model takes a moment, so a run is visibly in progress.
    let server = ScriptedServer::start(Script::new().always(
        Matcher::model("any"),
        Reply::text("hello from the scripted model").delayed(Duration::from_millis(1_500)),
    ))
    .await;
    let home = TempHome::new();
    configure_one_model(&home, &server);
    // models.json as a person writes it: one line, no display name. Adding a model through
    // the panel must leave this entry's bytes alone.
    let models_path = home.path().join("models.json");
    let mut written: Value =
        serde_json::from_str(&std::fs::read_to_string(&models_path).unwrap()).unwrap();
    written["models"][0].as_object_mut().unwrap().remove("name");
    let hand_entry = serde_json::to_string(&written["models"][0]).unwrap();
    std::fs::write(&models_path, serde_json::to_string(&written).unwrap()).unwrap();
    let repo = repo();
    let (mut panel, url) = start_panel(&home, repo.path()).await;
    let (mut driver_process, driver_port) = start_driver(&driver).await;
    let profile = tempfile::tempdir().unwrap();
    let client = open_browser(&chromium, driver_port, profile.path()).await;
    let base = url.split("/?").next().unwrap().to_string();

    // Without the token: refused.
    client.goto(&format!("{base}/models")).await.unwrap();
    let body = client.find(Locator::Css("body")).await.unwrap();
    assert!(body.text().await.unwrap().contains("Open the address"));

    // The printed address: in, and the token leaves the address bar.
    client.goto(&url).await.unwrap();
    wait_for(&client, "table#models").await;
    let current = client.current_url().await.unwrap();
    assert_eq!(current.path(), "/models");
    assert!(current.query().is_none(), "{current}");
    screenshot(&client, "models").await;

    // A model id with spaces and a base URL that is not one: refused at their fields, with
    // the reason, and nothing is written.
    let models_before = std::fs::read(&models_path).unwrap();
    fill(&client, "#add-model", "id", "bad id with spaces").await;
    fill(&client, "#add-model", "provider", "openrouter").await;
    fill(&client, "#add-model", "modelId", "qwen/qwen3-coder").await;
    fill(&client, "#add-model", "baseUrl", "not a url").await;
    submit(&client, "#add-model").await;
    let id_error = wait_for(&client, ".field-error[data-error-for=\"id\"]").await;
    assert!(
        id_error.text().await.unwrap().contains("no spaces"),
        "{}",
        id_error.text().await.unwrap()
    );
    let url_error = wait_for(&client, ".field-error[data-error-for=\"baseUrl\"]").await;
    assert!(
        url_error
            .text()
            .await
            .unwrap()
            .contains("not an http or https URL")
    );
    let status = wait_for(&client, "#add-model [data-status]").await;
    assert!(status.text().await.unwrap().contains("Nothing was saved"));
    screenshot(&client, "model-field-errors").await;
    assert_eq!(std::fs::read(&models_path).unwrap(), models_before);

    // Add a model through the form.
    fill(&client, "#add-model", "id", "openrouter/qwen3-coder").await;
    fill(&client, "#add-model", "provider", "openrouter").await;
    fill(&client, "#add-model", "modelId", "qwen/qwen3-coder").await;
    fill(
        &client,
        "#add-model",
        "baseUrl",
        "https://openrouter.ai/api/v1",
    )
    .await;
    fill(&client, "#add-model", "contextWindow", "262144").await;
    fill(&client, "#add-model", "pricing.input", "0.4").await;
    fill(&client, "#add-model", "pricing.output", "1.6").await;
    client
        .find(Locator::Css("#add-model button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "tr[data-model=\"openrouter/qwen3-coder\"]").await;
    let models: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join("models.json")).unwrap())
            .unwrap();
    let added = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "openrouter/qwen3-coder")
        .expect("the model is in models.json");
    assert_eq!(added["pricing"]["output"], 1.6);
    let models_text = std::fs::read_to_string(&models_path).unwrap();
    assert!(
        models_text.contains(&hand_entry),
        "the model that was there changed: {models_text}"
    );
    screenshot(&client, "models-added").await;

    // Break a brain: the error shows at the field, and brains.json is untouched.
    let brains_before = std::fs::read(home.path().join("brains.json")).unwrap();
    client.goto(&format!("{base}/brains/test")).await.unwrap();
    wait_for(&client, "#brain-form").await;
    fill(
        &client,
        "#brain-form",
        "roles.backend.modelId",
        "no/such-model",
    )
    .await;
    client
        .find(Locator::Css("#brain-form button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let error = wait_for(
        &client,
        ".field-error[data-error-for=\"roles.backend.modelId\"]",
    )
    .await;
    assert!(error.text().await.unwrap().contains("no/such-model"));
    let input = client
        .find(Locator::Css("[name=\"roles.backend.modelId\"]"))
        .await
        .unwrap();
    assert_eq!(
        input.attr("aria-invalid").await.unwrap().as_deref(),
        Some("true")
    );
    screenshot(&client, "brain-field-error").await;
    assert_eq!(
        std::fs::read(home.path().join("brains.json")).unwrap(),
        brains_before
    );

    // A token budget the panel cannot read is refused at the field (it used to be saved as
    // "no limit"); 1.5m is read as 1 500 000.
    client.goto(&format!("{base}/brains/test")).await.unwrap();
    wait_for(&client, "#brain-form").await;
    fill(&client, "#brain-form", "budget.maxTokens", "abc").await;
    submit(&client, "#brain-form").await;
    let error = wait_for(&client, ".field-error[data-error-for=\"budget.maxTokens\"]").await;
    assert!(error.text().await.unwrap().contains("50k"));
    screenshot(&client, "budget-field-error").await;
    assert_eq!(
        std::fs::read(home.path().join("brains.json")).unwrap(),
        brains_before
    );
    fill(&client, "#brain-form", "budget.maxTokens", "1.5m").await;
    submit(&client, "#brain-form").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let brains: Value = serde_json::from_str(
            &std::fs::read_to_string(home.path().join("brains.json")).unwrap(),
        )
        .unwrap();
        let test = brains["brains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == "test")
            .unwrap()
            .clone();
        if test["budget"]["maxTokens"] == 1_500_000 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "1.5m was not saved: {test}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    edits::settings_flow(&client, &base, home.path()).await;
    edits::language_switch(&client, &base).await;
    edits::role_prompt_flow(&client, &base, home.path()).await;

    // Routing preview draws the plan.
    client.goto(&format!("{base}/routing")).await.unwrap();
    fill(
        &client,
        "#routing-form",
        "task",
        "Add rate limiting to the login endpoint and a test for it",
    )
    .await;
    client
        .find(Locator::Css("#routing-form button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_for(&client, "#todo-graph g.node").await;
    screenshot(&client, "routing").await;

    // The permission explanation follows the typing.
    client.goto(&format!("{base}/permissions")).await.unwrap();
    fill(
        &client,
        "#permission-check",
        "command",
        "git push --force origin main",
    )
    .await;
    wait_for(&client, "[data-verdict=\"denied\"]").await;
    screenshot(&client, "permissions").await;

    for (path, name) in [("/mcp", "mcp"), ("/usage", "usage-empty")] {
        client.goto(&format!("{base}{path}")).await.unwrap();
        wait_for(&client, "main h1").await;
        screenshot(&client, name).await;
    }

    // A run in another process, watched live.
    let mut run = command(
        &home,
        repo.path(),
        &[
            "run",
            "--heuristic",
            "--json",
            "Add rate limiting to valid() in the login code and a test for it",
        ],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let sessions = home.path().join("sessions");
    let deadline = tokio::time::Instant::now() + WAIT;
    let session = loop {
        let found = std::fs::read_dir(&sessions).ok().and_then(|entries| {
            entries
                .filter_map(Result::ok)
                .find(|e| e.path().extension().is_some_and(|x| x == "jsonl"))
                .and_then(|e| {
                    e.path()
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                })
        });
        if let Some(session) = found {
            break session;
        }
        assert!(tokio::time::Instant::now() < deadline, "no session started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    client
        .goto(&format!("{base}/sessions/{session}"))
        .await
        .unwrap();
    let status = wait_for(&client, "#live-status").await;
    let first_text = status.text().await.unwrap();
    let first_rows = row_count(&client).await;
    screenshot(&client, "session-live").await;
    client
        .wait()
        .at_most(Duration::from_secs(60))
        .for_element(Locator::Css("#live-status.completed"))
        .await
        .unwrap_or_else(|err| panic!("the live view never saw the run end: {err}"));
    let last_rows = row_count(&client).await;
    assert!(
        first_text.contains("running"),
        "the run was already over when the page opened ({first_text}); the live path was not seen"
    );
    assert!(
        last_rows > first_rows,
        "no record arrived live ({first_rows} → {last_rows})"
    );
    // The rows that arrived are the journal's records, not a reload: the page still shows
    // the first ones too.
    let types: Vec<String> = {
        let mut types = Vec::new();
        for row in client
            .find_all(Locator::Css("#records tbody tr"))
            .await
            .unwrap()
        {
            types.push(row.attr("data-type").await.unwrap().unwrap_or_default());
        }
        types
    };
    assert_eq!(types.first().map(String::as_str), Some("run_start"));
    assert!(types.iter().any(|t| t == "run_end"), "{types:?}");
    // The worker timeline was redrawn as workers started and ended: one bar per worker.
    let bars = client
        .find_all(Locator::Css("#worker-timeline rect.bar"))
        .await
        .unwrap()
        .len();
    let workers = types.iter().filter(|t| *t == "worker_start").count();
    assert!(
        workers >= 2 && bars == workers,
        "{bars} bars for {workers} workers"
    );
    screenshot(&client, "session-finished").await;
    client
        .execute("window.scrollTo(0, 0)", vec![])
        .await
        .unwrap();
    screenshot(&client, "session-timeline").await;
    // The scripted review does not approve, so the run may end asking for changes; it ends.
    let status = run.wait().await.unwrap();
    assert!(status.code().is_some(), "the run died: {status}");

    // Sessions and usage now show the run.
    client
        .goto(&format!("{base}/sessions?q=rate%20limiting"))
        .await
        .unwrap();
    wait_for(&client, "#search-results .hit").await;
    screenshot(&client, "sessions-search").await;
    client.goto(&format!("{base}/usage?by=role")).await.unwrap();
    wait_for(&client, "#usage-chart rect.bar").await;
    screenshot(&client, "usage").await;

    // A hook of the user's, so the hooks table is drawn (and checked) with a row.
    std::fs::write(
        home.path().join("hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"matcher": "exec_command|shell", "hooks": [{"type": "command", "command": "./scripts/guard-commands.sh --strict", "timeout": 30, "trusted": true}]}]}}"#,
    )
    .unwrap();
    check_layout(&client, &base, &session).await;

    client.close().await.unwrap();
    driver_process.kill().await.ok();
    panel.kill().await.ok();
}
