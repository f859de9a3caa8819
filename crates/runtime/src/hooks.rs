//! Command hooks: user- and project-configured programs that see run events and may add
//! context or block.
//!
//! Protocol (Claude-Code compatible in spirit): the event payload arrives as JSON on stdin;
//! exit 0 = completed (stdout may carry JSON or, for some events, plain additional context);
//! exit 2 = block (reason from stderr/stdout); `{"decision":"block"}` or `{"continue":false}`
//! on stdout = block. Anything else is a failure; a hook that cannot start or dies on a signal
//! is a crash — reported as such, never read as a "no". Every handler runs in its own process
//! group, owned by a [`ProcessGroup`] guard: the whole group is killed on timeout, on
//! cancellation, when the future running the hook is dropped, and — for what a hook leaves
//! behind — when the hook exits.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use braincode_protocol::{HookOutcome, HookRecord, HookRun};
use regex::Regex;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use braincode_tools::exec::process::ProcessGroup;

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
}

impl HookEvent {
    /// The event name used in hooks.json and payloads.
    pub const fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::Stop => "Stop",
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
    /// Parses an event name; events Braincode does not fire yet return `None`.
    pub fn from_name(name: &str) -> Option<HookEvent> {
        [
            HookEvent::SessionStart,
            HookEvent::UserPromptSubmit,
            HookEvent::SubagentStart,
            HookEvent::SubagentStop,
            HookEvent::Stop,
        ]
        .into_iter()
        .find(|event| event.name() == name)
    }
}

/// Flattens the hooks.json files that were found into runnable handlers, in file order
/// (user file first, then project), skipping events Braincode does not fire.
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

    let mut result = HookResult::default();
    for outcome in outcomes {
        if result.blocked_reason.is_none() && outcome.run.outcome == HookOutcome::Blocked {
            result.blocked_reason = outcome.run.reason.clone();
        }
        result.additional_context.extend(outcome.context);
        result.runs.push(outcome.run);
    }
    result
}

struct HandlerOutcome {
    run: HookRun,
    context: Vec<String>,
}

fn skipped(handler: &HookCommand, reason: &str) -> HandlerOutcome {
    HandlerOutcome {
        run: HookRun {
            source: handler.source.display().to_string(),
            command: handler.command.clone().unwrap_or_default(),
            outcome: HookOutcome::Skipped,
            exit_code: None,
            duration_ms: 0,
            reason: Some(reason.to_string()),
        },
        context: Vec::new(),
    }
}

async fn run_handler(
    handler: &HookCommand,
    event: HookEvent,
    env: &HookEnvironment,
    payload: &str,
    cancel: &CancellationToken,
) -> HandlerOutcome {
    if !handler.enabled {
        return skipped(handler, "disabled");
    }
    if handler.asynchronous {
        return skipped(handler, "async command hooks are not supported yet");
    }
    if handler.kind != "command" {
        return skipped(
            handler,
            &format!("unsupported hook type {:?}", handler.kind),
        );
    }
    let Some(command) = handler.command.as_deref().filter(|c| !c.trim().is_empty()) else {
        return skipped(handler, "no command configured");
    };
    if !handler.trusted {
        return skipped(
            handler,
            "untrusted (set \"trusted\": true on the handler to run it)",
        );
    }

    let started = Instant::now();
    let run = |outcome, exit_code, reason: Option<String>| HookRun {
        source: handler.source.display().to_string(),
        command: command.to_string(),
        outcome,
        exit_code,
        duration_ms: started.elapsed().as_millis() as u64,
        reason,
    };

    let mut process = braincode_tools::exec::process::confined_command(
        env.sandbox.as_deref(),
        "sh",
        &["-c", command],
        &env.cwd,
    );
    let mut child = match process
        .env("BRAINCODE_HOOK_SOURCE", &handler.source)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(err) => {
            return HandlerOutcome {
                run: run(
                    HookOutcome::Crashed,
                    None,
                    Some(format!("could not start: {err}")),
                ),
                context: Vec::new(),
            };
        }
    };
    // From here on the guard owns the hook's whole process group: if this future is dropped
    // (the run is cancelled, a signal arrives) the group is killed, not only `sh`.
    let mut group = ProcessGroup::adopt(child.id());
    let mut stdin_pipe = child.stdin.take();
    let write_in = async {
        if let Some(mut stdin) = stdin_pipe.take() {
            // A hook that does not read its stdin is fine: ignore broken pipes. Written
            // alongside the reads, so a hook that never reads cannot stall the timeout.
            let _ = stdin.write_all(payload.as_bytes()).await;
        }
    };
    let mut stdout_pipe = child.stdout.take();
    let mut stderr_pipe = child.stderr.take();
    let read_out = async {
        let mut buf = Vec::new();
        if let Some(pipe) = stdout_pipe.as_mut() {
            let _ = pipe
                .take(HOOK_OUTPUT_CAP as u64)
                .read_to_end(&mut buf)
                .await;
        }
        buf
    };
    let read_err = async {
        let mut buf = Vec::new();
        if let Some(pipe) = stderr_pipe.as_mut() {
            let _ = pipe
                .take(HOOK_OUTPUT_CAP as u64)
                .read_to_end(&mut buf)
                .await;
        }
        buf
    };
    let waited = async {
        let ((), out, err) = tokio::join!(write_in, read_out, read_err);
        (child.wait().await, out, err)
    };
    let finished = tokio::select! {
        finished = tokio::time::timeout(handler.timeout, waited) => Some(finished),
        () = cancel.cancelled() => None,
    };
    let (status, stdout, stderr) = match finished {
        Some(Ok(done)) => done,
        Some(Err(_)) => {
            if let Some(group) = group.as_mut() {
                group.terminate().await;
            }
            let secs = handler.timeout.as_secs();
            return HandlerOutcome {
                run: run(
                    HookOutcome::TimedOut,
                    None,
                    Some(format!("timed out after {secs}s")),
                ),
                context: Vec::new(),
            };
        }
        None => {
            if let Some(group) = group.as_mut() {
                group.terminate().await;
            }
            return HandlerOutcome {
                run: run(
                    HookOutcome::Crashed,
                    None,
                    Some("cancelled with the run".into()),
                ),
                context: Vec::new(),
            };
        }
    };
    // The hook exited and closed its output; whatever it left running in its group is
    // stopped when the guard drops at the end of this function.
    if let Some(group) = group.as_mut() {
        group.release();
    }
    let stdout = String::from_utf8_lossy(&stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&stderr).trim().to_string();
    let status = match status {
        Ok(status) => status,
        Err(err) => {
            return HandlerOutcome {
                run: run(
                    HookOutcome::Crashed,
                    None,
                    Some(format!("could not wait: {err}")),
                ),
                context: Vec::new(),
            };
        }
    };
    let Some(code) = status.code() else {
        use std::os::unix::process::ExitStatusExt;
        let signal = status.signal().unwrap_or(0);
        return HandlerOutcome {
            run: run(
                HookOutcome::Crashed,
                None,
                Some(format!("killed by signal {signal}")),
            ),
            context: Vec::new(),
        };
    };
    if code == 2 {
        let reason = first_non_empty(&[&stderr, &stdout])
            .unwrap_or_else(|| format!("blocked by {} hook", event.name()));
        return HandlerOutcome {
            run: run(HookOutcome::Blocked, Some(2), Some(reason)),
            context: Vec::new(),
        };
    }
    if code != 0 {
        let detail =
            first_non_empty(&[&stderr]).unwrap_or_else(|| format!("command exited with {code}"));
        return HandlerOutcome {
            run: run(HookOutcome::Failed, Some(code), Some(detail)),
            context: Vec::new(),
        };
    }
    interpret_stdout(event, &stdout, |outcome, reason| {
        run(outcome, Some(0), reason)
    })
}

fn first_non_empty(candidates: &[&str]) -> Option<String> {
    candidates
        .iter()
        .find(|s| !s.is_empty())
        .map(|s| braincode_context::clip_chars(s, 2_000))
}

fn interpret_stdout(
    event: HookEvent,
    stdout: &str,
    run: impl Fn(HookOutcome, Option<String>) -> HookRun,
) -> HandlerOutcome {
    if stdout.is_empty() {
        return HandlerOutcome {
            run: run(HookOutcome::Completed, None),
            context: Vec::new(),
        };
    }
    let Ok(Value::Object(json)) = serde_json::from_str::<Value>(stdout) else {
        let context = if event.plain_stdout_is_context() {
            vec![braincode_context::clip_chars(stdout, 8_000)]
        } else {
            Vec::new()
        };
        return HandlerOutcome {
            run: run(HookOutcome::Completed, None),
            context,
        };
    };
    let text = |key: &str| json.get(key).and_then(Value::as_str).map(str::to_string);
    if json.get("decision").and_then(Value::as_str) == Some("block") {
        let reason = text("reason").unwrap_or_else(|| format!("blocked by {} hook", event.name()));
        return HandlerOutcome {
            run: run(HookOutcome::Blocked, Some(reason)),
            context: Vec::new(),
        };
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        let reason =
            text("stopReason").unwrap_or_else(|| format!("stopped by {} hook", event.name()));
        return HandlerOutcome {
            run: run(HookOutcome::Blocked, Some(reason)),
            context: Vec::new(),
        };
    }
    let mut context = Vec::new();
    if let Some(specific) = json.get("hookSpecificOutput").and_then(Value::as_object)
        && specific.get("hookEventName").and_then(Value::as_str) == Some(event.name())
        && let Some(extra) = specific.get("additionalContext").and_then(Value::as_str)
        && !extra.trim().is_empty()
    {
        context.push(braincode_context::clip_chars(extra.trim(), 8_000));
    }
    HandlerOutcome {
        run: run(HookOutcome::Completed, None),
        context,
    }
}
