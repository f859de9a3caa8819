//! The ACP agent: its handlers, on stdin/stdout (or any transport a test gives).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, AvailableCommand,
    AvailableCommandInput, AvailableCommandsUpdate, CancelNotification, Implementation,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, SessionId as AcpSessionId, SessionMode, SessionModeState, SessionUpdate,
    SetSessionModeRequest, SetSessionModeResponse, UnstructuredCommandInput,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, ErrorCode};
use braincode_config::{
    McpServerConfig, McpTransport, Scope, Skill, check_trust, discover_support, skill_prompt,
};
use braincode_runtime::PermissionMode;
use tokio_util::sync::CancellationToken;

use crate::files::FsOffer;
use crate::prompt::prompt_parts;
use crate::session::{Session, Shared, send, unknown_session};
use crate::updates::message;

/// Serves ACP on `transport` until the editor closes it (or `stop` fires), then ends every run (each writes
/// its final answer and closes its journal) before returning.
pub async fn serve_on(
    shared: Arc<Shared>,
    transport: impl ConnectTo<Agent> + 'static,
    stop: CancellationToken,
) -> Result<(), Error> {
    let serving = Agent
        .v1()
        .name("braincode")
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            _connection: ConnectionTo<Client>| {
                    let fs = &request.client_capabilities.fs;
                    shared.set_fs_offer(FsOffer {
                        read: fs.read_text_file,
                        write: fs.write_text_file,
                    });
                    responder.respond(initialize(&request))
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async |request: AuthenticateRequest,
                   responder: Responder<AuthenticateResponse>,
                   _connection: ConnectionTo<Client>| {
                responder.respond_with_error(Error::invalid_params().data(format!(
                    "no login method {:?}: Braincode reads provider keys from its own configuration \
                     (`braincode auth set <provider>`), none is needed over ACP",
                    request.method_id.0
                )))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: NewSessionRequest,
                            responder: Responder<NewSessionResponse>,
                            connection: ConnectionTo<Client>| {
                    let (cwd, mcp) = match open_checks(&request.cwd, &request.mcp_servers) {
                        Ok(found) => found,
                        Err(err) => return responder.respond_with_error(err),
                    };
                    let id = braincode_runtime::new_session_id();
                    let mode = shared.default_mode;
                    let acp_id = AcpSessionId::new(id.to_string());
                    let skills = skills(&shared, &cwd);
                    shared
                        .sessions()
                        .insert(id.to_string(), Session::new(cwd, mode, mcp));
                    responder.respond(
                        NewSessionResponse::new(acp_id.clone()).modes(modes(mode)),
                    )?;
                    send(&connection, &acp_id, commands(&skills));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: LoadSessionRequest,
                            responder: Responder<LoadSessionResponse>,
                            connection: ConnectionTo<Client>| {
                    let (cwd, mcp) = match open_checks(&request.cwd, &request.mcp_servers) {
                        Ok(found) => found,
                        Err(err) => return responder.respond_with_error(err),
                    };
                    let key = request.session_id.0.to_string();
                    if shared
                        .sessions()
                        .get(&key)
                        .is_some_and(Session::is_running)
                    {
                        return responder.respond_with_error(Error::new(
                            ErrorCode::INVALID_REQUEST,
                            format!("session {key} is running a prompt; load it when it ends"),
                        ));
                    }
                    let updates = match crate::load::replay_updates(&shared.home, &key, &cwd) {
                        Ok(updates) => updates,
                        Err(err) => return responder.respond_with_error(err),
                    };
                    for update in updates {
                        send(&connection, &request.session_id, update);
                    }
                    let mode = shared.default_mode;
                    let skills = skills(&shared, &cwd);
                    shared
                        .sessions()
                        .insert(key, Session::new(cwd, mode, mcp));
                    responder.respond(LoadSessionResponse::new().modes(modes(mode)))?;
                    send(&connection, &request.session_id, commands(&skills));
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: SetSessionModeRequest,
                            responder: Responder<SetSessionModeResponse>,
                            _connection: ConnectionTo<Client>| {
                    let key = request.session_id.0.to_string();
                    let Some(mode) = PermissionMode::CYCLE
                        .into_iter()
                        .find(|mode| mode.label() == &*request.mode_id.0)
                    else {
                        return responder.respond_with_error(Error::invalid_params().data(format!(
                            "no mode {:?}: the modes are read-only, ask, edits and yes",
                            request.mode_id.0
                        )));
                    };
                    match shared.sessions().get_mut(&key) {
                        Some(session) => session.mode = mode,
                        None => return responder.respond_with_error(unknown_session(&key)),
                    }
                    responder.respond(SetSessionModeResponse::new())
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            {
                let shared = shared.clone();
                async move |request: PromptRequest,
                            responder: Responder<agent_client_protocol::v1::schema::PromptResponse>,
                            connection: ConnectionTo<Client>| {
                    let mut parts = match prompt_parts(&request.prompt) {
                        Ok(parts) => parts,
                        Err(reason) => {
                            return responder
                                .respond_with_error(Error::invalid_params().data(reason));
                        }
                    };
                    if let Some(answer) = slash_command(&shared, &request.session_id, &parts.text)
                    {
                        return match answer {
                            Ok(text) => {
                                send(&connection, &request.session_id, message(text));
                                responder.respond(
                                    agent_client_protocol::v1::schema::PromptResponse::new(
                                        agent_client_protocol::v1::schema::StopReason::EndTurn,
                                    ),
                                )
                            }
                            Err(err) => responder.respond_with_error(err),
                        };
                    }
                    if let Some(prompt) = skill_command(&shared, &request.session_id, &parts.text)
                    {
                        parts.text = prompt;
                    }
                    let turn = match shared.start_prompt(&request.session_id, parts, &connection) {
                        Ok(turn) => turn,
                        Err(err) => return responder.respond_with_error(err),
                    };
                    // The turn runs outside the dispatch loop, so approvals, cancels and
                    // other sessions' requests are served meanwhile.
                    connection.spawn({
                        let connection = connection.clone();
                        async move {
                            responder.respond_with_result(turn.finish(&connection).await)
                        }
                    })
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            {
                let shared = shared.clone();
                async move |notification: CancelNotification, _connection: ConnectionTo<Client>| {
                    shared.cancel(&notification.session_id.0, "cancelled from the editor");
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport);
    let served = tokio::select! {
        served = serving => served,
        () = stop.cancelled() => Ok(()),
    };
    shared.shut_down().await;
    served
}

fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let version = request.protocol_version.min(ProtocolVersion::V1);
    InitializeResponse::new(version)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
                .mcp_capabilities(McpCapabilities::new().http(true).sse(true)),
        )
        .agent_info(Implementation::new("braincode", env!("CARGO_PKG_VERSION")).title("Braincode"))
}

/// The modes a session offers, `current` selected.
fn modes(current: PermissionMode) -> SessionModeState {
    let available = PermissionMode::CYCLE
        .into_iter()
        .map(|mode| SessionMode::new(mode.label(), mode.label()).description(mode.describe()))
        .collect();
    SessionModeState::new(current.label(), available)
}

/// The skills a prompt in `cwd` would be given (the project's only when it is trusted).
fn skills(shared: &Shared, cwd: &Path) -> Vec<Skill> {
    let (trust, _) = check_trust(&shared.home, cwd);
    discover_support(&shared.home, cwd, &trust).skills
}

/// The slash commands a prompt may start with: `/brain`, and `/<skill-id> [task]` for each
/// skill of the project and the user.
fn commands(skills: &[Skill]) -> SessionUpdate {
    let mut commands = vec![
        AvailableCommand::new(
            "brain",
            "Show the brains, or pick the one this session's prompts use",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("brain id (empty: list them)"),
        )),
    ];
    for skill in skills.iter().filter(|skill| skill.id != "brain") {
        let about = skill
            .body
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with("---"))
            .unwrap_or("a skill");
        commands.push(
            AvailableCommand::new(
                skill.id.clone(),
                format!(
                    "{} skill: {}",
                    skill.scope.as_str(),
                    braincode_protocol::clip_chars(about.trim_start_matches('#').trim(), 100)
                ),
            )
            .input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("task (empty: apply it to the project)"),
            )),
        );
    }
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands))
}

/// `/<skill-id> [task]`: the prompt with that skill applied; `None` when the prompt does not
/// start with a skill's command.
fn skill_command(shared: &Shared, session: &AcpSessionId, text: &str) -> Option<String> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, task) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let cwd = shared.sessions().get(&*session.0)?.cwd.clone();
    let skills = skills(shared, &cwd);
    let skill = skills.iter().find(|skill| skill.id == name)?;
    Some(skill_prompt(skill, task))
}

/// `/brain [id]`; `None` when the prompt is not a command of ours (it then runs as typed).
fn slash_command(
    shared: &Shared,
    session: &AcpSessionId,
    text: &str,
) -> Option<Result<String, Error>> {
    let rest = text.trim().strip_prefix("/brain")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let key = session.0.to_string();
    if !shared.sessions().contains_key(&key) {
        return Some(Err(unknown_session(&key)));
    }
    let presets = match braincode_runtime::load_brain_presets(&shared.home) {
        Ok(presets) => presets,
        Err(err) => return Some(Ok(format!("The brains could not be read: {err}"))),
    };
    let wanted = rest.trim();
    let mut sessions = shared.sessions();
    let session = sessions.get_mut(&key)?;
    if wanted.is_empty() {
        let current = session.brain.clone();
        let lines: Vec<String> = presets
            .iter()
            .map(|preset| {
                let mark = if current.as_deref() == Some(preset.id.as_str()) {
                    " (this session)"
                } else {
                    ""
                };
                format!("- `{}`{mark}", preset.id)
            })
            .collect();
        return Some(Ok(format!("Brains:\n{}", lines.join("\n"))));
    }
    if !presets.iter().any(|preset| preset.id == wanted) {
        let known: Vec<&str> = presets.iter().map(|preset| preset.id.as_str()).collect();
        return Some(Ok(format!(
            "No brain `{wanted}`. The brains are: {}.",
            known.join(", ")
        )));
    }
    session.brain = Some(wanted.to_string());
    Some(Ok(format!(
        "This session's prompts now use the brain `{wanted}`."
    )))
}

/// A session's directory (absolute, an existing directory) and the editor's MCP servers.
fn open_checks(
    cwd: &Path,
    servers: &[McpServer],
) -> Result<(PathBuf, Vec<McpServerConfig>), Error> {
    if !cwd.is_absolute() {
        return Err(
            Error::invalid_params().data(format!("cwd {} is not an absolute path", cwd.display()))
        );
    }
    let cwd = cwd.canonicalize().map_err(|err| {
        Error::invalid_params().data(format!("cwd {} cannot be opened: {err}", cwd.display()))
    })?;
    if !cwd.is_dir() {
        return Err(
            Error::invalid_params().data(format!("cwd {} is not a directory", cwd.display()))
        );
    }
    let servers = servers.iter().map(mcp_config).collect::<Result<_, _>>()?;
    Ok((cwd, servers))
}

/// One of the editor's MCP servers as a user-level server (sandboxed like the user's own,
/// started before the first prompt's first model call).
fn mcp_config(server: &McpServer) -> Result<McpServerConfig, Error> {
    let base = |name: &str, transport| McpServerConfig {
        name: name.to_string(),
        scope: Scope::User,
        transport,
        command: None,
        args: Vec::new(),
        env: BTreeMap::new(),
        url: None,
        http_headers: BTreeMap::new(),
        cwd: None,
        disabled: false,
        trusted: true,
        // The editor passed it for this session: its tools are there from the first prompt.
        loading: Some(braincode_protocol::McpLoadingStrategy::Eager),
        startup_timeout_ms: None,
        call_timeout_ms: None,
        schemas: None,
        sandbox: true,
        network: false,
        source: PathBuf::from("<editor: session/new>"),
    };
    let headers = |headers: &[agent_client_protocol::v1::schema::HttpHeader]| {
        headers
            .iter()
            .map(|header| (header.name.clone(), header.value.clone()))
            .collect()
    };
    Ok(match server {
        McpServer::Stdio(stdio) => McpServerConfig {
            command: Some(stdio.command.display().to_string()),
            args: stdio.args.clone(),
            env: stdio
                .env
                .iter()
                .map(|var| (var.name.clone(), var.value.clone()))
                .collect(),
            ..base(&stdio.name, McpTransport::Stdio)
        },
        McpServer::Http(http) => McpServerConfig {
            url: Some(http.url.clone()),
            http_headers: headers(&http.headers),
            ..base(&http.name, McpTransport::Http)
        },
        McpServer::Sse(sse) => McpServerConfig {
            url: Some(sse.url.clone()),
            http_headers: headers(&sse.headers),
            ..base(&sse.name, McpTransport::Sse)
        },
        _ => {
            return Err(
                Error::invalid_params().data("an MCP server transport this version does not know")
            );
        }
    })
}
