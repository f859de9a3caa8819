//! Setting a run up: configuration, the brain, the gate, project support and the
//! environment section; then the run's first record, which says what the setup found.

use std::sync::Arc;

use braincode_config::Home;
use braincode_config::journal::clip_text;
use braincode_protocol::{Mode, Record, RunStart, SessionId};
use braincode_sandbox::netbridge::NetRoute;
use braincode_sandbox::{Sandbox, SandboxPolicy};
use braincode_tools::{ExecLimits, ExecSessions};

use crate::agent::ToolStats;
use crate::approval::{PermissionMode, PolicyGate};
use crate::config::RunConfig;
use crate::fold::LiveState;
use crate::hooks::HookEnvironment;
use crate::models::ModelFactory;
use crate::run::record_parts::brain_ref;
use crate::run::state::{ContextIds, RunBase};
use crate::run::{RunRequest, RunServices};
use crate::sink::RunSink;
use crate::tape::Tape;

/// What a run loaded from disk (see [`RunConfig::load`]).
pub(crate) type Loaded = RunConfig;

/// Who a run is: its session, its run id (the seed of its context ids) and its live fold.
pub(crate) struct RunIdentity<'a> {
    pub session_id: &'a SessionId,
    pub run_id: &'a str,
    pub live: Arc<LiveState>,
}

/// Everything a run has before it reads its request, built once and complete.
pub(crate) fn build_base(
    request: &RunRequest,
    services: &RunServices,
    sink: &RunSink,
    identity: RunIdentity<'_>,
    loaded: Loaded,
    stats: Arc<ToolStats>,
) -> RunBase {
    let session_id = identity.session_id;
    let policy = loaded.permissions;
    let project_root = request.project_root.clone();
    // Setting a sandbox up probes the OS and walks the project for secrets (tens of ms): only
    // a run that can start a process pays for it: one offered command tools, one that may
    // edit (its checks run commands), or with hooks.
    let runs_commands = crate::run::primary::tool_mode(request.permission)
        .allows(braincode_tools::ToolPermission::Execute)
        || (request.permission != PermissionMode::ReadOnly && loaded.checks.config.enabled)
        || !loaded.hooks.is_empty();
    let allow_network = request.allow_network || loaded.settings.sandbox.allow_network;
    // `--allow-network=registries`: commands reach the package registries (and the user's
    // `sandbox.networkAllow` names) through the allowlist proxy, which lives as long as the
    // run; every connection it is asked for is journaled (`network_access`), a refusal shown.
    let replaying = services.tape.as_deref().is_some_and(Tape::is_strict);
    let mut net_proxy = None;
    let mut route = None;
    let wants_allowlist =
        runs_commands && request.network_allowlist && !allow_network && !replaying;
    // Asked only when the allowlist is wanted: the sandbox status probes the OS (a bubblewrap
    // run, milliseconds and megabytes of code), which a run that starts no command never needs.
    let bubblewrap = wants_allowlist
        && braincode_sandbox::status().kind == braincode_sandbox::SandboxKind::Bubblewrap;
    if wants_allowlist && !bubblewrap {
        sink.warning(format!(
            "--allow-network=registries needs the bubblewrap sandbox (this machine has {}); commands run without the network",
            braincode_sandbox::status().kind
        ));
    }
    if bubblewrap {
        match start_proxy(&loaded.settings, sink) {
            Ok((proxy, net_route)) => {
                net_proxy = Some(proxy);
                route = Some(net_route);
            }
            Err(reason) => sink.warning(format!(
                "--allow-network=registries: {reason}; commands run without the network"
            )),
        }
    }
    let sandbox = if runs_commands {
        make_sandbox(
            &services.home,
            &project_root,
            &SandboxRequest {
                settings: &loaded.settings.sandbox,
                allow_network,
                denied: policy.denied_project_paths(&project_root),
                // In `ask` mode a person approves each command, gaps or not.
                unattended: matches!(
                    request.permission,
                    PermissionMode::AllowEdits | PermissionMode::Yes
                ),
                route,
            },
        )
    } else {
        Err(NoSandbox::NotNeeded)
    };
    // A replay runs no command: nothing can change the project under it.
    let protected = sandbox.as_ref().ok().filter(|_| !replaying).map(|sandbox| {
        Arc::new(crate::protect::ProtectedWatch::new(
            sandbox.clone(),
            sink.clone(),
            services.cancel.clone(),
            services.cancel_reason.clone(),
        ))
    });
    let gate = Arc::new(
        PolicyGate::new(
            policy,
            project_root.clone(),
            loaded.mode,
            request.permission,
            services.approver.clone(),
            sink.clone(),
            // Without the OS sandbox every command needs a person; with it, `--yes` may approve
            // unanalysable commands too.
            sandbox.is_ok(),
        )
        .with_project_trust(loaded.checks.trusted),
    );
    let support = loaded.support;
    let servers: Vec<_> = support
        .mcp_servers
        .iter()
        .chain(&services.extra_mcp_servers)
        .cloned()
        .collect();
    let mcp = crate::mcp::McpRuntime::new(
        crate::mcp::plan_for(
            &services.home,
            &servers,
            &loaded.settings.mcp,
            &project_root,
        ),
        loaded.settings.mcp.clone(),
        &loaded.brain,
        &services.home,
        project_root.clone(),
        crate::mcp::check::writable_roots(&loaded.settings.sandbox.writable_paths),
        sink.clone(),
        // A replay starts nothing: MCP results come from the journal.
        !services
            .tape
            .as_deref()
            .is_some_and(crate::tape::Tape::is_strict),
        services.mcp_hubs.clone(),
    );
    let hook_env = HookEnvironment {
        session_id: session_id.to_string(),
        cwd: project_root.clone(),
        model: loaded.brain_id.clone(),
        permission_mode: request.permission.as_str().to_string(),
        sandbox: sandbox.as_ref().ok().cloned(),
        protected: protected.clone(),
    };
    RunBase {
        sink: sink.clone(),
        cancel: services.cancel.clone(),
        project_root,
        brain_id: loaded.brain_id,
        brain: loaded.brain,
        mode: loaded.mode,
        permission: request.permission,
        factory: ModelFactory::new(
            services.home.clone(),
            loaded.models,
            // settings.json → models sets every call's defaults; each model's own entry wins.
            // Every retry the client makes is journaled.
            services
                .client_options
                .clone()
                .with_settings(&loaded.settings.models)
                .with_retry_observer({
                    let sink = sink.clone();
                    move |notice| {
                        sink.record(braincode_protocol::Record::ModelRetry(
                            braincode_protocol::ModelRetry {
                                model: notice.model.clone(),
                                attempt: notice.attempt,
                                kind: notice.kind.to_string(),
                                message: notice.message.clone(),
                                phase: None,
                                role: None,
                            },
                        ));
                    }
                }),
            services.client_override.clone(),
        )
        .with_oauth(loaded.settings.auth.oauth.clone()),
        gate,
        stats,
        exec_sessions: Arc::new(ExecSessions::new(ExecLimits::default())),
        tools_config: loaded.tools,
        trust_notices: (loaded.trust_error.iter())
            .map(|err| {
                format!(
                    "workspace trust could not be read ({err}); treating this project as untrusted"
                )
            })
            .chain(loaded.trust.notice())
            .collect(),
        checks: {
            let mut checks = loaded.checks;
            // `--fetch-deps` asks for the dependency step, unless tools.json says never.
            if request.fetch_deps
                && checks.config.fetch_dependencies != braincode_tools::FetchDependencies::Never
            {
                checks.config.fetch_dependencies = braincode_tools::FetchDependencies::Always;
            }
            checks
        },
        home: services.home.clone(),
        hooks: loaded.hooks,
        hook_env,
        support_section: support.support_section(),
        support_refs: support.context_refs(),
        support_summary: support.summary(&request.project_root),
        settings: loaded.settings,
        sandbox,
        // A replay reads nothing live: the editor's buffers are not the journaled files.
        editor: services.editor_files.clone().filter(|_| !replaying),
        live: identity.live,
        ids: ContextIds::new(identity.run_id),
        ledger: Some(Arc::new(crate::ledger::PatchLedger::new(
            request.project_root.clone(),
            services.home.root(),
            session_id.as_str(),
            sink.clone(),
            services.tape.clone(),
        ))),
        tape: services.tape.clone(),
        mcp,
        protected,
        _net_proxy: net_proxy,
    }
}

/// The run's first record: the prompt as the user gave it (clipped to
/// [`JOURNALED_PROMPT_BYTES`](super::finish::JOURNALED_PROMPT_BYTES)), the project, the run id
/// and how it runs (brain, permission, routing), so that a run interrupted at any point is
/// listed with its prompt and can be resumed or replayed.
pub(super) fn start_record(
    request: &RunRequest,
    run_id: &str,
    tape: Option<&Tape>,
    shared: Option<&RunBase>,
) -> Record {
    Record::RunStart(RunStart {
        prompt: clip_text(&request.prompt, super::finish::JOURNALED_PROMPT_BYTES).into_owned(),
        project_support: Some(shared.map_or_else(
            || braincode_protocol::ProjectSupportSummary {
                root: request.project_root.display().to_string(),
                ..Default::default()
            },
            |shared| shared.support_summary.clone(),
        )),
        model: None,
        attempt: None,
        run_id: Some(run_id.to_string()),
        brain: shared.map(|s| brain_ref(&s.brain_id, &s.brain.name, s.mode)),
        permission: Some(request.permission.as_str().to_string()),
        routing_choice: Some(request.routing.as_str().to_string()),
        resume_of: tape.and_then(Tape::resume_of).map(str::to_string),
        max_tokens: request.budget.max_tokens,
        max_cost_usd: request.budget.max_cost_usd,
    })
}

/// The OS sandbox a project's commands run in when a person runs them (`braincode checks
/// run`): a run's settings, and a partial backend accepted (the person is there).
pub fn project_sandbox(
    home: &Home,
    project_root: &std::path::Path,
    settings: &braincode_config::Settings,
) -> Result<Arc<Sandbox>, NoSandbox> {
    make_sandbox(
        home,
        project_root,
        &SandboxRequest {
            settings: &settings.sandbox,
            allow_network: settings.sandbox.allow_network,
            denied: Vec::new(),
            unattended: false,
            route: None,
        },
    )
}

/// The sandbox of a parallel writer's commands: the run's settings, its worktree the project
/// (the one writable root; the user's project is not in it).
pub(crate) fn writer_sandbox(
    home: &Home,
    worktree: &std::path::Path,
    settings: &braincode_config::Settings,
    permission: PermissionMode,
) -> Result<Arc<Sandbox>, NoSandbox> {
    make_sandbox(
        home,
        worktree,
        &SandboxRequest {
            settings: &settings.sandbox,
            allow_network: settings.sandbox.allow_network,
            denied: Vec::new(),
            unattended: matches!(permission, PermissionMode::AllowEdits | PermissionMode::Yes),
            route: None,
        },
    )
}

/// Starts the run's network allowlist proxy (the registries and `sandbox.networkAllow`), its
/// decisions journaled on `sink`; and the route commands take to it.
fn start_proxy(
    settings: &braincode_config::Settings,
    sink: &RunSink,
) -> Result<(Arc<braincode_tools::exec::netproxy::NetProxy>, NetRoute), String> {
    let journal = sink.clone();
    let proxy = braincode_tools::exec::netproxy::NetProxy::start(
        crate::deps::registries_allowlist(settings),
        Arc::new(move |decision| {
            if !decision.allowed {
                journal.notice(format!(
                    "network allowlist {}",
                    crate::deps::describe(&decision)
                ));
            }
            journal.record(braincode_protocol::Record::NetworkAccess(
                braincode_protocol::NetworkAccess {
                    host: decision.host,
                    port: decision.port,
                    allowed: decision.allowed,
                    reason: decision.reason,
                },
            ));
        }),
    )
    .map_err(|err| format!("the network allowlist proxy could not start: {err}"))?;
    let route = NetRoute {
        socket: proxy.socket(),
        bridge: std::env::current_exe()
            .map_err(|err| format!("cannot find the braincode binary for the bridge: {err}"))?,
    };
    Ok((Arc::new(proxy), route))
}

/// The sandbox of the dependency step: the project's, with the network off except through
/// the allowlist proxy at `route`, and `writable` (the package caches) writable too.
pub fn fetch_sandbox(
    home: &Home,
    project_root: &std::path::Path,
    settings: &braincode_config::Settings,
    route: NetRoute,
    writable: &[std::path::PathBuf],
) -> Result<Arc<Sandbox>, NoSandbox> {
    let mut sandbox = settings.sandbox.clone();
    sandbox
        .writable_paths
        .extend(writable.iter().map(|p| p.display().to_string()));
    make_sandbox(
        home,
        project_root,
        &SandboxRequest {
            settings: &sandbox,
            allow_network: false,
            denied: Vec::new(),
            unattended: false,
            route: Some(route),
        },
    )
}

/// What a run asks of its sandbox beyond the project's defaults.
struct SandboxRequest<'a> {
    settings: &'a braincode_config::SandboxSettings,
    allow_network: bool,
    /// Project paths the user's deny rules cover: read-only for commands.
    denied: Vec<std::path::PathBuf>,
    /// Whether commands run without a person approving each one.
    unattended: bool,
    /// The network allowlist commands go through, if any.
    route: Option<NetRoute>,
}

/// Why a run's commands have no OS sandbox.
#[derive(Debug, thiserror::Error)]
pub enum NoSandbox {
    /// The run starts no command, so none was set up.
    #[error("not set up: this run starts no command")]
    NotNeeded,
    /// A `sandbox.*` path in settings.json is neither absolute nor `~/…`.
    #[error("settings.json sandbox.{field} entry {raw:?} must be absolute or start with ~/")]
    RelativePath {
        /// The setting (`writablePaths`, `allowUnixSockets`).
        field: &'static str,
        /// The entry as written.
        raw: String,
    },
    /// The OS has no sandbox this user can use.
    #[error(transparent)]
    Os(#[from] braincode_sandbox::SandboxError),
    /// The network allowlist needs a sandbox this machine does not have.
    #[error("{0}")]
    Route(String),
    /// The sandbox has gaps and commands would run unattended.
    #[error(
        "the {kind} sandbox is partial here ({gaps}); commands would run with those gaps, so they need a person's approval. Install bubblewrap (`apt install bubblewrap`) where user namespaces work, or accept the gaps with \"sandbox\": {{\"allowPartial\": true}} in settings.json"
    )]
    Partial {
        /// The sandbox's kind.
        kind: braincode_sandbox::SandboxKind,
        /// What it does not enforce, joined.
        gaps: String,
    },
}

/// A settings path: absolute, or `~/…` under the user's home.
fn settings_path(
    raw: &str,
    user_home: Option<&std::path::Path>,
    field: &'static str,
) -> Result<std::path::PathBuf, NoSandbox> {
    let path = match (raw.strip_prefix("~/"), user_home) {
        (Some(rest), Some(home_dir)) => home_dir.join(rest),
        _ => std::path::PathBuf::from(raw),
    };
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(NoSandbox::RelativePath {
            field,
            raw: raw.to_string(),
        })
    }
}

/// The OS sandbox this run's commands use, or why there is none.
fn make_sandbox(
    home: &Home,
    project_root: &std::path::Path,
    request: &SandboxRequest<'_>,
) -> Result<Arc<Sandbox>, NoSandbox> {
    let user_home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let mut policy = SandboxPolicy::for_project(project_root, user_home.as_deref(), home.root());
    policy.network = request.allow_network;
    for raw in &request.settings.writable_paths {
        policy
            .writable
            .push(settings_path(raw, user_home.as_deref(), "writablePaths")?);
    }
    for raw in &request.settings.allow_unix_sockets {
        policy.allow_unix_sockets.push(settings_path(
            raw,
            user_home.as_deref(),
            "allowUnixSockets",
        )?);
    }
    policy.read_only.extend(request.denied.iter().cloned());
    if let Some(route) = &request.route {
        policy.allow_unix_sockets.push(route.socket.clone());
    }
    let mut sandbox = Sandbox::new(policy)?;
    if let Some(route) = request.route.clone() {
        sandbox = sandbox.with_route(route).map_err(NoSandbox::Route)?;
    }
    if request.unattended && !sandbox.gaps().is_empty() && !request.settings.allow_partial {
        return Err(NoSandbox::Partial {
            kind: sandbox.kind(),
            gaps: sandbox.gaps().join("; "),
        });
    }
    Ok(Arc::new(sandbox))
}

/// The environment lines of every prompt; `git` is the repository line of
/// [`crate::git::RepositoryProbe`].
pub(crate) fn environment_section(
    root: &std::path::Path,
    brain: &str,
    mode: Mode,
    git: &str,
) -> String {
    let shell = std::env::var("SHELL")
        .ok()
        .and_then(|s| s.rsplit('/').next().map(str::to_string))
        .unwrap_or_else(|| "sh".into());
    format!(
        "Working directory: {}\nPlatform: {} ({shell})\nToday: {}\nGit: {}\nBrain: {brain} ({mode} mode)",
        root.display(),
        std::env::consts::OS,
        chrono::Local::now().format("%Y-%m-%d"),
        git,
    )
}
