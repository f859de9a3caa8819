//! What the binary's end-to-end tests share: a one-model home, running the binary, and what
//! reached the scripted model.
#![allow(dead_code)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry,
};
use serde_json::json;
use tokio::process::Command;

/// A home whose `test` brain sends every role to one scripted model.
pub fn configure(home: &TempHome, server: &ScriptedServer) {
    home.write_models(&[scripted_model_entry("test/any", &server.base_url())]);
    let mut roles = serde_json::Map::new();
    for role in [
        "frontend",
        "backend",
        "designer",
        "dba",
        "devops",
        "security",
        "qa",
        "summarize",
        "oracle",
        "librarian",
        "rush",
        "review",
        "routeBrain",
        "pet",
        "imageMaker",
    ] {
        roles.insert(
            role.into(),
            json!({"modelId": "test/any", "fallbackModelIds": []}),
        );
    }
    home.write_brains(&json!({"brains": [{
        "id": "test", "extends": "brain", "name": "Test brain",
        "planner": {"modelId": "test/any", "fallbackModelIds": []},
        "roles": roles,
    }]}));
    home.write_settings(&json!({"version": 1, "mode": "auto", "defaultBrainId": "test"}));
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub async fn braincode(home: &TempHome, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_braincode"));
    command
        .args(args)
        .current_dir(cwd)
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("braincode finished")
        .unwrap();
    Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub async fn hello_server() -> ScriptedServer {
    ScriptedServer::start(Script::new().always(Matcher::model("any"), Reply::text("hello!"))).await
}

pub fn all_requests_text(server: &ScriptedServer) -> String {
    server
        .chat_requests()
        .iter()
        .map(braincode_test_support::RecordedRequest::all_text)
        .collect::<Vec<_>>()
        .join("\n")
}
