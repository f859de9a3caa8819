//! Tool execution of the agent loop: batching (parallel reads, serial writes), the tool hooks
//! (`PreToolUse` before the gate, `PostToolUse` after the call), the gate, events and journal
//! records per call, the evidence cache, and isolation of each tool on its own task with a
//! time limit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_llm::ToolCall;
use braincode_protocol::{HookDecision, Record, RunEvent, ToolExecutionSummary, ToolStage};
use braincode_tools::{
    CacheLookup, SharedTool, ToolContext, ToolOutput, ToolPermission, summarize_json,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentServices, AgentSetup, GateHooks, GateOutcome, GateRequest};
use crate::hooks::{HookEvent, HookResult};
use crate::ledger::CallOrigin;
use crate::tape::{ORCHESTRATION_TOOLS, TapedTool, journaled_output};
use braincode_config::journal::clip_text;

/// Runs every call of one assistant turn and returns one output per call, in call order.
pub(crate) async fn execute_calls(
    setup: &AgentSetup,
    services: &AgentServices,
    tools: &BTreeMap<&str, &SharedTool>,
    calls: &[ToolCall],
    cancel: &CancellationToken,
) -> Result<Vec<ToolOutput>, AgentError> {
    // A call through `mcp_call` is the call of the tool it names; names the agent was not
    // offered up front (MCP tools found with `mcp_search`) are resolved once per turn.
    let calls: Vec<ToolCall> = calls.iter().map(|call| unwrap_call(setup, call)).collect();
    let calls = calls.as_slice();
    let mut resolved: Vec<(String, Result<SharedTool, String>)> = Vec::new();
    if let Some(resolver) = &setup.resolver {
        for call in calls {
            if !tools.contains_key(call.name.as_str())
                && !resolved.iter().any(|(name, _)| *name == call.name)
                && let Some(result) = resolver.resolve(&call.name).await
            {
                resolved.push((call.name.clone(), result));
            }
        }
    }
    let mut all_tools = tools.clone();
    let mut problems: BTreeMap<&str, &str> = BTreeMap::new();
    for (name, result) in &resolved {
        match result {
            Ok(tool) => {
                all_tools.insert(name.as_str(), tool);
            }
            Err(problem) => {
                problems.insert(name.as_str(), problem.as_str());
            }
        }
    }
    let tools = &all_tools;
    let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
    // What `PreToolUse` hooks added to each call's answer.
    let mut contexts: Vec<Vec<String>> = vec![Vec::new(); calls.len()];
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
            let (prepared, context) = match problems.get(call.name.as_str()) {
                Some(problem) => (Prepared::Done(ToolOutput::error(*problem)), Vec::new()),
                None => prepare_call(setup, services, tools, call).await,
            };
            contexts[slot] = context;
            match prepared {
                Prepared::Done(output) => outputs[slot] = Some(output),
                Prepared::Run { tool, call } => runnable.push((slot, call, tool)),
                Prepared::Taped { taped, call } => {
                    outputs[slot] = Some(serve_taped(setup, services, &call, *taped).await);
                }
            }
        }
        let runs = runnable.into_iter().map(|(slot, call, tool)| async move {
            (slot, run_one(setup, services, tool, &call).await)
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
        .zip(contexts)
        .map(|(output, context)| {
            let mut output =
                output.unwrap_or_else(|| ToolOutput::error("internal error: the call was not run"));
            append_hook_notes(&mut output, None, &context);
            output
        })
        .collect())
}

/// Adds what hooks said about a call to the answer the model sees: a `PostToolUse` block
/// reason as feedback, and additional context.
fn append_hook_notes(output: &mut ToolOutput, feedback: Option<&str>, context: &[String]) {
    if let Some(reason) = feedback {
        output.content.push_str("\n\nHook feedback: ");
        output.content.push_str(reason);
    }
    if !context.is_empty() {
        output.content.push_str("\n\nHook additional context:");
        for line in context {
            output.content.push_str("\n- ");
            output.content.push_str(line);
        }
    }
}

/// `call` with the arguments a `PreToolUse` hook replaced its own with (`Err`: the
/// replacement is not a JSON object, so the call cannot run).
fn rewritten(call: &ToolCall, pre: &HookResult) -> Result<ToolCall, String> {
    match &pre.updated_input {
        None => Ok(call.clone()),
        Some(input @ Value::Object(_)) => Ok(ToolCall {
            id: call.id.clone(),
            name: call.name.clone(),
            raw_arguments: input.to_string(),
            arguments: input.clone(),
            argument_error: None,
            signature: call.signature.clone(),
        }),
        Some(_) => Err(format!(
            "{} was not run: a PreToolUse hook replaced its arguments with something that is not a JSON object",
            call.name
        )),
    }
}

/// `mcp_call {"name", "arguments"}` as the call of the tool it names (same call id), when the
/// agent has a resolver and the arguments say which tool; any other call as it is.
fn unwrap_call(setup: &AgentSetup, call: &ToolCall) -> ToolCall {
    if call.name != super::MCP_CALL_TOOL || setup.resolver.is_none() {
        return call.clone();
    }
    let Some(name) = call
        .arguments
        .get("name")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        return call.clone();
    };
    // Models sometimes send the arguments object as a JSON string.
    let arguments = match call.arguments.get("arguments") {
        None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => return call.clone(),
        },
        Some(value @ Value::Object(_)) => value.clone(),
        Some(_) => return call.clone(),
    };
    ToolCall {
        id: call.id.clone(),
        name: name.to_string(),
        raw_arguments: arguments.to_string(),
        arguments,
        argument_error: None,
        signature: call.signature.clone(),
    }
}

enum Prepared<'a> {
    Done(ToolOutput),
    /// Run `tool` with `call` (its arguments as hooks left them).
    Run {
        tool: &'a SharedTool,
        call: ToolCall,
    },
    /// The journal has this call's result (replay, resume).
    Taped {
        taped: Box<TapedTool>,
        call: ToolCall,
    },
}

/// The most of a tool's output an end record carries (what a resume hands back to the model).
const JOURNALED_OUTPUT_BYTES: usize = braincode_config::journal::MAX_RECORD_BYTES / 2;

/// Decides what becomes of one call: an answer at once (unknown tool, bad arguments, a hook
/// or the gate said no), a run, or the journal's result. Also returns what `PreToolUse`
/// hooks added for the model.
async fn prepare_call<'a>(
    setup: &AgentSetup,
    services: &AgentServices,
    tools: &BTreeMap<&str, &'a SharedTool>,
    call: &ToolCall,
) -> (Prepared<'a>, Vec<String>) {
    let done = |output| (Prepared::Done(output), Vec::new());
    let Some(tool) = tools.get(call.name.as_str()).copied() else {
        let available: Vec<&str> = tools.keys().copied().collect();
        return done(ToolOutput::error(format!(
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
        return done(ToolOutput::error(format!(
            "invalid arguments for {}: {problem}. Send the arguments as one JSON object matching the tool's schema.",
            call.name
        )));
    }
    let hooks = services.hooks.as_deref();
    let origin = &setup.origin;
    let tape = services.tape.as_deref();
    let session = origin.agent_session_id.as_deref().unwrap_or_default();
    // A call the journal has already ran: its hooks are served with it, never run again.
    if let Some(taped) = tape.and_then(|tape| tape.tool(session, &call.id, &call.name)) {
        let pre = hooks.map_or_else(HookResult::default, |h| {
            h.journaled(HookEvent::PreToolUse, origin, call)
        });
        let call = rewritten(call, &pre).unwrap_or_else(|_| call.clone());
        let taped = Box::new(taped);
        return (Prepared::Taped { taped, call }, pre.additional_context);
    }
    // A replay of a run its budget stopped: a call the journal has no result for is where
    // the live run was cut; it is journaled as far as it got and parked until the stop.
    if let Some(tape) = tape.filter(|tape| tape.parks_missing_calls())
        && !ORCHESTRATION_TOOLS.contains(&call.name.as_str())
        && tape.refusal(session, &call.id).is_none()
    {
        let (approval, start) = tape.cut_call(session, &call.id);
        if let Some(approval) = approval {
            services.sink.record(Record::ToolApprovalDecision(approval));
        }
        if let Some(start) = start {
            services.sink.record(Record::ToolExecutionSummary(start));
        }
        tape.park().await;
        return done(ToolOutput::error("the run stopped"));
    }
    // A call that started and has no end in the journal may have had its effect (a command
    // ran, a file was written) before the interruption: what only reads is run again, the
    // rest is not, and the model and the person are told to check before repeating it.
    if tape.is_some_and(|tape| tape.interrupted(session, &call.id))
        && tool.definition().permission != ToolPermission::Read
    {
        services.sink.warning(format!(
            "{} call {} may have run before the interruption (its start was journaled, its end was not); it was not run again: check its effect before repeating it",
            call.name, call.id
        ));
        return done(ToolOutput::error(format!(
            "{} call {} may have run already: the run was interrupted after it started and before its result was recorded, so it was not run again. Check its effect (files, command output, git state) before repeating it.",
            call.name, call.id
        )));
    }
    let pre = match hooks {
        Some(hooks) => hooks.pre_tool_use(origin, call).await,
        None => HookResult::default(),
    };
    if let Some(reason) = &pre.blocked_reason {
        return done(ToolOutput::error(format!(
            "{} was not run: a PreToolUse hook blocked it: {reason}",
            call.name
        )));
    }
    let call = match rewritten(call, &pre) {
        Ok(call) => call,
        Err(message) => return done(ToolOutput::error(message)),
    };
    let context = pre.additional_context.clone();
    if let Some(tape) = tape {
        if let Some((refusal, own)) = tape.refusal(session, &call.id) {
            if let Some(hooks) = hooks {
                hooks.journaled(HookEvent::PermissionRequest, origin, &call);
            }
            let reason = refusal
                .reason
                .clone()
                .unwrap_or_else(|| "refused by the permission policy".into());
            if own {
                services.sink.record(Record::ToolApprovalDecision(refusal));
            }
            let output = ToolOutput::error(format!("{} was not run: {reason}", call.name));
            return (Prepared::Done(output), context);
        }
        if tape.is_strict() && !ORCHESTRATION_TOOLS.contains(&call.name.as_str()) {
            let output = ToolOutput::error(format!(
                "replay: the journal has no result for {} call {}",
                call.name, call.id
            ));
            return (Prepared::Done(output), context);
        }
    }
    // The gate judges the arguments as hooks left them; a hook's `ask` goes to a person, its
    // `allow` changes nothing.
    let ask = (pre.decision == Some(HookDecision::Ask))
        .then(|| pre.decision_reason.as_deref().unwrap_or("no reason given"));
    let request = GateRequest {
        call: &call,
        tool: tool.definition(),
        origin,
    };
    let outcome = services
        .gate
        .check_with_hooks(request, GateHooks { hooks, ask })
        .await;
    match outcome {
        GateOutcome::Allow => (Prepared::Run { tool, call }, context),
        GateOutcome::Refuse(message) => (Prepared::Done(ToolOutput::error(message)), context),
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
            output: None,
        }));

    // A write takes the protected paths as they are after it (a person or the policy approved
    // it): first make sure nothing else changed them since the last check.
    if let (ToolPermission::Write, Some(watch)) = (definition.permission, &services.protected)
        && let Err(message) = watch.check("the previous commands").await
    {
        return ToolOutput::error(format!("{} was not run: {message}", definition.name));
    }
    // What a write is about to change, for the patch ledger (the gate has allowed it).
    let snapshot = match &services.ledger {
        Some(ledger) if definition.permission == ToolPermission::Write => {
            ledger.before(&definition.name, &call.arguments)
        }
        _ => None,
    };
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

    let mut output = output;
    match (definition.permission, &services.protected) {
        (ToolPermission::Read, _) | (_, None) => {}
        // A person approved this call's change to protected paths (or it is a file edit the
        // policy let through): the result is the new reference.
        (ToolPermission::Write, Some(watch)) => watch.accept().await,
        (_, Some(watch)) if services.gate.person_approved_protected(&call.id) => {
            watch.accept().await;
        }
        (_, Some(watch)) => {
            if let Err(message) = watch.check(&format!("the {} call", definition.name)).await {
                output.is_error = true;
                output.content.push_str("\n\n");
                output.content.push_str(&message);
            }
        }
    }
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
            output: Some(clip_text(&output.content, JOURNALED_OUTPUT_BYTES).into_owned()),
        }));
    let origin = CallOrigin {
        tool_call_id: &call.id,
        tool_name: &definition.name,
        agent_session_id: setup.origin.agent_session_id.as_deref(),
    };
    if let (Some(ledger), Some(snapshot)) = (&services.ledger, snapshot) {
        // A failed call may still have written part of its change: compare either way.
        ledger.after(snapshot, origin);
    }
    // Files a write created at paths its arguments did not name (a generated image's name).
    if let Some(ledger) = &services.ledger
        && let Some(created) = ledger.created(&output.created_files)
    {
        ledger.after(created, origin);
    }
    services.sink.emit(RunEvent::ToolFinished {
        agent: setup.agent.clone(),
        call_id: call.id.clone(),
        tool_name: definition.name.clone(),
        is_error: output.is_error,
        duration_ms,
    });
    if let Some(hooks) = services.hooks.as_deref() {
        let post = hooks
            .post_tool_use(&setup.origin, call, &output.content, output.is_error)
            .await;
        append_hook_notes(
            &mut output,
            post.blocked_reason.as_deref(),
            &post.additional_context,
        );
    }
    output
}

/// A call the journal already has: a replay emits its records again (hooks, approval, start,
/// end) with the same events; a resume only hands the output back (with what its
/// `PostToolUse` hooks said).
async fn serve_taped(
    setup: &AgentSetup,
    services: &AgentServices,
    call: &ToolCall,
    taped: TapedTool,
) -> ToolOutput {
    let Some(end) = taped.end else {
        return ToolOutput::error("internal error: a taped call has no end");
    };
    let (content, is_error) = journaled_output(&end);
    let hooks = services.hooks.as_deref();
    if let Some(hooks) = hooks {
        hooks.journaled(HookEvent::PermissionRequest, &setup.origin, call);
    }
    if taped.own {
        if let Some(approval) = taped.approval {
            services.sink.record(Record::ToolApprovalDecision(approval));
        }
        services.sink.emit(RunEvent::ToolStarted {
            agent: setup.agent.clone(),
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            summary: one_line(&call.arguments),
        });
        if let Some(start) = taped.start {
            services.sink.record(Record::ToolExecutionSummary(start));
        }
        let duration_ms = end.duration_ms.unwrap_or_default();
        services.stats.count(setup.origin.phase, is_error);
        services.sink.record(Record::ToolExecutionSummary(end));
        for change in taped.changes {
            services.sink.record(Record::FileChange(change));
        }
        services.sink.emit(RunEvent::ToolFinished {
            agent: setup.agent.clone(),
            call_id: call.id.clone(),
            tool_name: call.name.clone(),
            is_error,
            duration_ms,
        });
    }
    let mut output = ToolOutput {
        content,
        is_error,
        ..ToolOutput::ok(String::new())
    };
    if let Some(hooks) = hooks {
        let post = hooks.journaled(HookEvent::PostToolUse, &setup.origin, call);
        append_hook_notes(
            &mut output,
            post.blocked_reason.as_deref(),
            &post.additional_context,
        );
    }
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
        editor: services.tool_context.editor.clone(),
        lazy: services.tool_context.lazy.clone(),
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
