//! One orchestrated run, end to end.
//!
//! hooks (SessionStart, UserPromptSubmit) → `@`/`@@` expansion → session continuity → plan
//! (router, fast path or heuristic, with the reason recorded) → clarification gate → support
//! workers (dependency-aware pool) → primary (candidate fallback, tools, dispatch) → review →
//! Stop hook → one final answer and FinalReport.
//!
//! [`run`] never fails and never panics out: every path — success, failure, clarification,
//! cancellation — ends with exactly one `RunEvent::Final` and one returned report.
//!
//! The journal of a run starts with its `run_start` record (the prompt as the user gave it,
//! and the project), written before anything else can fail or be interrupted, so a run killed
//! at any point is still listed with its prompt. It ends with exactly one terminal record
//! (`run_end`, or `run_error` — also when the configuration cannot be loaded), after which the
//! sink refuses records. Each primary attempt is a `worker_start` of phase `primary`.

mod budget;
pub mod checks;
pub use budget::{BUDGET_REACHED, BUDGET_STOP_SUFFIX, RunBudget};
pub use checks::CHECK_TOOL;
pub(crate) use setup::writer_sandbox;
pub use setup::{NoSandbox, fetch_sandbox, project_sandbox};
mod dispatch;
mod facts;
pub(crate) mod fallback;
mod finish;
mod image;
mod opening;
mod pipeline;
mod plan;
mod plan_review;
mod primary;
pub mod prompts;
mod record_parts;
mod review;
mod setup;
pub(crate) mod state;
mod todos;
mod verify;
pub(crate) mod workers;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use braincode_brain::RuntimePlan;
use braincode_config::Home;
use braincode_llm::ClientOptions;
use braincode_protocol::{FinalReport, Mode, SessionId};
use tokio_util::sync::CancellationToken;

pub use opening::new_session_id;
pub use plan::RoutingChoice;

use crate::agent::ToolStats;
use crate::approval::{ApprovalHandler, PermissionMode};
use crate::config::{ConfigError, LoadOptions, RunConfig};
use crate::fold::LiveState;
use crate::models::ClientOverride;
use crate::sink::{EventSubscriber, MemoryJournal, RunSink};
use crate::tape::Tape;
pub use finish::{RunError, StartError};

use opening::{History, new_run_id};
use pipeline::pipeline;
use setup::{RunIdentity, build_base, start_record};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The user's prompt (may contain `@path` and `@@session` references).
    pub prompt: String,
    /// Project root (tools are confined to it).
    pub project_root: PathBuf,
    /// Continue this session; `None` starts a new one.
    pub session_id: Option<SessionId>,
    /// Brain to use instead of `settings.defaultBrainId`.
    pub brain_id: Option<String>,
    /// Mode to use instead of `settings.mode`.
    pub mode: Option<Mode>,
    /// How much the run may change.
    pub permission: PermissionMode,
    /// Whether commands may reach the network (the OS sandbox cuts it off otherwise).
    pub allow_network: bool,
    /// Set the project's dependencies up before its first checks (`--fetch-deps`).
    pub fetch_deps: bool,
    /// Commands reach the package registries through the network allowlist
    /// (`--allow-network=registries`).
    pub network_allowlist: bool,
    /// How to plan.
    pub routing: RoutingChoice,
    /// Token and cost limits (`--max-tokens`, `--max-cost`).
    pub budget: RunBudget,
    /// Images given with the prompt rather than named in it (an editor's pasted image):
    /// they reach the models like an `@image.png` reference does.
    pub images: Vec<braincode_config::ImageAttachment>,
}

impl RunRequest {
    /// A new session's read-only request for `prompt` in `project_root`: auto-routed, the
    /// settings' brain and mode, no network, no budget beyond the brain's, no images. Callers
    /// change what differs with struct update syntax.
    pub fn new(prompt: impl Into<String>, project_root: impl Into<PathBuf>) -> Self {
        Self {
            prompt: prompt.into(),
            project_root: project_root.into(),
            session_id: None,
            brain_id: None,
            mode: None,
            permission: PermissionMode::ReadOnly,
            allow_network: false,
            fetch_deps: false,
            network_allowlist: false,
            routing: RoutingChoice::Auto,
            budget: RunBudget::default(),
            images: Vec::new(),
        }
    }
}

/// Where the run's records go.
#[derive(Clone, Default)]
pub enum JournalTarget {
    /// `<home>/sessions/<id>.jsonl` (the default).
    #[default]
    Session,
    /// Memory only (tests, benchmarks).
    Memory(MemoryJournal),
    /// Nowhere.
    Disabled,
}

/// What the run is connected to.
#[derive(Clone)]
pub struct RunServices {
    /// The Braincode home.
    pub home: Home,
    /// Who watches the events.
    pub subscribers: Vec<Arc<dyn EventSubscriber>>,
    /// Who approves risky calls (none: they are blocked unless the mode allows them).
    pub approver: Option<Arc<dyn ApprovalHandler>>,
    /// Fires on Ctrl-C / Esc / HTTP cancel / a termination signal.
    pub cancel: CancellationToken,
    /// Why the run was cancelled, when whoever fires `cancel` says (e.g. `SIGTERM received`);
    /// set it before cancelling. Shown in the report's error.
    pub cancel_reason: Arc<OnceLock<String>>,
    /// Replaces model endpoints (benchmarks, in-process tests).
    pub client_override: Option<Arc<dyn ClientOverride>>,
    /// Retry and timeout settings of remote clients.
    pub client_options: ClientOptions,
    /// Where records go.
    pub journal: JournalTarget,
    /// Journaled results to serve instead of calling (replay, resume); the run takes the
    /// tape's run id.
    pub tape: Option<Arc<Tape>>,
    /// MCP servers shared by the runs of an interactive session (none: each run starts and
    /// stops its own).
    pub mcp_hubs: Option<Arc<crate::mcp::McpHubCache>>,
    /// MCP servers the caller brings besides the configured ones (an editor's, over ACP),
    /// planned like the user's own servers: same sandbox, same shadowing by name.
    pub extra_mcp_servers: Vec<braincode_config::McpServerConfig>,
    /// The person's editor's files (an ACP client's `fs/*`): the project's reads and edits go
    /// through it, so unsaved buffers are seen and edits land in the editor's undo history.
    pub editor_files: Option<Arc<dyn braincode_tools::EditorFiles>>,
}

impl RunServices {
    /// Services with defaults for `home`.
    pub fn new(home: Home) -> Self {
        Self {
            home,
            subscribers: Vec::new(),
            approver: None,
            cancel: CancellationToken::new(),
            cancel_reason: Arc::new(OnceLock::new()),
            client_override: None,
            client_options: ClientOptions::default(),
            journal: JournalTarget::Session,
            tape: None,
            mcp_hubs: None,
            extra_mcp_servers: Vec::new(),
            editor_files: None,
        }
    }
}

/// Runs one prompt to its one final answer, with the configuration loaded for it.
pub async fn run(request: RunRequest, services: RunServices) -> FinalReport {
    let loaded = RunConfig::load(&services.home, &LoadOptions::from(&request));
    Box::pin(run_loaded(
        request,
        services,
        loaded.map_err(StartError::from),
    ))
    .await
}

/// Runs one prompt with the configuration its caller loaded (`braincode run` loads it once,
/// and reads the brain it says and the models it needs from the same load). A run that
/// cannot start (its configuration did not load, or its caller found the embedded model it
/// needs missing) is journaled: its `run_start`, then a failed `run_error` saying why.
pub async fn run_loaded(
    mut request: RunRequest,
    services: RunServices,
    loaded: Result<RunConfig, StartError>,
) -> FinalReport {
    let started = Instant::now();
    let session_id = request.session_id.clone().unwrap_or_else(new_session_id);
    // A replay or a resume is the same run again: same run id, so the same context ids.
    let run_id = services
        .tape
        .as_deref()
        .map_or_else(new_run_id, |tape| tape.run_id().to_string());
    let mut history = History::probe(
        &services.home,
        &request,
        &session_id,
        services.tape.as_deref(),
    );
    // The run's end extends the session's handoff; a replay says what the run said.
    let handoff = match services.tape.as_deref().filter(|tape| tape.is_strict()) {
        Some(tape) => finish::HandoffPlan::Replayed(tape.run_end_handoff()),
        None => finish::HandoffPlan::Extend(std::mem::take(&mut history.handoff)),
    };
    let opened = opening::open_journal(&services, &session_id, &run_id);
    let live = Arc::new(LiveState::new(session_id.to_string()));
    let mut subscribers: Vec<Arc<dyn EventSubscriber>> = vec![live.clone()];
    subscribers.extend(services.subscribers.iter().cloned());
    // The run's limits: the request's (a replay or resume has the run's own, from its
    // `run_start`, so a run that stopped at its budget stops at the same record again) within
    // the brain's, priced with the catalogue's models.
    if let Ok(config) = &loaded {
        request.budget = request.budget.within(config.brain.budget);
    }
    let budget_watch = Arc::new(budget::BudgetWatch::new(
        request.budget,
        (loaded.iter())
            .flat_map(|config| &config.models)
            .filter_map(|m| Some((m.id.clone(), m.pricing?)))
            .collect(),
        services.cancel.clone(),
        services.cancel_reason.clone(),
        services.tape.clone(),
    ));
    subscribers.push(budget_watch);
    let sink = RunSink::new(session_id.to_string(), opened.journal, subscribers);
    let stats = Arc::new(ToolStats::default());

    // The base is built before the first record, so that record can say what project support
    // was found; it is quick and never waits on a model, a hook or the network.
    let setup = loaded.map(|loaded| {
        build_base(
            &request,
            &services,
            &sink,
            RunIdentity {
                session_id: &session_id,
                run_id: &run_id,
                live: live.clone(),
            },
            loaded,
            stats.clone(),
        )
    });
    sink.record(start_record(
        &request,
        &run_id,
        services.tape.as_deref(),
        setup.as_ref().ok(),
    ));
    for warning in opened.warnings {
        sink.warning(warning);
    }
    for notice in opened.notices {
        sink.notice(notice);
    }
    let mcp = setup.as_ref().ok().map(|base| base.mcp.clone());
    if let Some(mcp) = &mcp {
        mcp.kick_off(
            services
                .tape
                .as_deref()
                .map(crate::tape::Tape::mcp_reports)
                .unwrap_or_default(),
        );
    }

    let outcome = match setup {
        Err(why) => Err(RunError::Start(why)),
        Ok(shared) => {
            // Boxed: the pipeline's state is large, and the caller's future stays small.
            let pipeline = Box::pin(pipeline(&request, &services, &sink, shared, history));
            tokio::select! {
                biased;
                () = services.cancel.cancelled() => Err(RunError::Cancelled),
                result = pipeline => result,
            }
        }
    };
    // A stopped run's worker tasks are aborted with the pipeline; one may still be between two
    // awaits, recording. The answer and the report are made once they have all let go.
    if outcome.is_err() {
        sink.tasks_ended(std::time::Duration::from_secs(5)).await;
    }
    if let Some(tape) = services.tape.as_deref()
        && tape.resume_of().is_some()
    {
        let used = tape.used();
        sink.warning(format!(
            "resumed run {run_id}: reused {} model replies, {} tool results and {} hook results from the journal; nothing that had finished was run again, and a call that was interrupted after it started was run again only if it only reads",
            used.model_replies, used.tool_results, used.hooks
        ));
    }
    if let Some(mcp) = mcp {
        mcp.shutdown().await;
    }
    let cancel_reason = services.cancel_reason.get().map(String::as_str);
    finish::finish(
        &sink,
        &live,
        outcome,
        &stats,
        started,
        &request.prompt,
        cancel_reason,
        handoff,
    )
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The configuration did not load.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The router was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The request cannot be routed (an image no routed model can see).
    #[error("{0}")]
    Routing(String),
}

/// Plans without running anything (`braincode run --dry-run`): no journal, no tools.
pub async fn plan_only(
    request: RunRequest,
    services: RunServices,
) -> Result<RuntimePlan, PlanError> {
    let loaded = RunConfig::load(&services.home, &LoadOptions::from(&request))?;
    Box::pin(plan_loaded(request, services, loaded)).await
}

/// [`plan_only`] with the configuration its caller loaded.
pub async fn plan_loaded(
    request: RunRequest,
    services: RunServices,
    loaded: RunConfig,
) -> Result<RuntimePlan, PlanError> {
    let session_id = request.session_id.clone().unwrap_or_else(new_session_id);
    let sink = RunSink::new(session_id.to_string(), None, services.subscribers.clone());
    let run_id = new_run_id();
    let base = build_base(
        &request,
        &services,
        &sink,
        RunIdentity {
            session_id: &session_id,
            run_id: &run_id,
            live: Arc::new(LiveState::new(session_id.to_string())),
        },
        loaded,
        Arc::new(ToolStats::default()),
    );
    let shared = state::RunShared::new(base, state::PreparedRequest::plain(&request.prompt));
    let mut new_id = || shared.ids.next();
    plan::make_plan(&shared, request.routing, &mut new_id)
        .await
        .map(|planned| planned.plan)
        .map_err(|failure| match failure {
            plan::PlanFailure::Cancelled => PlanError::Cancelled,
            plan::PlanFailure::ImageRouting(message) => PlanError::Routing(message),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run can be spawned on a multi-threaded runtime (the TUI and the web panel do).
    #[allow(dead_code)]
    fn run_future_is_send(request: RunRequest, services: RunServices) {
        fn send<T: Send>(_: T) {}
        send(run(request, services));
    }
}
