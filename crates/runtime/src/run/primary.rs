//! The primary agent: merges worker results and acts with tools, trying each model
//! candidate in turn.

use std::sync::Arc;

use braincode_brain::{RuntimePlan, RuntimeWorkerPlan};
use braincode_llm::{Candidate, ChatMessage, ContentPart, ErrorKind, ModelError};
use braincode_protocol::{
    Handoff, HandoffTrigger, Phase, Record, Role, RunError, WorkerEnd, WorkerPhase, WorkerStart,
};
use braincode_tools::fs::list_files::ListFiles;
use braincode_tools::{SharedTool, Tool, ToolContext, ToolMode, builtin_tools};

use crate::agent::{AgentError, AgentSetup, run_agent};
use crate::approval::PermissionMode;
use crate::run::dispatch::DispatchTool;
use crate::run::fallback::{Fallback, StopRule, each_candidate};
use crate::run::image;
use crate::run::prompts::{ForwardedResult, primary_prompt};
use crate::run::state::{AgentIdentity, RunShared};

/// Tool turns the primary may take.
const PRIMARY_MAX_TURNS: u32 = 40;
/// Files listed in the overview given to a primary that cannot use tools.
const OVERVIEW_FILES: u64 = 60;
/// README characters in that overview.
const OVERVIEW_README_CHARS: usize = 1_500;

/// What a primary without tools gets instead of exploring: the project's files (the
/// `list_files` tool's own listing) and the start of its README.
async fn project_overview(shared: &RunShared) -> String {
    let context = ToolContext {
        project_root: shared.project_root.clone(),
        cancel: shared.cancel.clone(),
        sandbox: None,
        editor: None,
        lazy: None,
    };
    let listing = ListFiles::default()
        .call(serde_json::json!({"maxFiles": OVERVIEW_FILES}), &context)
        .await;
    let mut overview = if listing.is_error {
        String::new()
    } else {
        format!("Files:\n{}\n", listing.content.trim())
    };
    // The README goes to a model: read it contained to the project (a `README.md ->
    // ~/.ssh/id_rsa` or `-> /proc/self/environ` is refused, a FIFO never opened) and bounded
    // (four bytes per character kept).
    let readme = braincode_config::ReadScope::new(&shared.project_root)
        .ok()
        .and_then(|scope| {
            [
                "README.md",
                "README",
                "readme.md",
                "README.rst",
                "README.txt",
            ]
            .iter()
            .find_map(|name| {
                match scope.read_to_string(std::path::Path::new(name), OVERVIEW_README_CHARS * 4) {
                    Ok(read) => Some(read.text),
                    Err(err) if err.is_not_found() => None,
                    Err(err) => {
                        tracing::warn!("project overview: {err}");
                        None
                    }
                }
            })
        });
    if let Some(readme) = readme {
        overview.push_str(&format!(
            "\nREADME (start):\n{}\n",
            braincode_context::clip_chars(readme.trim(), OVERVIEW_README_CHARS)
        ));
    }
    overview
}

/// The primary's answer, with its conversation when it used tools (a fix pass continues it).
pub(crate) struct PrimaryAnswer {
    pub text: String,
    /// The model that answered.
    pub model: String,
    pub conversation: Option<PrimaryConversation>,
}

/// The primary agent as it stopped: its setup, services and whole conversation, so a fix
/// pass sends the failing checks to the same agent instead of starting a new one.
pub(crate) struct PrimaryConversation {
    setup: AgentSetup,
    services: crate::agent::AgentServices,
    messages: Vec<ChatMessage>,
    /// The agent session of the first pass (`<context>-<attempt>`).
    session: String,
}

/// Why the primary gave no answer.
pub(crate) enum PrimaryFailure {
    Cancelled,
    Failed(String),
}

/// The local tool mode for a permission mode.
pub(crate) fn tool_mode(permission: PermissionMode) -> ToolMode {
    match permission {
        PermissionMode::ReadOnly => ToolMode::ReadOnly,
        // The gate decides who approves each edit and command.
        PermissionMode::Ask | PermissionMode::AllowEdits | PermissionMode::Yes => ToolMode::All,
    }
}

pub(crate) async fn run_primary(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    worker: &RuntimeWorkerPlan,
    results: &[ForwardedResult],
    dispatch: Option<Arc<DispatchTool>>,
) -> Result<PrimaryAnswer, PrimaryFailure> {
    let role = worker.role;
    if role == Role::ImageMaker {
        // No text agent: the image engine is the primary.
        return image::run_image_primary(shared, plan, worker).await;
    }
    let selection = shared
        .factory
        .candidates(&worker.model_chain, !shared.images.is_empty());
    if selection.is_empty() {
        let message = selection.error_message(role.as_str());
        shared.sink.record(Record::RunError(RunError {
            error: message.clone(),
            kind: Some(ErrorKind::Config.as_str().into()),
            attempt: None,
            will_fallback: Some(false),
            duration_ms: None,
            status: None,
        }));
        return Err(PrimaryFailure::Failed(message));
    }
    let mut errors = Vec::new();
    let outcome = each_candidate(
        &selection.usable,
        StopRule::Run,
        |candidate, attempt| {
            attempt_primary(
                shared,
                plan,
                worker,
                results,
                dispatch.as_ref(),
                candidate,
                attempt,
            )
        },
        |failure| {
            let error = &failure.error;
            if let AgentError::ContextTooLarge { estimated, limit } = error {
                shared.sink.record(Record::Handoff(Handoff {
                    summary: format!("The {role} agent stopped: {error}"),
                    focus: Some("automatic context-size guard".into()),
                    trigger: Some(HandoffTrigger::Auto),
                    estimated_bytes: Some(*estimated as u64),
                    limit_bytes: Some(*limit as u64),
                    summarizer: None,
                    summarizer_fallback: None,
                }));
            }
            let kind = match error {
                AgentError::Model(err) => err.kind.as_str().to_string(),
                AgentError::ContextTooLarge { .. } => "context_too_long".into(),
                AgentError::Cancelled => "aborted".into(),
            };
            let text = match error {
                AgentError::Model(err) => err.humanized(),
                other => other.to_string(),
            };
            shared.sink.record(Record::RunError(RunError {
                error: text.clone(),
                kind: Some(kind),
                attempt: Some(failure.attempt),
                will_fallback: Some(failure.will_fallback),
                duration_ms: None,
                status: None,
            }));
            errors.push(text);
            if failure.will_fallback {
                shared.sink.warning(format!(
                    "primary: {} failed; trying the next model",
                    failure.model
                ));
            }
        },
    )
    .await;
    match outcome {
        Fallback::Done(answer) => Ok(answer),
        Fallback::Cancelled => Err(PrimaryFailure::Cancelled),
        Fallback::Exhausted(_) => Err(PrimaryFailure::Failed(errors.join("\n"))),
    }
}

/// One attempt of the primary on one model: an empty answer is a failure like any other.
#[allow(clippy::too_many_arguments)]
async fn attempt_primary(
    shared: &Arc<RunShared>,
    plan: &RuntimePlan,
    worker: &RuntimeWorkerPlan,
    results: &[ForwardedResult],
    dispatch: Option<&Arc<DispatchTool>>,
    candidate: Candidate,
    attempt: u32,
) -> Result<PrimaryAnswer, AgentError> {
    let candidate = &candidate;
    let role = worker.role;
    let model_id = candidate.definition.id.clone();
    // The run itself started with its `run_start` record; each attempt of the primary is a
    // worker start of phase `primary` (the plan is in `routing`/`todo_plan`).
    shared.sink.record(Record::WorkerStart(WorkerStart {
        phase: WorkerPhase::Primary,
        worker: role,
        goal: worker.goal.clone(),
        handoff: None,
        model: Some(model_id.clone()),
        agent_session_id: Some(format!("{}-{attempt}", worker.context_id)),
        attempt: Some(attempt),
        worktree: None,
    }));
    shared
        .sink
        .status(format!("primary {role} running on {model_id}"));
    let mut tools: Vec<SharedTool> = Vec::new();
    let mut resolver = None;
    // A conversational reply (the fast path) gets no tools: their schemas would be most of
    // the request, and a greeting uses none.
    if candidate.definition.supports_tools && !plan.conversational {
        tools = builtin_tools(
            tool_mode(shared.permission),
            &shared.tools_config,
            shared.exec_sessions.clone(),
        );
        if let Some(dispatch) = dispatch {
            tools.push(dispatch.clone());
        }
        if shared.permission != PermissionMode::ReadOnly && image::can_generate(shared) {
            tools.push(Arc::new(image::GenerateImageTool::new(shared.clone())));
        }
        let (mcp_tools, mcp_resolver) = shared
            .mcp
            .agent_tools(role, tool_mode(shared.permission))
            .await;
        tools.extend(mcp_tools);
        resolver = mcp_resolver;
    }
    let tool_names: Vec<String> = tools.iter().map(|t| t.definition().name.clone()).collect();
    let mut notes: Vec<String> = Vec::new();
    if dispatch.is_some() && !tools.is_empty() {
        notes.push(
            "Use dispatch_specialist only when a focused specialist answer would change what you do."
                .into(),
        );
    }
    if resolver.is_some() {
        notes.push(shared.mcp.usage_note(role));
    }
    let note = (!notes.is_empty()).then(|| notes.join("\n"));
    let dispatch_note = note.as_deref();
    let overview = if tools.is_empty() && !plan.conversational {
        Some(project_overview(shared).await)
    } else {
        None
    };
    let prompt = primary_prompt(
        &shared.sections,
        &shared.request,
        &tool_names,
        results,
        dispatch_note,
        overview.as_deref(),
    );
    let mut content = vec![ContentPart::Text { text: prompt }];
    content.extend(shared.images.iter().cloned());
    let identity = AgentIdentity {
        role,
        phase: Phase::Primary,
        task_id: Some(worker.context_id.as_str()),
        parent_id: Some(plan.brain_context.id.as_str()),
        agent_session_id: format!("{}-{attempt}", worker.context_id),
        attempt,
    };
    let setup = AgentSetup {
        tools,
        resolver,
        max_turns: PRIMARY_MAX_TURNS,
        thinking: worker.thinking_level,
        stream_text: true,
        ..shared.agent_setup(identity, candidate)
    };
    let client = shared
        .factory
        .client(candidate)
        .await
        .map_err(AgentError::Model)?;
    let services = shared.services(client);
    let outcome = run_agent(&setup, &services, vec![ChatMessage::User { content }]).await?;
    if outcome.text.trim().is_empty() {
        return Err(AgentError::Model(
            ModelError::new(
                ErrorKind::EmptyReply,
                format!(
                    "{model_id} returned an empty answer via {}",
                    candidate.definition.api.as_str()
                ),
            )
            .with_model(model_id),
        ));
    }
    shared.sink.record(Record::WorkerEnd(WorkerEnd {
        phase: WorkerPhase::Primary,
        worker: role,
        result: None,
        attempt: Some(attempt),
    }));
    let conversation = (!setup.tools.is_empty()).then(|| PrimaryConversation {
        session: format!("{}-{attempt}", worker.context_id),
        setup,
        services,
        messages: outcome.messages,
    });
    Ok(PrimaryAnswer {
        text: outcome.text,
        model: model_id,
        conversation,
    })
}

/// One fix pass: `prompt` (the failing checks, the review's required changes) goes to the
/// same primary agent, which goes on with its tools. Its records carry the agent session
/// `<context>-<attempt>-fix<iteration>`.
pub(crate) async fn continue_primary(
    shared: &Arc<RunShared>,
    answer: &mut PrimaryAnswer,
    prompt: String,
    iteration: u32,
) -> Result<(), PrimaryFailure> {
    let Some(conversation) = answer.conversation.as_mut() else {
        return Err(PrimaryFailure::Failed(
            "the primary model cannot use tools, so it cannot fix the change".into(),
        ));
    };
    let session = format!("{}-fix{iteration}", conversation.session);
    let mut setup = conversation.setup.clone();
    setup.origin.agent_session_id = Some(session.clone());
    let role = setup.agent.role;
    shared.sink.record(Record::WorkerStart(WorkerStart {
        phase: WorkerPhase::Primary,
        worker: role,
        goal: format!("fix pass {iteration}"),
        handoff: None,
        model: Some(setup.model_id.clone()),
        agent_session_id: Some(session),
        attempt: setup.origin.attempt,
        worktree: None,
    }));
    shared
        .sink
        .status(format!("primary {role} fixing (pass {iteration})"));
    let mut messages = std::mem::take(&mut conversation.messages);
    messages.push(ChatMessage::user_text(prompt));
    match run_agent(&setup, &conversation.services, messages).await {
        Ok(outcome) => {
            shared.sink.record(Record::WorkerEnd(WorkerEnd {
                phase: WorkerPhase::Primary,
                worker: role,
                result: None,
                attempt: setup.origin.attempt,
            }));
            if !outcome.text.trim().is_empty() {
                answer.text = outcome.text;
            }
            conversation.messages = outcome.messages;
            Ok(())
        }
        Err(AgentError::Cancelled) => Err(PrimaryFailure::Cancelled),
        Err(error) => {
            let text = match &error {
                AgentError::Model(err) => err.humanized(),
                other => other.to_string(),
            };
            Err(PrimaryFailure::Failed(text))
        }
    }
}

/// The primary worker of a plan.
pub(crate) fn primary_worker(plan: &RuntimePlan) -> Option<&RuntimeWorkerPlan> {
    plan.workers
        .iter()
        .find(|w| w.phase == WorkerPhase::Primary)
}
