//! `braincode acp` driven by a client that is not ours: the official TypeScript SDK
//! (`@agentclientprotocol/sdk`, installed by `scripts/setup.sh --tests` into the shared npm
//! cache), running `acp_client/client.mjs` — initialize, a new session, a prompt whose model
//! edits a file the editor has an unsaved buffer of (allowed in the editor; read and written
//! through it) and runs a command (rejected), a slow prompt cancelled
//! while a second prompt is refused, bad input, the end of stdin, and the session loaded back
//! in a new process.
//!
//! `.ci/run` sets BRAINCODE_REQUIRE_ACP_CLIENT=1, which turns a missing SDK or node into a
//! failure; elsewhere the test says it is skipped.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::PathBuf;
use std::time::Duration;

use crate::run_harness::{self, configure, journal, review_reply};
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, router_decision_json,
};
use serde_json::{Value, json};

/// The SDK's directory in the shared npm cache, when it and node are installed.
fn sdk() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    let dir = cache.join("braincode/npm/node_modules/@agentclientprotocol/sdk");
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok();
    if dir.join("dist/v1/stable/acp.js").is_file() && node {
        return Some(dir);
    }
    assert!(
        std::env::var_os("BRAINCODE_REQUIRE_ACP_CLIENT").is_none(),
        "node and @agentclientprotocol/sdk are required (scripts/setup.sh --tests installs them)"
    );
    eprintln!("skipped: node or @agentclientprotocol/sdk is not installed");
    None
}

/// The router plans a backend primary, which answers with `steps` in turn (one per tool
/// result it has seen; the last step again after that). A prompt asking to wait is answered
/// only after a minute.
pub(super) async fn editor_model_with(steps: Vec<Reply>) -> ScriptedServer {
    ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[])),
            )
            .always(Matcher::model("review"), review_reply("approved"))
            .when_fn(Matcher::model("backend"), move |call| {
                if call.first_user_text().contains("please wait") {
                    return Reply::text("too late").delayed(Duration::from_secs(60));
                }
                let step = call.tool_results().len().min(steps.len() - 1);
                steps[step].clone()
            }),
    )
    .await
}

/// The primary edits `src/token.rs`, then runs a command, then answers.
async fn editor_model() -> ScriptedServer {
    editor_model_with(vec![
        Reply::tool_call(
            "edit_file",
            json!({"path": "src/token.rs", "oldString": "!token.is_empty()", "newString": "token.len() > 8"}),
        ),
        Reply::tool_call("shell", json!({"command": "touch ran-marker"})),
        Reply::text("Tokens now need 9 characters; the test command was not run."),
    ])
    .await
}

fn kinds(updates: &Value) -> Vec<String> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["update"]["sessionUpdate"].as_str().unwrap().to_string())
        .collect()
}

fn text_of(updates: &Value, kind: &str) -> String {
    updates
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["update"]["sessionUpdate"] == kind)
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_edits_approves_rejects_cancels_and_loads_back() {
    let Some(sdk) = sdk() else { return };
    let server = editor_model().await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = run_harness::repo();
    let output = tokio::process::Command::new("node")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/suite/acp_client/client.mjs"
        ))
        .env("ACP_SDK", &sdk)
        .env("BRAINCODE_BIN", env!("CARGO_BIN_EXE_braincode"))
        .env("ACP_CWD", repo.path())
        .env("BRAINCODE_HOME", home.path())
        .env("BRAINCODE_MODEL_CACHE", home.path().join("no-model-cache"))
        .env("BRAINCODE_LOCAL_SERVERS", "0")
        .current_dir(repo.path())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(240), output)
        .await
        .expect("the ACP client scenario did not finish in 240 s")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client failed: {stderr}");
    let result: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("client output is not JSON ({err}): {stderr}"));

    // Honest capabilities.
    let caps = &result["initialize"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(result["modes"]["currentModeId"], "ask");

    // The first prompt: the edit was allowed and made, the command rejected and never run.
    assert_eq!(result["first"]["stopReason"], "end_turn", "{result:#}");
    let permissions = result["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 2, "{result:#}");
    assert_eq!(permissions[0]["kind"], "edit");
    assert!(
        permissions[0]["content"]
            .as_array()
            .unwrap()
            .contains(&json!("diff"))
    );
    assert!(
        permissions[0]["diffPath"]
            .as_str()
            .unwrap()
            .ends_with("src/token.rs")
    );
    assert_eq!(
        permissions[0]["options"],
        json!(["allow_once", "allow_always", "reject_once"])
    );
    assert_eq!(permissions[1]["kind"], "execute");
    assert!(
        permissions[1]["title"]
            .as_str()
            .unwrap()
            .contains("touch ran-marker")
    );
    // The edit was made on the editor's buffer (its unsaved line kept) and written through
    // the editor.
    let writes = result["fsWrites"].as_array().unwrap();
    assert_eq!(writes.len(), 1, "{result:#}");
    assert!(
        writes[0]["path"]
            .as_str()
            .unwrap()
            .ends_with("src/token.rs")
    );
    let written = writes[0]["content"].as_str().unwrap();
    assert!(written.starts_with("// unsaved buffer line\n"), "{written}");
    assert!(written.contains("token.len() > 8"), "{written}");
    assert!(
        result["fsReads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().ends_with("src/token.rs"))
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join("src/token.rs")).unwrap(),
        written
    );
    assert!(
        !repo.path().join("ran-marker").exists(),
        "the rejected command ran"
    );
    let first = &result["first"]["updates"];
    let kinds_first = kinds(first);
    assert!(kinds_first.contains(&"plan".to_string()), "{kinds_first:?}");
    assert!(
        kinds_first.contains(&"tool_call".to_string()),
        "{kinds_first:?}"
    );
    let edit_updates: Vec<&Value> = first
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| {
            u["update"]["sessionUpdate"] == "tool_call_update"
                && u["update"]["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|c| c["type"] == "diff"))
        })
        .collect();
    assert_eq!(edit_updates.len(), 1, "one diff for the edit: {first:#}");
    let diff = &edit_updates[0]["update"]["content"][0];
    assert!(
        diff["oldText"]
            .as_str()
            .unwrap()
            .contains("!token.is_empty()")
    );
    assert!(
        diff["newText"]
            .as_str()
            .unwrap()
            .contains("token.len() > 8")
    );
    let failed = first.as_array().unwrap().iter().any(|u| {
        u["update"]["sessionUpdate"] == "tool_call"
            && u["update"]["status"] == "failed"
            && u["update"]["title"]
                .as_str()
                .is_some_and(|t| t.contains("touch ran-marker"))
    });
    assert!(
        failed,
        "the rejected command's call is shown failed: {first:#}"
    );
    let answer = text_of(first, "agent_message_chunk");
    assert_eq!(
        answer.matches("Tokens now need 9 characters").count(),
        1,
        "the answer once: {answer:?}"
    );
    assert!(result["first"]["usage"]["totalTokens"].as_u64().unwrap() > 0);

    // The slow prompt: a second prompt meanwhile is refused, the cancel stops the run.
    assert_eq!(result["busy"]["code"], -32600, "{result:#}");
    assert!(
        result["busy"]["message"]
            .as_str()
            .unwrap()
            .contains("already running")
    );
    assert_eq!(result["second"]["stopReason"], "cancelled", "{result:#}");

    // Bad input gets JSON-RPC errors, and the server kept serving (setMode answered after).
    assert_eq!(result["unknownSession"]["code"], -32002);
    assert_eq!(result["unknownMethod"]["code"], -32601);
    assert_eq!(result["badMode"]["code"], -32602);
    assert_eq!(result["setMode"], json!({}));

    // The end of stdin ended the process cleanly, every journal closed: both runs have their
    // one terminal record.
    assert_eq!(result["firstExit"]["code"], 0, "{result:#}");
    let session = result["sessionId"].as_str().unwrap();
    let records = journal(&home, session);
    let ends = records
        .iter()
        .filter(|r| r["type"] == "run_end" || r["type"] == "run_error")
        .count();
    assert_eq!(ends, 2, "one terminal record per prompt");

    // The session loaded back in a new process: the prompts, the edit's diff and the answer.
    let loaded = &result["loadUpdates"];
    let users = text_of(loaded, "user_message_chunk");
    assert!(
        users.contains("Tokens must be longer than 8 characters"),
        "{loaded:#}"
    );
    assert!(users.contains("please wait for the slow model"));
    assert!(text_of(loaded, "agent_message_chunk").contains("Tokens now need 9 characters"));
    assert!(kinds(loaded).contains(&"tool_call".to_string()));
    assert_eq!(result["secondExit"]["code"], 0);
}
