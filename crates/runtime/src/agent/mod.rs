//! The agent loop: system prompt + messages → model stream → tool calls → gate → execute →
//! tool results → loop, until a final answer or the turn limit.
//!
//! Read tools run in parallel; writing and executing tools run one at a time, in the order the
//! model asked for them. Every tool call gets exactly one answer with its call id — a tool
//! failure, a refusal, a timeout or even a panicking tool becomes the tool's error output, so
//! the model can adapt. Only cancellation and model failures end the loop early.

mod gate;
mod stats;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_llm::{
    ChatMessage, ChatRequest, ErrorKind, ModelClient, ModelError, ModelEvent, ResponseSchema,
    ToolCall, ToolSpec, collect_stream,
};
use braincode_protocol::{
    AgentRef, Record, RunEvent, ThinkingLevel, TokenUsage, ToolCallOrigin, ToolExecutionSummary,
    ToolStage, Usage,
};
use braincode_tools::{
    CacheLookup, EvidenceCache, SharedTool, ToolContext, ToolOutput, ToolPermission,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use gate::{GateOutcome, GateRequest, OpenGate, ToolGate};
pub use stats::ToolStats;

use crate::sink::RunSink;
use braincode_tools::summarize_json;

/// Largest request (system prompt + messages, in bytes of JSON) sent to a provider: 88% of a
/// 2 MiB provider limit, leaving room for tool definitions and framing.
pub const CONTEXT_GUARD_BYTES: usize = 1_845_493;

/// Default wall-clock limit for one tool call, enforced by the loop on top of the tool's own
/// timeouts (a tool that hangs is cancelled and the model is told).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Everything that defines one agent.
#[derive(Clone)]
pub struct AgentSetup {
    /// Who the agent is (role, phase, context, model) — for events.
    pub agent: AgentRef,
    /// Ids for journal records.
    pub origin: ToolCallOrigin,
    /// Catalogue id of the model.
    pub model_id: String,
    /// Provider of the model.
    pub provider: String,
    /// System prompt.
    pub system_prompt: String,
    /// Tools offered (already filtered by mode and by the model's tool support).
    pub tools: Vec<SharedTool>,
    /// Maximum model turns that may call tools.
    pub max_turns: u32,
    /// Reasoning effort.
    pub thinking: ThinkingLevel,
    /// Output cap per model call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Structured output for the final answer.
    pub response_schema: Option<ResponseSchema>,
    /// Wall-clock limit per tool call.
    pub tool_timeout: Duration,
    /// Whether answer text is streamed to subscribers as it arrives.
    pub stream_text: bool,
}

/// Shared services an agent uses.
#[derive(Clone)]
pub struct AgentServices {
    /// The model.
    pub client: Arc<dyn ModelClient>,
    /// Permission + approval gate.
    pub gate: Arc<dyn ToolGate>,
    /// Per-run evidence cache, if enabled.
    pub cache: Option<Arc<EvidenceCache>>,
    /// Event sink.
    pub sink: RunSink,
    /// Project root and cancellation for tools.
    pub tool_context: ToolContext,
    /// Tool-call counters shared by the run.
    pub stats: Arc<ToolStats>,
}

/// How an agent finished.
#[derive(Debug, Clone, Default)]
pub struct AgentOutcome {
    /// Final answer text.
    pub text: String,
    /// The whole conversation (stays with this agent; never forwarded to another one).
    pub messages: Vec<ChatMessage>,
    /// Tokens spent, summed over every model call.
    pub usage: Usage,
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tool calls that failed.
    pub failed_tool_calls: u32,
    /// Whether the turn limit forced the answer.
    pub hit_turn_limit: bool,
}

/// Why an agent stopped without an answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    /// The model call failed.
    #[error("{0}")]
    Model(ModelError),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The conversation outgrew what a provider accepts; a handoff is needed.
    #[error(
        "the conversation is {estimated} bytes, over the {limit}-byte request limit; continue in a new session with a handoff"
    )]
    ContextTooLarge {
        /// Estimated request size.
        estimated: usize,
        /// The guard's limit.
        limit: usize,
    },
}

impl AgentError {
    /// Whether trying the next model candidate makes sense.
    pub fn allows_fallback(&self) -> bool {
        match self {
            AgentError::Model(err) => err.kind.allows_fallback(),
            AgentError::Cancelled | AgentError::ContextTooLarge { .. } => false,
        }
    }
}

/// Runs one agent to its final answer.
pub async fn run_agent(
    setup: &AgentSetup,
    services: &AgentServices,
    mut messages: Vec<ChatMessage>,
) -> Result<AgentOutcome, AgentError> {
    let cancel = services.tool_context.cancel.clone();
    let tools_by_name: BTreeMap<&str, &SharedTool> = setup
        .tools
        .iter()
        .map(|t| (t.definition().name.as_str(), t))
        .collect();
    let tool_specs: Vec<ToolSpec> = setup
        .tools
        .iter()
        .map(|t| {
            let d = t.definition();
            ToolSpec {
                name: d.name.clone(),
                description: d.description.clone(),
                parameters: d.parameters.clone(),
            }
        })
        .collect();

    let mut outcome = AgentOutcome::default();
    let mut turn: u32 = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let out_of_turns = turn >= setup.max_turns;
        if out_of_turns && !tool_specs.is_empty() {
            outcome.hit_turn_limit = true;
            messages.push(ChatMessage::user_text(
                "You have used every tool turn available for this task. Do not call tools. \
                 Answer now with what you have found, and say what is left undone.",
            ));
        }
        let offer_tools = !out_of_turns && !tool_specs.is_empty();
        let request = ChatRequest {
            system: Some(setup.system_prompt.clone()),
            messages: messages.clone(),
            tools: if offer_tools {
                tool_specs.clone()
            } else {
                Vec::new()
            },
            thinking: setup.thinking,
            max_tokens: setup.max_tokens,
            temperature: setup.temperature,
            // Structured output only constrains the final answer, never a tool-calling turn.
            response_schema: if offer_tools {
                None
            } else {
                setup.response_schema.clone()
            },
        };
        guard_request_size(&request)?;

        let completion = call_model(setup, services, request, &cancel).await?;
        outcome.model_calls += 1;
        let message_index = messages.len();
        if let Some(usage) = completion.usage {
            outcome.usage.add(&usage);
            record_usage(setup, services, usage, message_index);
        }
        let tool_calls = if offer_tools {
            completion.tool_calls
        } else {
            Vec::new()
        };
        messages.push(ChatMessage::Assistant {
            text: completion.text.clone(),
            tool_calls: tool_calls.clone(),
        });
        if tool_calls.is_empty() {
            outcome.text = completion.text;
            outcome.messages = messages;
            return Ok(outcome);
        }
        turn += 1;
        let results = execute_calls(setup, services, &tools_by_name, &tool_calls, &cancel).await?;
        for (call, output) in tool_calls.iter().zip(results) {
            outcome.tool_calls += 1;
            if output.is_error {
                outcome.failed_tool_calls += 1;
            }
            messages.push(ChatMessage::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.content,
                is_error: output.is_error,
            });
        }
    }
}

/// How many times one model call is issued when its reply is cut off after content arrived
/// (a model call has no side effects; failures before any content are retried by the client).
const CALL_ATTEMPTS: u32 = 2;

/// One model call, re-issued on the same model when the reply was interrupted; each retry is
/// journaled (`model_retry`) and shown.
async fn call_model(
    setup: &AgentSetup,
    services: &AgentServices,
    request: ChatRequest,
    cancel: &CancellationToken,
) -> Result<braincode_llm::Completion, AgentError> {
    let mut attempt = 1;
    loop {
        match call_model_once(setup, services, request.clone(), cancel).await {
            Err(AgentError::Model(err))
                if err.kind.is_retryable_call() && attempt < CALL_ATTEMPTS =>
            {
                services
                    .sink
                    .record(Record::ModelRetry(braincode_protocol::ModelRetry {
                        model: setup.model_id.clone(),
                        attempt,
                        kind: err.kind.to_string(),
                        message: err.message.clone(),
                        phase: setup.origin.phase.map(|p| p.as_str().to_string()),
                        role: setup.origin.role.map(|r| r.as_str().to_string()),
                    }));
                services.sink.warning(format!(
                    "{}: the reply was cut off ({}); asking the same model again, the partial reply is discarded",
                    setup.model_id, err.message
                ));
                attempt += 1;
            }
            other => return other,
        }
    }
}

async fn call_model_once(
    setup: &AgentSetup,
    services: &AgentServices,
    request: ChatRequest,
    cancel: &CancellationToken,
) -> Result<braincode_llm::Completion, AgentError> {
    let sink = services.sink.clone();
    let agent = setup.agent.clone();
    let stream_text = setup.stream_text;
    let work = async {
        let stream = services
            .client
            .stream(request, cancel.clone())
            .await
            .map_err(|e| with_model(e, &setup.model_id))?;
        collect_stream(stream, move |event| match event {
            ModelEvent::TextDelta { text } if stream_text => sink.text_delta(&agent, text),
            ModelEvent::ReasoningDelta { text } if stream_text => {
                sink.reasoning_delta(&agent, text);
            }
            _ => {}
        })
        .await
        .map_err(|e| with_model(e, &setup.model_id))
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(AgentError::Cancelled),
        result = work => match result {
            Ok(completion) => Ok(completion),
            Err(err) if err.kind == ErrorKind::Cancelled => Err(AgentError::Cancelled),
            Err(err) => Err(AgentError::Model(err)),
        },
    }
}

fn with_model(mut err: ModelError, model_id: &str) -> ModelError {
    if err.model.is_none() {
        err.model = Some(model_id.to_string());
    }
    err
}

fn guard_request_size(request: &ChatRequest) -> Result<(), AgentError> {
    let mut estimated = request.system.as_ref().map_or(0, String::len);
    for message in &request.messages {
        estimated += match message {
            ChatMessage::User { content } => content
                .iter()
                .map(|part| match part {
                    // Images travel separately from the text budget providers count.
                    braincode_llm::ContentPart::Text { text } => text.len(),
                    braincode_llm::ContentPart::Image { .. } => 64,
                })
                .sum::<usize>(),
            ChatMessage::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.raw_arguments.len() + 64)
                        .sum::<usize>()
            }
            ChatMessage::Tool { content, .. } => content.len() + 64,
        };
    }
    if estimated > CONTEXT_GUARD_BYTES {
        return Err(AgentError::ContextTooLarge {
            estimated,
            limit: CONTEXT_GUARD_BYTES,
        });
    }
    Ok(())
}

fn record_usage(setup: &AgentSetup, services: &AgentServices, usage: Usage, message_index: usize) {
    let origin = &setup.origin;
    let session = origin.agent_session_id.clone().unwrap_or_default();
    services.sink.record(Record::TokenUsage(TokenUsage {
        role: origin.role,
        phase: origin.phase,
        brain_id: origin.brain_id.clone(),
        model_id: Some(setup.model_id.clone()),
        provider: Some(setup.provider.clone()),
        agent_session_id: origin.agent_session_id.clone(),
        task_id: origin.task_id.clone(),
        parent_id: origin.parent_id.clone(),
        turn_id: Some(format!("{session}:{message_index}:0")),
        attempt: origin.attempt,
        usage,
    }));
}

/// Runs every call of one assistant turn and returns one output per call, in call order.
async fn execute_calls(
    setup: &AgentSetup,
    services: &AgentServices,
    tools: &BTreeMap<&str, &SharedTool>,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> Result<Vec<ToolOutput>, AgentError> {
    let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
    let mut index = 0;
    while index < calls.len() {
        // A batch is either one run of consecutive read calls (run in parallel) or a single
        // writing/executing call.
        let is_read = |call: &ToolCall| {
            tools
                .get(call.name.as_str())
                .is_some_and(|t| t.definition().permission == ToolPermission::Read)
        };
        let end = if is_read(&calls[index]) {
            let mut end = index + 1;
            while end < calls.len() && is_read(&calls[end]) {
                end += 1;
            }
            end
        } else {
            index + 1
        };

        let mut runnable = Vec::new();
        for (offset, call) in calls[index..end].iter().enumerate() {
            let slot = index + offset;
            match prepare_call(setup, services, tools, call).await {
                Prepared::Done(output) => outputs[slot] = Some(output),
                Prepared::Run(tool) => runnable.push((slot, call, tool)),
            }
        }
        let runs = runnable.into_iter().map(|(slot, call, tool)| async move {
            (slot, run_one(setup, services, tool, call).await)
        });
        let finished = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(AgentError::Cancelled),
            finished = futures::future::join_all(runs) => finished,
        };
        for (slot, output) in finished {
            outputs[slot] = Some(output);
        }
        index = end;
    }
    if cancel.is_cancelled() {
        return Err(AgentError::Cancelled);
    }
    Ok(outputs
        .into_iter()
        .map(|o| o.unwrap_or_else(|| ToolOutput::error("internal error: the call was not run")))
        .collect())
}

enum Prepared<'a> {
    Done(ToolOutput),
    Run(&'a SharedTool),
}

async fn prepare_call<'a>(
    setup: &AgentSetup,
    services: &AgentServices,
    tools: &BTreeMap<&str, &'a SharedTool>,
    call: &ToolCall,
) -> Prepared<'a> {
    let Some(tool) = tools.get(call.name.as_str()).copied() else {
        let available: Vec<&str> = tools.keys().copied().collect();
        return Prepared::Done(ToolOutput::error(format!(
            "unknown tool {:?}; available tools: {}",
            call.name,
            if available.is_empty() {
                "none".to_string()
            } else {
                available.join(", ")
            }
        )));
    };
    if let Some(problem) = &call.argument_error {
        return Prepared::Done(ToolOutput::error(format!(
            "invalid arguments for {}: {problem}. Send the arguments as one JSON object matching the tool's schema.",
            call.name
        )));
    }
    let request = GateRequest {
        call,
        tool: tool.definition(),
        origin: &setup.origin,
    };
    match services.gate.check(request).await {
        GateOutcome::Allow => Prepared::Run(tool),
        GateOutcome::Refuse(message) => Prepared::Done(ToolOutput::error(message)),
    }
}

async fn run_one(
    setup: &AgentSetup,
    services: &AgentServices,
    tool: &SharedTool,
    call: &ToolCall,
) -> ToolOutput {
    let started = Instant::now();
    let definition = tool.definition();
    let args_summary = summarize_json(&call.arguments);
    services.sink.emit(RunEvent::ToolStarted {
        agent: setup.agent.clone(),
        call_id: call.id.clone(),
        tool_name: definition.name.clone(),
        summary: one_line(&call.arguments),
    });
    services
        .sink
        .record(Record::ToolExecutionSummary(ToolExecutionSummary {
            tool_call_id: call.id.clone(),
            tool_name: definition.name.clone(),
            stage: ToolStage::Start,
            origin: setup.origin.clone(),
            args_summary: Some(args_summary),
            is_error: false,
            result_summary: None,
            duration_ms: None,
        }));

    let cached = services
        .cache
        .as_ref()
        .map(|c| c.before_call(&definition.name, &call.arguments));
    let output = match cached {
        Some(CacheLookup::Hit(output) | CacheLookup::Blocked(output)) => output,
        Some(CacheLookup::Miss) | None => {
            let output = execute_isolated(tool, call, services, setup.tool_timeout).await;
            match &services.cache {
                Some(cache) => cache.after_call(&definition.name, &call.arguments, output),
                None => output,
            }
        }
    };

    let duration_ms = started.elapsed().as_millis() as u64;
    services.stats.count(setup.origin.phase, output.is_error);
    services
        .sink
        .record(Record::ToolExecutionSummary(ToolExecutionSummary {
            tool_call_id: call.id.clone(),
            tool_name: definition.name.clone(),
            stage: ToolStage::End,
            origin: setup.origin.clone(),
            args_summary: None,
            is_error: output.is_error,
            result_summary: Some(summarize_json(&Value::String(output.content.clone()))),
            duration_ms: Some(duration_ms),
        }));
    services.sink.emit(RunEvent::ToolFinished {
        agent: setup.agent.clone(),
        call_id: call.id.clone(),
        tool_name: definition.name.clone(),
        is_error: output.is_error,
        duration_ms,
    });
    output
}

/// Runs a tool on its own task, so a panic or a hang becomes an error output instead of
/// taking the loop down. On timeout the tool's cancellation token fires (killing its process
/// group) and the task is aborted.
async fn execute_isolated(
    tool: &SharedTool,
    call: &ToolCall,
    services: &AgentServices,
    limit: Duration,
) -> ToolOutput {
    let call_cancel = services.tool_context.cancel.child_token();
    let context = ToolContext {
        project_root: services.tool_context.project_root.clone(),
        cancel: call_cancel.clone(),
        sandbox: services.tool_context.sandbox.clone(),
    };
    let tool = Arc::clone(tool);
    let arguments = call.arguments.clone();
    let handle = tokio::spawn(async move { tool.call(arguments, &context).await });
    let abort = handle.abort_handle();
    // Dropping a JoinHandle detaches its task: if this future is dropped (the run is
    // cancelled, a signal arrives) the tool must stop too, which drops its process guards.
    let _abort_on_drop = AbortOnDrop(abort.clone());
    let mut output = finish_isolated(call, limit, &call_cancel, abort, handle).await;
    // Tool output goes to a model and the journal: no registered secret goes with it.
    if let std::borrow::Cow::Owned(redacted) =
        braincode_protocol::secrets::redact_secrets(&output.content)
    {
        output.content = redacted;
    }
    output
}

/// Aborts a task when dropped (a finished task is unaffected).
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn finish_isolated(
    call: &ToolCall,
    limit: Duration,
    call_cancel: &tokio_util::sync::CancellationToken,
    abort: tokio::task::AbortHandle,
    handle: tokio::task::JoinHandle<ToolOutput>,
) -> ToolOutput {
    match tokio::time::timeout(limit, handle).await {
        Ok(Ok(output)) => output,
        Ok(Err(join_error)) if join_error.is_panic() => ToolOutput::error(format!(
            "{} crashed while running; this is a bug in the tool, not in your arguments",
            call.name
        )),
        Ok(Err(_)) => ToolOutput::error(format!("{} was cancelled", call.name)),
        Err(_) => {
            call_cancel.cancel();
            abort.abort();
            ToolOutput::error(format!(
                "{} did not finish within {} s and was stopped (its processes were killed)",
                call.name,
                limit.as_secs()
            ))
        }
    }
}

fn one_line(arguments: &Value) -> String {
    let text = arguments.to_string();
    braincode_context::clip_chars(&text, 160)
}
