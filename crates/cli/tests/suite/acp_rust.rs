//! `braincode acp` from the Rust crate's client side (`agent-client-protocol`, spawning the
//! binary), and from raw bytes: an editor that never answers a permission request, an editor
//! that goes away mid-prompt or stops the agent with SIGTERM, images and embedded files in a
//! prompt, malformed JSON.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResource, EmbeddedResourceResource, ImageContent, InitializeRequest,
    NewSessionRequest, PromptRequest, RequestPermissionRequest, RequestPermissionResponse,
    SessionNotification, StopReason, TextContent, TextResourceContents,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use braincode_protocol::Role;
use braincode_test_support::{
    Matcher, Reply, Script, ScriptedServer, TempHome, TempRepo, router_decision_json,
    scripted_model_entry,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::run_harness::{self, configure, journal};

/// The primary runs `touch ran-marker` then answers; a prompt asking to wait is answered
/// only after a minute.
async fn command_model() -> ScriptedServer {
    super::acp_editor::editor_model_with(vec![
        Reply::tool_call("shell", json!({"command": "touch ran-marker"})),
        Reply::text("Done as far as allowed."),
    ])
    .await
}

pub(super) fn agent(home: &TempHome, args: &[&str]) -> AcpAgent {
    let mut config = AcpAgentConfig::new(env!("CARGO_BIN_EXE_braincode"))
        .arg("acp")
        .env("BRAINCODE_HOME", home.path().display().to_string())
        .env(
            "BRAINCODE_MODEL_CACHE",
            home.path().join("no-model-cache").display().to_string(),
        )
        .env("BRAINCODE_LOCAL_SERVERS", "0");
    for arg in args {
        config = config.arg(*arg);
    }
    AcpAgent::new(config)
}

pub(super) async fn open(
    connection: &ConnectionTo<Agent>,
    repo: &TempRepo,
) -> agent_client_protocol::v1::schema::SessionId {
    connection
        .send_request(InitializeRequest::new(ProtocolVersion::V1))
        .block_task()
        .await
        .unwrap();
    connection
        .send_request(NewSessionRequest::new(repo.path().to_path_buf()))
        .block_task()
        .await
        .unwrap()
        .session_id
}

pub(super) fn text(prompt: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::Text(TextContent::new(prompt))]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_never_answers_does_not_hang_the_run() {
    let server = command_model().await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = run_harness::repo();
    // Requests the editor holds and never answers (dropping one would answer it).
    let held: Arc<Mutex<Vec<Responder<RequestPermissionResponse>>>> = Arc::default();
    let asked = held.clone();
    let stop = Client
        .v1()
        .on_receive_request(
            async move |_request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        _connection: ConnectionTo<Agent>| {
                asked.lock().unwrap().push(responder);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(
            agent(&home, &["--permission-timeout", "1"]),
            async |connection: ConnectionTo<Agent>| {
                let session = open(&connection, &repo).await;
                let response = connection
                    .send_request(PromptRequest::new(session, text("run the tests")))
                    .block_task()
                    .await?;
                Ok(response.stop_reason)
            },
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        held.lock().unwrap().len(),
        1,
        "the command was asked about once"
    );
    assert!(
        !repo.path().join("ran-marker").exists(),
        "an unanswered command ran"
    );
    let sessions = std::fs::read_dir(home.path().join("sessions")).unwrap();
    let id = sessions
        .filter_map(Result::ok)
        .find_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".jsonl")
                .map(str::to_string)
        })
        .unwrap();
    let decision = journal(&home, &id)
        .into_iter()
        .find(|r| r["type"] == "tool_approval_decision")
        .unwrap();
    assert_eq!(decision["decision"], "blocked", "{decision}");
    assert!(
        decision["reason"]
            .as_str()
            .unwrap()
            .contains("did not answer"),
        "{decision}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_that_goes_away_mid_prompt_leaves_a_closed_journal() {
    let server = command_model().await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = run_harness::repo();
    let seen: Arc<Mutex<Vec<SessionNotification>>> = Arc::default();
    let updates = seen.clone();
    let session = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _connection: ConnectionTo<Agent>| {
                updates.lock().unwrap().push(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&home, &[]),
            async |connection: ConnectionTo<Agent>| {
                let session = open(&connection, &repo).await;
                // Not awaited: the editor leaves while the model is still thinking.
                connection
                    .send_request(PromptRequest::new(
                        session.clone(),
                        text("please wait for the slow model"),
                    ))
                    .detach();
                for _ in 0..200 {
                    if seen.lock().unwrap().iter().any(|n| {
                        n.session_id == session
                            && matches!(
                                n.update,
                                agent_client_protocol::v1::schema::SessionUpdate::Plan(_)
                            )
                    }) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(session)
            },
        )
        .await
        .unwrap();
    // The client closed stdin when it returned and waited for the process to exit.
    let records = journal(&home, &session.0);
    let last = records.last().unwrap();
    assert!(
        last["type"] == "run_end" || last["type"] == "run_error",
        "the journal ends with its terminal record: {last}"
    );
    assert!(
        last.to_string()
            .contains("the editor closed the connection"),
        "{last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_and_embedded_files_reach_the_model() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[])),
            )
            .always(
                Matcher::model("backend"),
                Reply::text("I see a one-pixel image."),
            ),
    )
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    // The router and the primary read images (a prompt with images is planned by a model
    // that sees them).
    let models: Vec<_> = run_harness::ROLES
        .iter()
        .map(|role| {
            let mut model = scripted_model_entry(&format!("test/{role}"), &server.base_url());
            model.supports_vision = matches!(*role, "backend" | "router");
            model
        })
        .collect();
    home.write_models(&models);
    let repo = run_harness::repo();
    let unsaved = "pub fn unsaved_buffer_marker() {}";
    let stop = Client
        .v1()
        .connect_with(agent(&home, &["--read-only"]), async |connection: ConnectionTo<Agent>| {
            let session = open(&connection, &repo).await;
            let prompt = vec![
                ContentBlock::Text(TextContent::new("what is in this picture and this file?")),
                ContentBlock::Image(ImageContent::new("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "image/png")),
                ContentBlock::Resource(EmbeddedResource::new(
                    EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                        unsaved,
                        format!("file://{}/src/lib.rs", repo.path().display()),
                    )),
                )),
            ];
            let response = connection
                .send_request(PromptRequest::new(session, prompt))
                .block_task()
                .await?;
            Ok(response.stop_reason)
        })
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    let primary: Vec<Value> = server
        .chat_requests()
        .into_iter()
        .filter(|request| request.model() == Some("backend"))
        .map(|request| request.body)
        .collect();
    let body = serde_json::to_string(&primary).unwrap();
    assert!(
        body.contains("iVBORw0KGgo"),
        "the image reached the primary"
    );
    assert!(
        body.contains(unsaved),
        "the embedded file reached the primary"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_gets_an_error_and_the_server_keeps_serving_until_sigterm() {
    let home = TempHome::new();
    let mut child = run_harness::command(&home, home.path(), &["acp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n").await.unwrap();
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["agentInfo"]["name"], "braincode");
    for bad in [
        "{not json",
        "[1,2]",
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":42}}",
    ] {
        stdin
            .write_all(format!("{bad}\n").as_bytes())
            .await
            .unwrap();
        let reply: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert!(reply["error"]["code"].as_i64().is_some(), "{bad} → {reply}");
    }
    stdin
        .write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/new\",\"params\":{{\"cwd\":{:?},\"mcpServers\":[]}}}}\n", home.path().display().to_string()).as_bytes())
        .await
        .unwrap();
    let created: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert!(created["result"]["sessionId"].is_string(), "{created}");
    let session = created["result"]["sessionId"].as_str().unwrap().to_string();
    // Each answer of this session: the update lines it wrote before, then the response.
    let mut answer = async |line: String, id: u64| -> (Vec<Value>, Value) {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let mut updates = Vec::new();
        loop {
            let message: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            if message["id"] == id {
                return (updates, message);
            }
            updates.push(message);
        }
    };
    // No login over ACP: keys are Braincode's own, and the error says where they go.
    let (_, login) = answer(
        json!({"jsonrpc": "2.0", "id": 4, "method": "authenticate", "params": {"methodId": "oauth"}})
            .to_string(),
        4,
    )
    .await;
    assert_eq!(login["error"]["code"], -32602, "{login}");
    assert!(login.to_string().contains("braincode auth set"), "{login}");
    // `/brain` with a name that is no brain says which there are, and runs nothing.
    let (told, picked) = answer(
        json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [{"type": "text", "text": "/brain nosuch"}]}})
        .to_string(),
        5,
    )
    .await;
    assert_eq!(picked["result"]["stopReason"], "end_turn", "{picked}");
    let told = serde_json::to_string(&told).unwrap();
    assert!(
        told.contains("No brain `nosuch`. The brains are:"),
        "{told}"
    );
    assert!(
        !home.path().join("sessions").exists(),
        "a command is not a run"
    );
    run_harness::send_signal(child.id().unwrap(), "-TERM");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        status.success(),
        "SIGTERM ends the server cleanly: {status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_are_slash_commands_of_the_editor() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                Matcher::model("router"),
                Reply::json(&router_decision_json(Role::Backend, &[])),
            )
            .always(Matcher::model("backend"), Reply::text("Reviewed.")),
    )
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let skill_dir = home.path().join("skills/tidy");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "# Tidy the imports\nSKILL_BODY_MARKER: sort every use block.\n",
    )
    .unwrap();
    let repo = run_harness::repo();
    let seen: Arc<Mutex<Vec<SessionNotification>>> = Arc::default();
    let updates = seen.clone();
    let stop = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _connection: ConnectionTo<Agent>| {
                updates.lock().unwrap().push(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_with(
            agent(&home, &["--read-only"]),
            async |connection: ConnectionTo<Agent>| {
                let session = open(&connection, &repo).await;
                let response = connection
                    .send_request(PromptRequest::new(session, text("/tidy src/token.rs")))
                    .block_task()
                    .await?;
                Ok(response.stop_reason)
            },
        )
        .await
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    let commands: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|n| match &n.update {
            agent_client_protocol::v1::schema::SessionUpdate::AvailableCommandsUpdate(update) => {
                Some(
                    update
                        .available_commands
                        .iter()
                        .map(|c| format!("{}: {}", c.name, c.description))
                        .collect::<Vec<_>>(),
                )
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert!(
        commands.contains(&"tidy: user skill: Tidy the imports".to_string()),
        "{commands:?}"
    );
    let primary = run_harness::model_requests(&server, "backend").join("\n");
    assert!(
        primary.contains("SKILL_BODY_MARKER"),
        "the skill reached the primary"
    );
    assert!(primary.contains("src/token.rs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_server_the_editor_passes_is_one_the_run_can_call() {
    let server = ScriptedServer::start(Script::new().when(
        Matcher::model("any"),
        [
            Reply::tool_call("mcp_search", json!({"query": "echo"})),
            Reply::tool_call(
                "mcp_call",
                json!({"name": "mcp__editor__echo", "arguments": {"text": "from the editor's server"}}),
            ),
            Reply::text("The echo tool said: from the editor's server."),
        ],
    ))
    .await;
    let home = TempHome::new();
    run_harness::configure_one_model(&home, &server);
    let repo = run_harness::repo();
    let bin = braincode_test_support::mcp::test_server_binary();
    let session = Client
        .v1()
        .connect_with(
            agent(&home, &["--yes"]),
            async |connection: ConnectionTo<Agent>| {
                connection
                    .send_request(InitializeRequest::new(ProtocolVersion::V1))
                    .block_task()
                    .await?;
                let mcp = agent_client_protocol::v1::schema::McpServer::Stdio(
                    agent_client_protocol::v1::schema::McpServerStdio::new("editor", bin)
                        .args(vec!["--stdio".into()]),
                );
                let session = connection
                    .send_request(
                        NewSessionRequest::new(repo.path().to_path_buf()).mcp_servers(vec![mcp]),
                    )
                    .block_task()
                    .await?
                    .session_id;
                connection
                    .send_request(PromptRequest::new(session.clone(), text("call the echo tool of the MCP server the editor passed, with the text from the editor's server, and report what it returned")))
                    .block_task()
                    .await?;
                Ok(session)
            },
        )
        .await
        .unwrap();
    let records = journal(&home, &session.0);
    let echo = records
        .iter()
        .find(|r| {
            r["type"] == "tool_execution_summary"
                && r["toolName"] == "mcp__editor__echo"
                && r["stage"] == "end"
        })
        .unwrap_or_else(|| panic!("the editor's server was not called: {records:?}"));
    assert!(
        echo["output"]
            .as_str()
            .unwrap()
            .contains("from the editor's server"),
        "{echo}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_the_editor_cannot_serve_falls_back_to_the_file_on_disk() {
    let server = super::acp_editor::editor_model_with(vec![
        Reply::tool_call("read_file", json!({"path": "src/token.rs"})),
        Reply::text("Read it."),
    ])
    .await;
    let home = TempHome::new();
    configure(&home, &server, &[], &[]);
    let repo = run_harness::repo();
    let reads: Arc<Mutex<Vec<std::path::PathBuf>>> = Arc::default();
    let asked = reads.clone();
    let session = Client
        .v1()
        .on_receive_request(
            async move |request: agent_client_protocol::v1::schema::ReadTextFileRequest,
                        responder: Responder<agent_client_protocol::v1::schema::ReadTextFileResponse>,
                        _connection: ConnectionTo<Agent>| {
                asked.lock().unwrap().push(request.path);
                responder.respond_with_error(agent_client_protocol::Error::internal_error().data("the buffer is gone"))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(agent(&home, &["--read-only"]), async |connection: ConnectionTo<Agent>| {
            let fs = agent_client_protocol::v1::schema::FileSystemCapabilities::new()
                .read_text_file(true);
            connection
                .send_request(
                    InitializeRequest::new(ProtocolVersion::V1).client_capabilities(
                        agent_client_protocol::v1::schema::ClientCapabilities::new().fs(fs),
                    ),
                )
                .block_task()
                .await?;
            let session = connection
                .send_request(NewSessionRequest::new(repo.path().to_path_buf()))
                .block_task()
                .await?
                .session_id;
            connection
                .send_request(PromptRequest::new(
                    session.clone(),
                    text("read the file src/token.rs of this repository and explain what the check does"),
                ))
                .block_task()
                .await?;
            Ok(session)
        })
        .await
        .unwrap();
    let reads = reads.lock().unwrap().clone();
    assert_eq!(reads.len(), 1, "the editor was asked first");
    assert!(reads[0].ends_with("src/token.rs"), "{reads:?}");
    let records = journal(&home, &session.0);
    let read = records
        .iter()
        .find(|r| {
            r["type"] == "tool_execution_summary"
                && r["toolName"] == "read_file"
                && r["stage"] == "end"
        })
        .unwrap();
    assert_eq!(read["isError"], Value::Null, "{read}");
    assert!(
        read["output"]
            .as_str()
            .unwrap()
            .contains("!token.is_empty()"),
        "the disk's text: {read}"
    );
}
