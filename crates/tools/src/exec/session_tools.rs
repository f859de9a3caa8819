//! `exec_command`, `write_stdin`, `list_background` and `kill_background`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::sessions::{ExecSessions, SessionRead, SpawnRequest};
use super::{default_shell, workdir};
use crate::fs::root_of;
use crate::registry::builtin_definition;
use crate::text::{DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES, MIN_OUTPUT_BYTES};
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{
    ExecCommandArgs, KillBackgroundArgs, ListBackgroundArgs, ToolArgs, WriteStdinArgs,
};

/// Default wait for output before returning (ms).
pub const DEFAULT_YIELD_MS: u64 = 1_000;
/// Longest wait (ms).
pub const MAX_YIELD_MS: u64 = 30_000;
/// Default foreground timeout (ms).
pub const DEFAULT_EXEC_TIMEOUT_MS: u64 = 120_000;
/// Timeout bounds (ms).
pub const EXEC_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 900_000);
/// The shells `exec_command` can run a command with.
pub(crate) const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash"];

fn output_cap(bytes: Option<u64>, tokens: Option<u64>) -> usize {
    bytes
        .or(tokens.map(|t| t.saturating_mul(4)))
        .unwrap_or(DEFAULT_OUTPUT_BYTES)
        .clamp(MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES) as usize
}

/// Renders a session read for the model.
fn render(read: &SessionRead, header: Option<&str>) -> ToolOutput {
    let mut text = String::new();
    if let Some(header) = header {
        text.push_str(header);
        text.push('\n');
    }
    let kind = if read.background {
        "background"
    } else {
        "foreground"
    };
    match read.exit {
        Some(exit) => {
            text.push_str(&format!("Session {} finished: {}", read.id, exit.describe()));
            if read.timed_out {
                text.push_str(" (timed out)");
            } else if read.killed {
                text.push_str(" (killed)");
            }
        }
        None => text.push_str(&format!(
            "Session {} is still running ({kind}). Poll it with write_stdin {{\"sessionId\": {}}}; stop it with kill_background.",
            read.id, read.id
        )),
    }
    text.push_str("\nOutput:\n");
    text.push_str(if read.output.is_empty() {
        "(no output)"
    } else {
        &read.output
    });
    let failed = read.timed_out;
    let output = ToolOutput {
        content: text,
        is_error: failed,
        details: None,
        images: Vec::new(),
        created_files: Vec::new(),
    };
    output.with_details(json!({
        "sessionId": read.id,
        "running": read.exit.is_none(),
        "exitCode": read.exit.and_then(|e| e.code),
        "signal": read.exit.and_then(|e| e.signal),
        "timedOut": read.timed_out,
        "killed": read.killed,
        "background": read.background,
        "omittedBytes": read.omitted_bytes,
    }))
}

/// Starts a command in a session.
#[derive(Debug, Clone)]
pub struct ExecCommand {
    definition: ToolDefinition,
    sessions: Arc<ExecSessions>,
}

impl ExecCommand {
    /// The tool over a session manager.
    pub fn new(sessions: Arc<ExecSessions>) -> Self {
        Self {
            definition: builtin_definition::<ExecCommandArgs>(
                "Run a shell command in the project. Returns its output, or a session id if still running after yieldTimeMs (then use write_stdin). background: true keeps a server running (stop it with kill_background). stderr lines start with [stderr]; long output keeps the tail.",
            ),
            sessions,
        }
    }
}

#[async_trait]
impl Tool for ExecCommand {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match ExecCommandArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let command = args.cmd.clone();
        if command.trim().is_empty() {
            return ToolOutput::error("exec_command needs cmd");
        }
        // A command sees the whole tree: a sparse worktree is written out first.
        if let Err(error) = crate::fs::materialize_all(context).await {
            return ToolOutput::error(format!("exec_command: {error}"));
        }
        let root = root_of(context);
        let dir = match workdir(&root, args.workdir.as_deref()) {
            Ok(dir) => dir,
            Err(error) => return ToolOutput::error(format!("exec_command: {error}")),
        };
        let shell = match args.shell.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(shell) if SHELLS.contains(&shell) => shell.to_string(),
            Some(other) => {
                return ToolOutput::error(format!(
                    "exec_command: unsupported shell {other:?}; use one of {}",
                    SHELLS.join(", ")
                ));
            }
            None => default_shell().to_string(),
        };
        let background = args.background.unwrap_or(false);
        let timeout = match (args.timeout_ms, background) {
            (Some(ms), _) => Some(ms.clamp(EXEC_TIMEOUT_RANGE_MS.0, EXEC_TIMEOUT_RANGE_MS.1)),
            (None, false) => Some(DEFAULT_EXEC_TIMEOUT_MS),
            (None, true) => None,
        };
        let yield_ms = args
            .yield_time_ms
            .unwrap_or(DEFAULT_YIELD_MS)
            .min(MAX_YIELD_MS);
        let id = match self.sessions.spawn(
            SpawnRequest {
                command: command.clone(),
                shell,
                workdir: dir,
                background,
                timeout: timeout.map(Duration::from_millis),
                sandbox: context.sandbox.clone(),
            },
            &context.cancel,
        ) {
            Ok(id) => id,
            Err(error) => return ToolOutput::error(format!("exec_command: {error}")),
        };
        match self
            .sessions
            .read(
                id,
                Duration::from_millis(yield_ms),
                output_cap(args.max_output_bytes, args.max_output_tokens),
                &context.cancel,
            )
            .await
        {
            Ok(read) => render(&read, Some(&format!("$ {command}"))),
            Err(error) => ToolOutput::error(format!("exec_command: {error}")),
        }
    }
}

/// Writes to a running session and returns its new output.
#[derive(Debug, Clone)]
pub struct WriteStdin {
    definition: ToolDefinition,
    sessions: Arc<ExecSessions>,
}

impl WriteStdin {
    /// The tool over a session manager.
    pub fn new(sessions: Arc<ExecSessions>) -> Self {
        Self {
            definition: builtin_definition::<WriteStdinArgs>(
                "Type into a running exec_command session, or poll it (empty chars); returns the output since the last read.",
            ),
            sessions,
        }
    }
}

#[async_trait]
impl Tool for WriteStdin {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match WriteStdinArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let id = args.session_id;
        let chars = args.chars.as_deref().unwrap_or("");
        if !chars.is_empty()
            && let Err(error) = self.sessions.write(id, chars).await
        {
            return ToolOutput::error(format!("write_stdin: {error}"));
        }
        let yield_ms = args
            .yield_time_ms
            .unwrap_or(DEFAULT_YIELD_MS)
            .min(MAX_YIELD_MS);
        match self
            .sessions
            .read(
                id,
                Duration::from_millis(yield_ms),
                output_cap(args.max_output_bytes, args.max_output_tokens),
                &context.cancel,
            )
            .await
        {
            Ok(read) => render(&read, None),
            Err(error) => ToolOutput::error(format!("write_stdin: {error}")),
        }
    }
}

/// Lists sessions.
#[derive(Debug, Clone)]
pub struct ListBackground {
    definition: ToolDefinition,
    sessions: Arc<ExecSessions>,
}

impl ListBackground {
    /// The tool over a session manager.
    pub fn new(sessions: Arc<ExecSessions>) -> Self {
        Self {
            definition: builtin_definition::<ListBackgroundArgs>(
                "List exec_command sessions: id, background or foreground, running or exited, elapsed time, command.",
            ),
            sessions,
        }
    }
}

#[async_trait]
impl Tool for ListBackground {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, _context: &ToolContext) -> ToolOutput {
        if let Err(error) = ListBackgroundArgs::parse(&arguments) {
            return ToolOutput::error(error.to_string());
        }
        let sessions = self.sessions.list();
        if sessions.is_empty() {
            return ToolOutput::ok("(no sessions)").with_details(json!({"count": 0}));
        }
        let lines: Vec<String> = sessions
            .iter()
            .map(|s| {
                let state = match s.exit {
                    None => "running".to_string(),
                    Some(exit) => format!("exited ({})", exit.describe()),
                };
                format!(
                    "{}\t{}\t{}\t{}s\t{}",
                    s.id,
                    if s.background {
                        "background"
                    } else {
                        "foreground"
                    },
                    state,
                    s.elapsed.as_secs(),
                    braincode_protocol::clip_chars_then_ellipsis(&s.command, 200)
                )
            })
            .collect();
        ToolOutput::ok(lines.join("\n")).with_details(json!({"count": sessions.len()}))
    }
}

/// Stops a session's whole process group.
#[derive(Debug, Clone)]
pub struct KillBackground {
    definition: ToolDefinition,
    sessions: Arc<ExecSessions>,
}

impl KillBackground {
    /// The tool over a session manager.
    pub fn new(sessions: Arc<ExecSessions>) -> Self {
        Self {
            definition: builtin_definition::<KillBackgroundArgs>(
                "Stop an exec_command session and every process it started (SIGTERM, then SIGKILL after 1 s); returns its last output.",
            ),
            sessions,
        }
    }
}

#[async_trait]
impl Tool for KillBackground {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, _context: &ToolContext) -> ToolOutput {
        let id = match KillBackgroundArgs::parse(&arguments) {
            Ok(args) => args.session_id,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        match self.sessions.kill(id, DEFAULT_OUTPUT_BYTES as usize).await {
            Ok(read) => {
                let mut output = render(
                    &read,
                    Some(&format!("killed session {id}: {}", read.command)),
                );
                output.is_error = false;
                output
            }
            Err(error) => ToolOutput::error(format!("kill_background: {error}")),
        }
    }
}
