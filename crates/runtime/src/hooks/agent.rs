//! The hooks an agent fires itself: around each of its tool calls (`PreToolUse`, then
//! `PermissionRequest` from the gate when a person is about to be asked, then `PostToolUse`)
//! and around a compaction of its conversation (`PreCompact`, `PostCompact`).
//!
//! Every agent of a run fires them the same way — the primary, support workers, the reviewer
//! and dispatched specialists — with the same handlers. Results are journaled per agent
//! session and tool call (`hook_pre_tool_use`, …), so a replay or a resume serves each agent
//! its own results and runs no hook process.

use std::sync::Arc;

use braincode_llm::ToolCall;
use braincode_protocol::{HookRecord, ToolCallOrigin};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{HookCommand, HookEnvironment, HookEvent, HookResult, run_hooks};
use crate::sink::RunSink;
use crate::tape::{Tape, hook_scope};

/// Most of a tool's output a `PostToolUse` payload carries (`tool_response`).
pub const TOOL_RESPONSE_CAP: usize = 16 * 1024;

/// The events an agent fires.
const AGENT_EVENTS: [HookEvent; 5] = [
    HookEvent::PreToolUse,
    HookEvent::PermissionRequest,
    HookEvent::PostToolUse,
    HookEvent::PreCompact,
    HookEvent::PostCompact,
];

/// The run's tool and compaction hooks, shared by its agents ([`crate::agent::AgentServices`]).
pub struct AgentHooks {
    handlers: Vec<HookCommand>,
    env: HookEnvironment,
    tape: Option<Arc<Tape>>,
    sink: RunSink,
    cancel: CancellationToken,
}

/// Where an agent event belongs: the agent, and the tool call of a tool event.
struct Scope<'a> {
    origin: &'a ToolCallOrigin,
    call_id: Option<&'a str>,
}

impl Scope<'_> {
    fn tape_key(&self) -> String {
        hook_scope(self.origin.agent_session_id.as_deref(), self.call_id)
    }
}

impl AgentHooks {
    /// The agent events of `handlers` (the run's resolved hooks.json handlers), run in
    /// `env`; `tape` serves journaled results instead (replay, resume).
    pub fn new(
        handlers: &[HookCommand],
        env: &HookEnvironment,
        tape: Option<Arc<Tape>>,
        sink: &RunSink,
        cancel: &CancellationToken,
    ) -> Self {
        Self {
            handlers: handlers
                .iter()
                .filter(|h| AGENT_EVENTS.contains(&h.event))
                .cloned()
                .collect(),
            env: env.clone(),
            tape,
            sink: sink.clone(),
            cancel: cancel.clone(),
        }
    }

    /// `PreToolUse` for `call` (its arguments parsed), before the gate. A block or a `deny`
    /// means the call must not run; `updated_input` replaces its arguments; `ask` sends it to
    /// a person; `allow` changes nothing (the policy and approval still decide).
    pub async fn pre_tool_use(&self, origin: &ToolCallOrigin, call: &ToolCall) -> HookResult {
        let fields = tool_fields(origin, call);
        self.fire(
            HookEvent::PreToolUse,
            scope(origin, call),
            &call.name,
            fields,
        )
        .await
    }

    /// `PermissionRequest` for `call`, when the gate is about to ask a person (or would, if
    /// anyone could answer). `policy_summary` says why approval is needed.
    pub async fn permission_request(
        &self,
        origin: &ToolCallOrigin,
        call: &ToolCall,
        policy_summary: &str,
    ) -> HookResult {
        let mut fields = tool_fields(origin, call);
        fields["policy_summary"] = Value::String(policy_summary.to_string());
        self.fire(
            HookEvent::PermissionRequest,
            scope(origin, call),
            &call.name,
            fields,
        )
        .await
    }

    /// `PostToolUse` for `call`, after it ran with `output` (clipped to
    /// [`TOOL_RESPONSE_CAP`] in the payload). A block reason and additional context are
    /// feedback for the model.
    pub async fn post_tool_use(
        &self,
        origin: &ToolCallOrigin,
        call: &ToolCall,
        output: &str,
        is_error: bool,
    ) -> HookResult {
        let mut fields = tool_fields(origin, call);
        fields["tool_response"] = Value::String(
            braincode_config::journal::clip_text(output, TOOL_RESPONSE_CAP).into_owned(),
        );
        fields["tool_is_error"] = Value::Bool(is_error);
        self.fire(
            HookEvent::PostToolUse,
            scope(origin, call),
            &call.name,
            fields,
        )
        .await
    }

    /// `PreCompact` for the agent of `origin`, before its conversation is compacted;
    /// `trigger` (`auto` or `manual`) is what matchers see. A blocked result asks that the
    /// conversation not be compacted now; additional context is for the summary.
    pub async fn pre_compact(&self, origin: &ToolCallOrigin, trigger: &str) -> HookResult {
        let mut fields = agent_fields(origin);
        fields["trigger"] = Value::String(trigger.to_string());
        fields["custom_instructions"] = Value::String(String::new());
        let scope = Scope {
            origin,
            call_id: None,
        };
        self.fire(HookEvent::PreCompact, scope, trigger, fields)
            .await
    }

    /// `PostCompact` for the agent of `origin`, after its conversation was compacted into
    /// `summary`.
    pub async fn post_compact(
        &self,
        origin: &ToolCallOrigin,
        trigger: &str,
        summary: &str,
    ) -> HookResult {
        let mut fields = agent_fields(origin);
        fields["trigger"] = Value::String(trigger.to_string());
        fields["compact_summary"] = Value::String(summary.to_string());
        let scope = Scope {
            origin,
            call_id: None,
        };
        self.fire(HookEvent::PostCompact, scope, trigger, fields)
            .await
    }

    /// The journaled result of a tool event of `call`, for a call whose own result comes
    /// from the journal (replay, resume): its record is emitted again in a replay, and no
    /// hook runs either way (empty when the journal has none).
    pub fn journaled(
        &self,
        event: HookEvent,
        origin: &ToolCallOrigin,
        call: &ToolCall,
    ) -> HookResult {
        let scope = scope(origin, call);
        self.served(event, &scope, &call.name).unwrap_or_default()
    }

    /// The journaled `PreCompact`/`PostCompact` result of the agent of `origin`, for a
    /// compaction the journal says happened (replay, resume): no hook runs.
    pub fn journaled_compaction(&self, event: HookEvent, origin: &ToolCallOrigin) -> HookResult {
        let scope = Scope {
            origin,
            call_id: None,
        };
        self.served(event, &scope, "auto").unwrap_or_default()
    }

    /// The journaled result of an event, if the tape has it (emitted again when it is the
    /// replayed run's own).
    fn served(&self, event: HookEvent, scope: &Scope<'_>, matcher: &str) -> Option<HookResult> {
        let tape = self.tape.as_deref()?;
        let (record, own) = tape.scoped_hook(event.name(), &scope.tape_key(), Some(matcher))?;
        let result = HookResult::from_record(&record);
        if own {
            self.journal(event, record, &result);
        }
        Some(result)
    }

    /// Serves the event from the tape, or runs its handlers and journals what matched.
    async fn fire(
        &self,
        event: HookEvent,
        scope: Scope<'_>,
        matcher: &str,
        fields: Value,
    ) -> HookResult {
        if let Some(result) = self.served(event, &scope, matcher) {
            return result;
        }
        let replaying = self.tape.as_deref().is_some_and(Tape::is_strict);
        if replaying || !self.handlers.iter().any(|h| h.event == event) {
            return HookResult::default();
        }
        let result = run_hooks(
            &self.handlers,
            event,
            matcher,
            &self.env,
            fields,
            &self.cancel,
        )
        .await;
        if !result.is_empty() {
            let mut record = result.to_record(event, Some(matcher));
            record.agent_session_id = scope.origin.agent_session_id.clone();
            record.tool_call_id = scope.call_id.map(str::to_string);
            self.journal(event, record, &result);
        }
        result
    }

    fn journal(&self, event: HookEvent, record: HookRecord, result: &HookResult) {
        self.sink.record(event.record(record));
        for problem in result.problems() {
            self.sink.warning(problem);
        }
    }
}

fn scope<'a>(origin: &'a ToolCallOrigin, call: &'a ToolCall) -> Scope<'a> {
    Scope {
        origin,
        call_id: Some(&call.id),
    }
}

/// `agent_type` (the role) and `agent_id` (the agent session).
fn agent_fields(origin: &ToolCallOrigin) -> Value {
    json!({
        "agent_type": origin.role.map(braincode_protocol::Role::as_str),
        "agent_id": origin.agent_session_id,
    })
}

/// The agent fields plus `tool_name`, `tool_input` and `tool_use_id`.
fn tool_fields(origin: &ToolCallOrigin, call: &ToolCall) -> Value {
    let mut fields = agent_fields(origin);
    fields["tool_name"] = Value::String(call.name.clone());
    fields["tool_input"] = call.arguments.clone();
    fields["tool_use_id"] = Value::String(call.id.clone());
    fields
}
