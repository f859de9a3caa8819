//! End-to-end tests of `braincode models list|test|discover` against a scripted local server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::{Value, json};

const SECRET: &str = "sk-cli-test-secret-0042";

async fn braincode(home: &TempHome, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_braincode");
    let home_path = home.path().to_path_buf();
    let args: Vec<String> = args.iter().map(|s| (*s).to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(bin)
            .args(&args)
            .env("BRAINCODE_HOME", &home_path)
            .env("HOME", &home_path)
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ACME_API_KEY")
            .env_remove("BRAINCODE_LOG")
            .output()
            .expect("run braincode")
    })
    .await
    .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn all_output(output: &Output) -> String {
    format!(
        "{}{}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn home_with(server_base: &str) -> TempHome {
    let home = TempHome::new();
    let mut keyed = scripted_model_entry("acme/keyed", "https://api.acme.invalid/v1");
    keyed.provider = "acme".into();
    let mut keyless_remote =
        scripted_model_entry("other/needs-key", "https://api.other.invalid/v1");
    keyless_remote.provider = "other".into();
    let mut vision = scripted_model_entry("scripted/vision", server_base);
    vision.supports_vision = true;
    home.write_models(&[
        scripted_model_entry("scripted/main", server_base),
        keyed,
        keyless_remote,
        vision,
    ]);
    home.write_auth_keys(&[("acme", SECRET)]);
    home
}

#[tokio::test(flavor = "multi_thread")]
async fn list_marks_credentials_and_never_prints_keys() {
    let home = home_with("http://127.0.0.1:9/v1");
    let output = braincode(&home, &["models", "list", "--json"]).await;
    assert!(output.status.success(), "{}", all_output(&output));
    assert!(!all_output(&output).contains(SECRET));
    let listed: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let models = listed["models"].as_array().unwrap();
    let by_id = |id: &str| {
        models
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id} in {listed}"))
    };
    assert_eq!(
        by_id("scripted/main")["credential"],
        "not needed (local endpoint)"
    );
    assert_eq!(by_id("scripted/main")["usable"], true);
    assert_eq!(by_id("acme/keyed")["credential"], "auth.json");
    assert_eq!(by_id("other/needs-key")["credential"], "missing");
    assert_eq!(by_id("other/needs-key")["usable"], false);
    assert_eq!(by_id("scripted/vision")["supportsVision"], true);
    assert!(
        models
            .iter()
            .any(|m| m["local"] == true && m["credential"] == "embedded"),
        "the built-in embedded model is listed"
    );

    let text = braincode(&home, &["models", "list"]).await;
    assert!(text.status.success());
    let text_out = stdout(&text);
    assert!(text_out.contains("scripted/main") && text_out.contains("acme/keyed"));
    assert!(text_out.contains("have no API key"));
    assert!(!all_output(&text).contains(SECRET));
}

#[tokio::test(flavor = "multi_thread")]
async fn test_reports_the_reply() {
    let server = ScriptedServer::start(Script::new().when(
        Matcher::last_user_contains("Reply with exactly OK"),
        [Reply::text("OK")],
    ))
    .await;
    let home = home_with(&server.base_url());
    let output = braincode(&home, &["models", "test", "scripted/main"]).await;
    assert!(output.status.success(), "{}", all_output(&output));
    assert!(stdout(&output).contains("\"OK\""), "{}", stdout(&output));
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["max_tokens"], 16);
    assert!(
        requests[0].header("authorization").is_none(),
        "keyless local endpoint"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn test_failure_exits_1_with_kind_explanation_and_hint() {
    let server = ScriptedServer::start(Script::replies([
        Reply::http_error(401, r#"{"error":{"message":"Invalid API key"}}"#),
        Reply::text("OK"),
    ]))
    .await;
    let home = home_with(&server.base_url());
    let output = braincode(&home, &["models", "test", "scripted/main", "--json"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", all_output(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["ok"], false);
    assert_eq!(result["failure"]["kind"], "auth");
    assert!(
        result["failure"]["explanation"]
            .as_str()
            .unwrap()
            .contains("Invalid API key")
    );
    assert!(
        result["failure"]["hint"]
            .as_str()
            .unwrap()
            .contains("API key")
    );
    assert_eq!(
        server.chat_requests().len(),
        1,
        "the connection test never retries"
    );

    let server_error =
        ScriptedServer::start(Script::replies([Reply::http_error(500, "boom")])).await;
    let home = home_with(&server_error.base_url());
    let output = braincode(&home, &["models", "test", "scripted/main"]).await;
    assert_eq!(output.status.code(), Some(1));
    let out = stdout(&output);
    assert!(
        out.contains("FAIL") && out.contains("server") && out.contains("hint:"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn test_without_key_and_for_unknown_or_embedded_models() {
    let home = home_with("http://127.0.0.1:9/v1");
    let output = braincode(&home, &["models", "test", "other/needs-key", "--json"]).await;
    assert_eq!(output.status.code(), Some(1));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["failure"]["kind"], "missing_api_key");
    assert!(
        result["failure"]["explanation"]
            .as_str()
            .unwrap()
            .contains("OTHER_API_KEY")
    );

    let output = braincode(&home, &["models", "test", "nope/missing"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        all_output(&output).contains("scripted/main"),
        "{}",
        all_output(&output)
    );

    let listed: Value = serde_json::from_str(&stdout(
        &braincode(&home, &["models", "list", "--json"]).await,
    ))
    .unwrap();
    let local_id = listed["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["local"] == true)
        .map(|m| m["id"].as_str().unwrap().to_string())
        .unwrap();
    let output = braincode(&home, &["models", "test", &local_id]).await;
    assert!(output.status.success(), "{}", all_output(&output));
    let out = stdout(&output);
    assert!(
        out.contains("braincode bench local") && out.contains("braincode models pull"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_lists_models_and_suggests_entries() {
    let server =
        ScriptedServer::start(Script::new().when(Matcher::model("qwen-coder"), [Reply::text("x")]))
            .await;
    let home = TempHome::new();
    let output = braincode(
        &home,
        &[
            "models",
            "discover",
            &server.url(),
            "--provider",
            "lab",
            "--json",
        ],
    )
    .await;
    assert!(output.status.success(), "{}", all_output(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        result["models"],
        json!([{"id": "scripted", "contextWindow": 128000}, {"id": "qwen-coder", "contextWindow": 128000}])
    );
    assert_eq!(result["entries"][1]["id"], "lab/qwen-coder");
    assert_eq!(result["entries"][1]["api"], "openai-completions");
    let request = &server.requests()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("GET", "/v1/models")
    );

    let text = braincode(&home, &["models", "discover", &server.base_url()]).await;
    assert!(text.status.success());
    assert!(stdout(&text).contains("qwen-coder"));

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let bad = braincode(
        &home,
        &[
            "models",
            "discover",
            &format!("http://{closed}"),
            "--api",
            "anthropic-messages",
        ],
    )
    .await;
    assert_eq!(bad.status.code(), Some(1), "{}", all_output(&bad));
    assert!(
        stdout(&bad).contains("FAIL") && stdout(&bad).contains("network"),
        "{}",
        stdout(&bad)
    );

    let wrong_api = braincode(
        &home,
        &["models", "discover", &server.url(), "--api", "telepathy"],
    )
    .await;
    assert_eq!(wrong_api.status.code(), Some(1));
    assert!(all_output(&wrong_api).contains("unknown --api"));
}
