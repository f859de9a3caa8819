//! Command hooks: user- and project-configured programs that see run events and may add
//! context or block.
//!
//! Protocol (Claude-Code compatible in spirit): the event payload arrives as JSON on stdin;
//! exit 0 = completed (stdout may carry JSON or, for some events, plain additional context);
//! exit 2 = block (reason from stderr/stdout); `{"decision":"block"}` or `{"continue":false}`
//! on stdout = block. Anything else is a failure; a hook that cannot start or dies on a signal
//! is a crash — reported as such, never read as a "no". Every handler runs in its own process
//! group, owned by a [`ProcessGroup`](braincode_tools::exec::process::ProcessGroup) guard: the whole group is killed on timeout, on
//! cancellation, when the future running the hook is dropped, and — for what a hook leaves
//! behind — when the hook exits.
//!
//! Tool events (`PreToolUse`, `PermissionRequest`, `PostToolUse`) and compaction events
//! (`PreCompact`, `PostCompact`) are fired per agent through [`AgentHooks`]. A tool hook can
//! only make a call stricter — block it, send it to a person, or rewrite its arguments (which
//! the permission policy then judges) — never approve what the policy or approval would not.

mod agent;
mod handler;

use std::path::PathBuf;
use std::time::Duration;

use braincode_protocol::{HookDecision, HookOutcome, HookRecord, HookRun};
use regex::Regex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use agent::AgentHooks;
use handler::run_handler;

/// Default hook timeout.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(600);

/// Largest stdout/stderr kept from one hook.
const HOOK_OUTPUT_CAP: usize = 64 * 1024;

/// Events Braincode fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// A session starts (`startup`) or continues (`resume`).
    SessionStart,
    /// A prompt is about to run.
    UserPromptSubmit,
    /// A worker is about to start.
    SubagentStart,
    /// A worker finished.
    SubagentStop,
    /// The run is about to give its final answer.
    Stop,
    /// A tool call is about to pass the gate (matcher: the tool name).
    PreToolUse,
    /// The gate is about to ask a person about a tool call (matcher: the tool name).
    PermissionRequest,
    /// A tool call ran (matcher: the tool name).
    PostToolUse,
    /// An agent's conversation is about to be compacted (matcher: `auto` or `manual`).
    PreCompact,
    /// An agent's conversation was compacted (matcher: `auto` or `manual`).
    PostCompact,
}

/// Every event, in hooks.json order.
const ALL_EVENTS: [HookEvent; 10] = [
    HookEvent::SessionStart,
    HookEvent::UserPromptSubmit,
    HookEvent::PreToolUse,
    HookEvent::PermissionRequest,
    HookEvent::PostToolUse,
    HookEvent::PreCompact,
    HookEvent::PostCompact,
    HookEvent::SubagentStart,
    HookEvent::SubagentStop,
    HookEvent::Stop,
];

impl HookEvent {
    /// The event name used in hooks.json and payloads.
    pub const fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Stop => "Stop",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
        }
    }

    /// The journal record of this event's result.
    pub fn record(self, record: HookRecord) -> braincode_protocol::Record {
        use braincode_protocol::Record;
        match self {
            HookEvent::SessionStart => Record::HookSessionStart(record),
            HookEvent::UserPromptSubmit => Record::HookUserPromptSubmit(record),
            HookEvent::SubagentStart => Record::HookSubagentStart(record),
            HookEvent::SubagentStop => Record::HookSubagentStop(record),
            HookEvent::Stop => Record::HookStop(record),
            HookEvent::PreToolUse => Record::HookPreToolUse(record),
            HookEvent::PermissionRequest => Record::HookPermissionRequest(record),
            HookEvent::PostToolUse => Record::HookPostToolUse(record),
            HookEvent::PreCompact => Record::HookPreCompact(record),
            HookEvent::PostCompact => Record::HookPostCompact(record),
        }
    }

    /// Whether plain (non-JSON) stdout counts as additional context.
    const fn plain_stdout_is_context(self) -> bool {
        matches!(
            self,
            HookEvent::SessionStart | HookEvent::SubagentStart | HookEvent::UserPromptSubmit
        )
    }

    /// Whether the matcher is ignored (the event always matches).
    const fn always_matches(self) -> bool {
        matches!(self, HookEvent::UserPromptSubmit | HookEvent::Stop)
    }

    /// Whether handlers decide about a tool call (allow, ask, deny, rewrite).
    const fn decides(self) -> bool {
        matches!(self, HookEvent::PreToolUse | HookEvent::PermissionRequest)
    }
}

/// One configured handler, resolved from hooks.json.
#[derive(Debug, Clone, PartialEq)]
pub struct HookCommand {
    /// The config file it came from.
    pub source: PathBuf,
    /// Event it listens to.
    pub event: HookEvent,
    /// Matcher (regex; empty or `*` = everything).
    pub matcher: Option<String>,
    /// Handler type (`command` is the only one run).
    pub kind: String,
    /// Shell command.
    pub command: Option<String>,
    /// Timeout.
    pub timeout: Duration,
    /// Whether enabled.
    pub enabled: bool,
    /// Whether the user marked it trusted (untrusted handlers never run).
    pub trusted: bool,
    /// Asynchronous handlers are not supported yet and are skipped.
    pub asynchronous: bool,
}

impl HookEvent {
    /// Parses an event name (`None` for a name the schema does not know).
    pub fn from_name(name: &str) -> Option<HookEvent> {
        ALL_EVENTS.into_iter().find(|event| event.name() == name)
    }
}

/// Flattens the hooks.json files that were found into runnable handlers, in file order
/// (user file first, then project), skipping events Braincode does not know.
pub fn resolve_hooks(sources: &[braincode_config::HookSource]) -> Vec<HookCommand> {
    let mut commands = Vec::new();
    for source in sources {
        for (name, groups) in &source.file.hooks.events {
            let Some(event) = HookEvent::from_name(name) else {
                continue;
            };
            for group in groups {
                for handler in &group.hooks {
                    commands.push(HookCommand {
                        source: source.path.clone(),
                        event,
                        matcher: group.matcher.clone(),
                        kind: handler.kind.clone(),
                        command: handler.command.clone(),
                        timeout: handler
                            .timeout
                            .map_or(DEFAULT_HOOK_TIMEOUT, Duration::from_secs),
                        enabled: handler.enabled,
                        trusted: handler.trusted,
                        asynchronous: handler.is_async,
                    });
                }
            }
        }
    }
    commands
}

/// The combined result of every handler for one event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookResult {
    /// Additional context lines, in handler order.
    pub additional_context: Vec<String>,
    /// The first block reason, in handler order.
    pub blocked_reason: Option<String>,
    /// Per-handler runs (for the journal).
    pub runs: Vec<HookRun>,
    /// Tool events: `deny` when blocked, else `ask` when any handler asked, else `allow`
    /// when any allowed.
    pub decision: Option<HookDecision>,
    /// Why a handler allowed or asked (`permissionDecisionReason`).
    pub decision_reason: Option<String>,
    /// `PreToolUse`: the arguments the call runs with instead (first handler that gave any).
    pub updated_input: Option<Value>,
}

impl HookResult {
    /// Whether anything matched (the record is only written then).
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The result a journaled record describes (replay, resume).
    pub fn from_record(record: &HookRecord) -> HookResult {
        HookResult {
            additional_context: record.additional_context.clone(),
            blocked_reason: record.blocked_reason.clone(),
            runs: record.records.clone(),
            decision: record.decision,
            decision_reason: record.decision_reason.clone(),
            updated_input: record.updated_input.clone(),
        }
    }

    /// The journal record for this event.
    pub fn to_record(&self, event: HookEvent, matcher: Option<&str>) -> HookRecord {
        HookRecord {
            event_name: event.name().to_string(),
            matcher: matcher.map(str::to_string),
            records: self.runs.clone(),
            additional_context: self.additional_context.clone(),
            blocked_reason: self.blocked_reason.clone(),
            agent_session_id: None,
            tool_call_id: None,
            decision: self.decision,
            decision_reason: self.decision_reason.clone(),
            updated_input: self.updated_input.clone(),
        }
    }

    /// Handlers that crashed or timed out, for warnings.
    pub fn problems(&self) -> Vec<String> {
        self.runs
            .iter()
            .filter(|r| {
                matches!(
                    r.outcome,
                    HookOutcome::Crashed | HookOutcome::TimedOut | HookOutcome::Failed
                )
            })
            .map(|r| {
                format!(
                    "hook `{}` ({}) {}: {}",
                    r.command,
                    r.source,
                    match r.outcome {
                        HookOutcome::Crashed => "crashed",
                        HookOutcome::TimedOut => "timed out",
                        _ => "failed",
                    },
                    r.reason.as_deref().unwrap_or("no details")
                )
            })
            .collect()
    }
}

/// Fields common to every payload.
#[derive(Debug, Clone)]
pub struct HookEnvironment {
    /// Session id.
    pub session_id: String,
    /// Project root (the hook's working directory).
    pub cwd: PathBuf,
    /// Model description.
    pub model: String,
    /// `default`, `acceptEdits` or `bypassPermissions`.
    pub permission_mode: String,
    /// The OS sandbox hooks run in (`None` when none could be set up: hooks are the user's
    /// trusted configuration, so they then run unconfined, with credentials still removed
    /// from their environment).
    pub sandbox: Option<std::sync::Arc<braincode_sandbox::Sandbox>>,
    /// Checks the project's protected paths after the hooks ran (a hook runs in the sandbox,
    /// which cannot forbid creating one); `None`: not checked.
    pub protected: Option<std::sync::Arc<crate::protect::ProtectedWatch>>,
}

/// Whether `matcher` selects `value`.
pub fn matcher_matches(matcher: Option<&str>, value: &str) -> bool {
    let Some(matcher) = matcher.map(str::trim) else {
        return true;
    };
    if matcher.is_empty() || matcher == "*" {
        return true;
    }
    match Regex::new(&format!("^(?:{matcher})$")) {
        Ok(regex) => regex.is_match(value),
        // An invalid regex falls back to exact comparison.
        Err(_) => matcher == value,
    }
}

/// Runs every enabled, trusted handler of `event` whose matcher selects `match_value`,
/// concurrently, and combines their results.
pub async fn run_hooks(
    handlers: &[HookCommand],
    event: HookEvent,
    match_value: &str,
    env: &HookEnvironment,
    event_fields: Value,
    cancel: &CancellationToken,
) -> HookResult {
    let selected: Vec<&HookCommand> = handlers
        .iter()
        .filter(|h| h.event == event)
        .filter(|h| event.always_matches() || matcher_matches(h.matcher.as_deref(), match_value))
        .collect();
    let mut payload = json!({
        "session_id": env.session_id,
        "transcript_path": Value::Null,
        "cwd": env.cwd.display().to_string(),
        "hook_event_name": event.name(),
        "model": env.model,
        "turn_id": env.session_id,
        "permission_mode": env.permission_mode,
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut payload, event_fields) {
        base.extend(extra);
    }
    let payload = payload.to_string();
    let runs = selected
        .iter()
        .map(|handler| run_handler(handler, event, env, &payload, cancel));
    let outcomes = futures::future::join_all(runs).await;
    if let (false, Some(watch)) = (outcomes.is_empty(), &env.protected) {
        // A change stops the run (the watch cancels it); the hooks' result still counts.
        let _ = watch.check(&format!("the {} hooks", event.name())).await;
    }

    let mut result = HookResult::default();
    let mut asked = None;
    let mut allowed = None;
    for outcome in outcomes {
        if result.blocked_reason.is_none() && outcome.run.outcome == HookOutcome::Blocked {
            result.blocked_reason = outcome.run.reason.clone();
        }
        result.additional_context.extend(outcome.context);
        result.runs.push(outcome.run);
        let verdict = outcome.verdict;
        match verdict.decision {
            Some(HookDecision::Ask) if asked.is_none() => asked = Some(verdict.reason),
            Some(HookDecision::Allow) if allowed.is_none() => allowed = Some(verdict.reason),
            _ => {}
        }
        if result.updated_input.is_none() {
            result.updated_input = verdict.updated_input;
        }
    }
    if event.decides() {
        // The strictest answer wins: deny, then ask, then allow.
        (result.decision, result.decision_reason) = if result.blocked_reason.is_some() {
            (Some(HookDecision::Deny), None)
        } else if let Some(reason) = asked {
            (Some(HookDecision::Ask), reason)
        } else if let Some(reason) = allowed {
            (Some(HookDecision::Allow), reason)
        } else {
            (None, None)
        };
    }
    if result.blocked_reason.is_some() {
        // A blocked call runs with no arguments at all.
        result.updated_input = None;
    }
    result
}
