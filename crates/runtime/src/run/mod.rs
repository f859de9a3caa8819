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

mod dispatch;
mod finish;
mod plan;
mod plan_review;
mod primary;
pub mod prompts;
mod review;
mod setup;
mod state;
mod workers;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use braincode_brain::{RuntimePlan, mode_policy, routing_limits};
use braincode_config::journal::clip_text;
use braincode_config::{
    ExpandedPrompt, Home, JournalWriter, ReferenceContext, continuity_block, expand_references,
    session_has_runs,
};
use braincode_llm::{ClientOptions, ContentPart};
use braincode_protocol::{
    ClarificationRequest, ContextPlan, FinalReport, JournalEntry, Mode, Record, RoutingRecord,
    RunStart, SessionId, TaskStatus, TodoPlan, TodoUpdate, WorkerPhase,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use plan::RoutingChoice;

use crate::agent::ToolStats;
use crate::approval::{ApprovalHandler, PermissionMode};
use crate::git::PatchBaseline;
use crate::hooks::{HookEvent, run_hooks};
use crate::models::ClientOverride;
use crate::sink::{EventSubscriber, JournalAppend, MemoryJournal, RunSink};
use finish::{Draft, Stop};
use plan_review::plan_review;
use prompts::ForwardedResult;
use setup::{build_shared, environment_section, load_everything};

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
    /// How to plan.
    pub routing: RoutingChoice,
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
        }
    }
}

/// A fresh, sortable session id: `YYYYMMDD-HHMMSS-xxxxxx`.
pub fn new_session_id() -> SessionId {
    let stamp = chrono::Local::now().format("%Y%m%d-%H%M%S");
    let suffix: String = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .chars()
        .take(6)
        .collect();
    // The format only produces [0-9a-f-], which is always a valid id.
    SessionId::new(format!("{stamp}-{suffix}")).unwrap_or_else(|_| fallback_session_id())
}

fn fallback_session_id() -> SessionId {
    match SessionId::new(uuid::Uuid::new_v4().simple().to_string()) {
        Ok(id) => id,
        Err(_) => unreachable_id(),
    }
}

#[allow(clippy::panic)]
fn unreachable_id() -> SessionId {
    // A UUID's simple form is 32 hex digits, which SessionId always accepts.
    panic!("a UUID was rejected as a session id")
}

fn new_context_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

struct JournalFile(JournalWriter);

impl JournalAppend for JournalFile {
    fn append(&mut self, entry: &JournalEntry) -> std::io::Result<()> {
        self.0.append_entry(entry).map_err(std::io::Error::other)
    }
}

/// Whether a run continues earlier runs of its session, decided before the run's own first
/// record lands in the journal.
struct History {
    continuing: bool,
    /// The continuity block to lead the request with (none for a new session, or when the
    /// prompt references this session with `@@` itself).
    block: Option<String>,
}

impl History {
    fn probe(home: &Home, request: &RunRequest, session_id: &SessionId) -> History {
        let continuing = request.session_id.is_some() && session_has_runs(home, session_id);
        let block = if continuing && !request.prompt.contains(&format!("@@{session_id}")) {
            continuity_block(home, session_id)
        } else {
            None
        };
        History { continuing, block }
    }
}

/// The run's first record: the prompt as the user gave it (clipped to
/// [`finish::JOURNALED_PROMPT_BYTES`]) and the project, so that a run interrupted at any
/// point is listed with its prompt.
fn opening_record(
    request: &RunRequest,
    support: Option<braincode_protocol::ProjectSupportSummary>,
) -> Record {
    Record::RunStart(RunStart {
        prompt: clip_text(&request.prompt, finish::JOURNALED_PROMPT_BYTES).into_owned(),
        plan: None,
        project_support: Some(support.unwrap_or_else(|| {
            braincode_protocol::ProjectSupportSummary {
                root: request.project_root.display().to_string(),
                ..Default::default()
            }
        })),
        model: None,
        attempt: None,
    })
}

/// Runs one prompt to its one final answer.
pub async fn run(request: RunRequest, services: RunServices) -> FinalReport {
    let started = Instant::now();
    let session_id = request.session_id.clone().unwrap_or_else(new_session_id);
    let history = History::probe(&services.home, &request, &session_id);
    let mut early_warnings = Vec::new();
    let journal: Option<Box<dyn JournalAppend>> = match &services.journal {
        JournalTarget::Session => {
            match JournalWriter::open(&services.home, &session_id) {
                Ok(writer) => Some(Box::new(JournalFile(writer))),
                Err(err) => {
                    early_warnings.push(format!("the session journal could not be opened ({err}); this run will not be saved"));
                    None
                }
            }
        }
        JournalTarget::Memory(memory) => Some(Box::new(memory.clone())),
        JournalTarget::Disabled => None,
    };
    let usage = Arc::new(finish::UsageCollector::default());
    let mut subscribers = services.subscribers.clone();
    subscribers.push(usage.clone());
    let sink = RunSink::new(session_id.to_string(), journal, subscribers);
    let mut draft = Draft::new(&request.prompt, &session_id);
    let stats = Arc::new(ToolStats::default());

    // Configuration is read before the first record, so that record can say what project
    // support was found; it is quick and never waits on a model, a hook or the network.
    let setup = load_everything(&services.home, &request).and_then(|loaded| {
        draft.set_brain(&loaded.brain_id, &loaded.brain.name, loaded.mode);
        build_shared(
            &request,
            &services,
            &sink,
            &session_id,
            loaded,
            stats.clone(),
            String::new(),
            Vec::new(),
        )
    });
    sink.record(opening_record(
        &request,
        setup
            .as_ref()
            .ok()
            .map(|shared| shared.support_summary.clone()),
    ));
    for warning in &early_warnings {
        sink.warning(warning.clone());
    }
    draft.warnings.extend(early_warnings);

    let outcome = match setup {
        Err(message) => Err(Stop::Failed(message)),
        Ok(shared) => {
            // Boxed: the pipeline's state is large, and the caller's future stays small.
            let pipeline = Box::pin(pipeline(
                &request,
                &services,
                &sink,
                Box::new(shared),
                history,
                &mut draft,
            ));
            tokio::select! {
                biased;
                () = services.cancel.cancelled() => Err(Stop::Cancelled),
                result = pipeline => result,
            }
        }
    };
    let cancel_reason = services.cancel_reason.get().map(String::as_str);
    finish::finish(
        &sink,
        draft,
        outcome,
        &usage,
        &stats,
        started,
        cancel_reason,
    )
}

/// What an untrusted project had ignored, said once per run (and a trust store that could not
/// be read, which counts as "not trusted").
fn trust_notices(home: &braincode_config::Home, project_root: &std::path::Path) -> Vec<String> {
    let (trust, error) = braincode_config::check_trust(home, project_root);
    let mut notices: Vec<String> = error
        .map(|err| {
            format!("workspace trust could not be read ({err}); treating this project as untrusted")
        })
        .into_iter()
        .collect();
    notices.extend(trust.notice());
    notices
}

/// Plans without running anything (`braincode run --dry-run`): no journal, no tools.
pub async fn plan_only(request: RunRequest, services: RunServices) -> Result<RuntimePlan, String> {
    let session_id = request.session_id.clone().unwrap_or_else(new_session_id);
    let sink = RunSink::new(session_id.to_string(), None, services.subscribers.clone());
    let loaded = load_everything(&services.home, &request)?;
    let shared = build_shared(
        &request,
        &services,
        &sink,
        &session_id,
        loaded,
        Arc::new(ToolStats::default()),
        String::new(),
        Vec::new(),
    )?;
    let mut new_id = new_context_id;
    plan::make_plan(&shared, request.routing, &mut new_id)
        .await
        .map(|planned| planned.plan)
        .map_err(|failure| match failure {
            plan::PlanFailure::Cancelled => "cancelled".to_string(),
            plan::PlanFailure::ImageRouting(message) => message,
        })
}

async fn pipeline(
    request: &RunRequest,
    services: &RunServices,
    sink: &RunSink,
    mut shared: Box<state::RunShared>,
    history: History,
    draft: &mut Draft,
) -> Result<(), Stop> {
    let home = &services.home;
    let continuing = history.continuing;
    let (brain_id, mode) = (shared.brain_id.clone(), shared.mode);
    for notice in trust_notices(home, &request.project_root) {
        sink.warning(notice.clone());
        draft.warnings.push(notice);
    }
    if let (Err(reason), PermissionMode::Yes) = (&shared.sandbox, request.permission) {
        let notice = format!(
            "commands cannot be sandboxed ({reason}): each command needs a person's approval, so this run refuses them"
        );
        sink.warning(notice.clone());
        draft.warnings.push(notice);
    }

    // Hooks before anything else sees the prompt; the read-only environment probe overlaps them.
    let source = if continuing { "resume" } else { "startup" };
    let hooks = async {
        let start = run_hooks(
            &shared.hooks,
            HookEvent::SessionStart,
            source,
            &shared.hook_env,
            json!({"source": source}),
            &shared.cancel,
        )
        .await;
        let submit = run_hooks(
            &shared.hooks,
            HookEvent::UserPromptSubmit,
            "",
            &shared.hook_env,
            json!({"prompt": request.prompt}),
            &shared.cancel,
        )
        .await;
        (start, submit)
    };
    let ((start, submit), environment) = tokio::join!(
        hooks,
        environment_section(&request.project_root, &brain_id, mode)
    );
    shared.sections.environment = environment;
    for (event, result, matcher) in [
        (HookEvent::SessionStart, &start, Some(source)),
        (HookEvent::UserPromptSubmit, &submit, None),
    ] {
        if result.is_empty() {
            continue;
        }
        let record = result.to_record(event, matcher);
        sink.record(match event {
            HookEvent::SessionStart => Record::HookSessionStart(record),
            _ => Record::HookUserPromptSubmit(record),
        });
        for problem in result.problems() {
            sink.warning(problem.clone());
            draft.warnings.push(problem);
        }
        if let Some(reason) = &result.blocked_reason {
            return Err(Stop::Blocked(format!(
                "the {} hook blocked this run: {reason}",
                event.name()
            )));
        }
    }

    // The request as agents see it: hook context, references, continuity.
    let mut text = request.prompt.clone();
    let hook_context: Vec<&String> = start
        .additional_context
        .iter()
        .chain(&submit.additional_context)
        .collect();
    if !hook_context.is_empty() {
        let bullets: Vec<String> = hook_context
            .iter()
            .map(|c| format!("- {}", c.trim()))
            .collect();
        text = format!("Hook additional context:\n{}\n\n{text}", bullets.join("\n"));
    }
    let expanded: ExpandedPrompt = expand_references(
        &text,
        &ReferenceContext {
            project_root: &request.project_root,
            home,
            settings: &shared.settings,
        },
    );
    let mut text = expanded.text;
    // What the request itself says (no inlined files, no earlier conversation): the heuristic
    // routes on this, so a follow-up is planned for what it asks, not for what came before.
    shared.routing_text = text
        .split_once(braincode_config::ATTACHMENTS_HEADING)
        .map_or(text.as_str(), |(own, _)| own)
        .to_string();
    if let Some(block) = history.block {
        text = format!("{block}\n\nCurrent request:\n{text}");
        shared.continued = true;
    }
    shared.request = text;
    shared.images = expanded
        .images
        .into_iter()
        .map(|image| ContentPart::Image {
            mime_type: image.mime_type,
            data: image.data_base64,
        })
        .collect();
    let shared = Arc::new(*shared);

    // Plan; the patch baseline (git) is taken meanwhile, before any agent can act.
    let mut new_id = new_context_id;
    let (plan, baseline) = tokio::join!(
        plan::make_plan(&shared, request.routing, &mut new_id),
        PatchBaseline::capture(&request.project_root)
    );
    let plan::Planned { plan, router_model } = plan.map_err(|f| match f {
        plan::PlanFailure::Cancelled => Stop::Cancelled,
        plan::PlanFailure::ImageRouting(message) => Stop::failed(message),
    })?;
    draft.set_plan(&plan);
    sink.record(Record::Routing(RoutingRecord {
        source: plan.source,
        primary_role: plan.primary,
        reason: plan.reason.clone(),
        confidence: plan.confidence,
        model: router_model,
        fallback_reason: plan.fallback_reason.clone(),
    }));
    sink.record(Record::ContextPlan(ContextPlan {
        context: serde_json::to_value(&plan.brain_context).unwrap_or_default(),
    }));
    sink.record(Record::TodoPlan(TodoPlan {
        todos: plan.todos.clone(),
        dependencies: plan.dependencies.clone(),
        reason: Some(plan.reason.clone()),
    }));
    for warning in &plan.warnings {
        draft.warnings.push(warning.clone());
    }

    // Clarification gate: stop before any worker or tool.
    if plan.clarification.required {
        sink.record(Record::ClarificationRequest(ClarificationRequest {
            clarification: plan.clarification.clone(),
            attempt: None,
        }));
        let todo_ids: Vec<String> = plan.todos.iter().map(|t| t.id.clone()).collect();
        draft.block_todos("waiting for clarification");
        sink.record(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Primary,
            role: Some(plan.primary),
            status: TaskStatus::Blocked,
            todo_ids,
            todos: draft.todos.clone(),
            summary: None,
            error: Some("waiting for clarification".into()),
        }));
        draft.clarification = Some(plan.clarification.clone());
        return Ok(());
    }

    if let Some(review) = plan_review(&shared, &plan) {
        draft.plan_review = Some(finish::plan_review_for_report(&review));
        sink.record(Record::ExecutionPlanReview(review));
    }

    // Support workers.
    let limits = routing_limits(&shared.brain.routing, shared.mode);
    let support_runs =
        workers::run_support_pool(&shared, &plan, limits.max_parallel_agents as usize)
            .await
            .map_err(Stop::from_agent)?;
    for (index, run) in &support_runs {
        if let Some(warning) = draft.record_worker(*index, run) {
            sink.warning(warning);
        }
        sink.record(Record::TodoUpdate(TodoUpdate {
            phase: WorkerPhase::Support,
            role: Some(run.role),
            status: run.status(),
            todo_ids: plan.workers[*index].todo_ids.clone(),
            todos: draft.todos.clone(),
            summary: Some(braincode_context::clip_chars(&run.result.summary, 600)),
            error: None,
        }));
    }
    let results: Vec<ForwardedResult> = support_runs
        .values()
        .map(workers::WorkerRun::forwarded)
        .collect();

    // Primary.
    let Some(primary_plan) = primary::primary_worker(&plan).cloned() else {
        return Err(Stop::failed("the plan has no primary worker"));
    };
    let policy = mode_policy(shared.mode);
    let dispatch = (shared.settings.features.dynamic_dispatch
        && policy.max_dynamic_dispatches > 0
        && !matches!(
            primary_plan.role,
            braincode_protocol::Role::Review | braincode_protocol::Role::ImageMaker
        ))
    .then(|| {
        Arc::new(dispatch::DispatchTool::new(
            shared.clone(),
            plan.brain_context.id.clone(),
            primary_plan.role,
            policy.max_dynamic_dispatches,
            new_context_id,
        ))
    });
    let answer =
        primary::run_primary(&shared, &plan, &primary_plan, &results, dispatch.clone()).await;
    if let Some(dispatch) = &dispatch {
        draft.dispatched = match dispatch.runs.lock() {
            Ok(runs) => runs.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
    }
    let answer = match answer {
        Ok(answer) => answer,
        Err(primary::PrimaryFailure::Cancelled) => return Err(Stop::Cancelled),
        Err(primary::PrimaryFailure::Failed(message)) => {
            draft.fail_todos(&primary_plan.todo_ids, &message);
            return Err(Stop::Failed(message));
        }
    };
    draft.record_primary(&primary_plan, &answer.text, &answer.model);

    // Review.
    let patch = match &baseline {
        Some(baseline) => baseline.summarize(&request.project_root).await,
        None => None,
    };
    draft.patch = patch.clone();
    let review_needed = (plan.requires_review || shared.gate.review_required())
        && primary_plan.role != braincode_protocol::Role::Review;
    if review_needed {
        let worker = review::review_worker(&shared, &plan, &mut new_id);
        let review_run = review::run_review(
            &shared,
            &plan,
            worker,
            &answer.text,
            &results,
            patch.as_ref(),
        )
        .await
        .map_err(Stop::from_agent)?;
        if let Some(warning) = draft.record_review(&plan, review_run) {
            sink.warning(warning);
        }
    }

    // Stop hook: last word before the answer. The payload (a copy of the answer) is only
    // built when a Stop hook exists.
    let stop = if shared.hooks.iter().any(|h| h.event == HookEvent::Stop) {
        run_hooks(
            &shared.hooks,
            HookEvent::Stop,
            "",
            &shared.hook_env,
            json!({"stop_hook_active": false, "last_assistant_message": answer.text}),
            &shared.cancel,
        )
        .await
    } else {
        crate::hooks::HookResult::default()
    };
    let mut summary = trimmed(answer.text);
    if !stop.is_empty() {
        sink.record(Record::HookStop(stop.to_record(HookEvent::Stop, None)));
        let feedback: Vec<String> = stop
            .blocked_reason
            .iter()
            .chain(&stop.additional_context)
            .cloned()
            .collect();
        if !feedback.is_empty() {
            summary.push_str("\n\nHook feedback:\n");
            summary.push_str(
                &feedback
                    .iter()
                    .map(|f| format!("- {}", f.trim()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
        }
        for problem in stop.problems() {
            draft.warnings.push(problem);
        }
    }
    draft.summary = summary;
    Ok(())
}

/// `text` without its leading and trailing whitespace, reusing its buffer.
fn trimmed(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    let leading = text.len() - text.trim_start().len();
    text.drain(..leading);
    text
}
