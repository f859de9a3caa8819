//! Running one hook handler: its process (sandboxed, in its own process group, with a
//! timeout) and what its exit code and output mean.

use std::process::Stdio;
use std::time::Instant;

use braincode_protocol::{HookDecision, HookOutcome, HookRun};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use braincode_tools::exec::process::ProcessGroup;

use super::{HOOK_OUTPUT_CAP, HookCommand, HookEnvironment, HookEvent};

/// What a handler decided about a tool call, beyond blocking (`PreToolUse`,
/// `PermissionRequest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Verdict {
    /// `allow` or `ask` (a `deny` is a block).
    pub decision: Option<HookDecision>,
    /// Why (`permissionDecisionReason`), shown to the person an `ask` reaches.
    pub reason: Option<String>,
    /// Replacement arguments (`PreToolUse` `updatedInput`).
    pub updated_input: Option<Value>,
}

/// One handler's run and what it added.
pub(super) struct HandlerOutcome {
    pub run: HookRun,
    pub context: Vec<String>,
    pub verdict: Verdict,
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
        verdict: Verdict::default(),
    }
}

pub(super) async fn run_handler(
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
                verdict: Verdict::default(),
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
                verdict: Verdict::default(),
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
                verdict: Verdict::default(),
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
                verdict: Verdict::default(),
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
            verdict: Verdict::default(),
        };
    };
    if code == 2 {
        let reason = first_non_empty(&[&stderr, &stdout])
            .unwrap_or_else(|| format!("blocked by {} hook", event.name()));
        return HandlerOutcome {
            run: run(HookOutcome::Blocked, Some(2), Some(reason)),
            context: Vec::new(),
            verdict: Verdict::default(),
        };
    }
    if code != 0 {
        let detail =
            first_non_empty(&[&stderr]).unwrap_or_else(|| format!("command exited with {code}"));
        return HandlerOutcome {
            run: run(HookOutcome::Failed, Some(code), Some(detail)),
            context: Vec::new(),
            verdict: Verdict::default(),
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
            verdict: Verdict::default(),
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
            verdict: Verdict::default(),
        };
    };
    let text = |key: &str| json.get(key).and_then(Value::as_str).map(str::to_string);
    // Event-specific output counts only when it names this event (as Claude Code requires).
    let specific = json
        .get("hookSpecificOutput")
        .and_then(Value::as_object)
        .filter(|s| s.get("hookEventName").and_then(Value::as_str) == Some(event.name()));
    let specific_text = |key: &str| {
        specific
            .and_then(|s| s.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let mut context = Vec::new();
    if let Some(extra) = specific_text("additionalContext") {
        context.push(braincode_context::clip_chars(&extra, 8_000));
    }
    let mut verdict = Verdict::default();
    let mut block = None;
    if json.get("decision").and_then(Value::as_str) == Some("block") {
        block = Some(text("reason").unwrap_or_else(|| format!("blocked by {} hook", event.name())));
    } else if json.get("continue").and_then(Value::as_bool) == Some(false) {
        block =
            Some(text("stopReason").unwrap_or_else(|| format!("stopped by {} hook", event.name())));
    } else if event == HookEvent::PreToolUse {
        // `permissionDecision` (and the older top-level `decision: "approve"`).
        let decision = specific_text("permissionDecision").or_else(|| {
            (json.get("decision").and_then(Value::as_str) == Some("approve"))
                .then(|| "allow".to_string())
        });
        let reason = specific_text("permissionDecisionReason").or_else(|| text("reason"));
        match decision.as_deref() {
            Some("deny") => {
                block = Some(reason.unwrap_or_else(|| "denied by a PreToolUse hook".into()));
            }
            Some("ask") => {
                verdict.decision = Some(HookDecision::Ask);
                verdict.reason = reason;
            }
            Some("allow") => {
                verdict.decision = Some(HookDecision::Allow);
                verdict.reason = reason;
            }
            _ => {}
        }
        verdict.updated_input = specific
            .and_then(|s| s.get("updatedInput"))
            .filter(|input| !input.is_null())
            .cloned();
    } else if event == HookEvent::PermissionRequest {
        let decision = specific
            .and_then(|s| s.get("decision"))
            .and_then(Value::as_object);
        let field = |key: &str| {
            decision
                .and_then(|d| d.get(key))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
        };
        match field("behavior").as_deref() {
            Some("deny") => {
                block = Some(
                    field("message").unwrap_or_else(|| "denied by a PermissionRequest hook".into()),
                );
            }
            Some("allow") => verdict.decision = Some(HookDecision::Allow),
            _ => {}
        }
    }
    if let Some(reason) = block {
        // Feedback after a call keeps its context; a block before anything ran needs none.
        if event != HookEvent::PostToolUse {
            context.clear();
        }
        return HandlerOutcome {
            run: run(
                HookOutcome::Blocked,
                Some(braincode_context::clip_chars(&reason, 2_000)),
            ),
            context,
            verdict,
        };
    }
    HandlerOutcome {
        run: run(HookOutcome::Completed, None),
        context,
        verdict,
    }
}
