//! `shell`: one command to completion, any exit code reported as text.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::process::{format_outcome, run_captured};
use super::workdir;
use crate::fs::root_of;
use crate::registry::builtin_definition;
use crate::text::{DEFAULT_OUTPUT_BYTES, MAX_OUTPUT_BYTES, MIN_OUTPUT_BYTES};
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{ShellArgs, ToolArgs};

/// Default timeout (ms).
pub const DEFAULT_SHELL_TIMEOUT_MS: u64 = 120_000;
/// Timeout bounds (ms).
pub const SHELL_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 600_000);

/// Runs `sh -c <command>` and waits for it.
#[derive(Debug, Clone)]
pub struct Shell {
    definition: ToolDefinition,
}

impl Default for Shell {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<ShellArgs>(&format!(
                "Run a shell command (sh -c) in the project and wait: returns the exit code, stdout and stderr (long output keeps the tail); killed after {DEFAULT_SHELL_TIMEOUT_MS} ms unless timeoutMs says otherwise. Processes it leaves behind are stopped. For servers use exec_command with background: true."
            )),
        }
    }
}

#[async_trait]
impl Tool for Shell {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match ShellArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let command = args.command.as_str();
        if command.trim().is_empty() {
            return ToolOutput::error("shell needs a command");
        }
        // A command sees the whole tree: a sparse worktree is written out first.
        if let Err(error) = crate::fs::materialize_all(context).await {
            return ToolOutput::error(format!("shell: {error}"));
        }
        let root = root_of(context);
        let dir = match workdir(&root, args.workdir.as_deref()) {
            Ok(dir) => dir,
            Err(error) => return ToolOutput::error(format!("shell: {error}")),
        };
        let timeout = Duration::from_millis(
            args.timeout_ms
                .unwrap_or(DEFAULT_SHELL_TIMEOUT_MS)
                .clamp(SHELL_TIMEOUT_RANGE_MS.0, SHELL_TIMEOUT_RANGE_MS.1),
        );
        let max_bytes = args
            .max_output_bytes
            .unwrap_or(DEFAULT_OUTPUT_BYTES)
            .clamp(MIN_OUTPUT_BYTES, MAX_OUTPUT_BYTES) as usize;
        let process = super::process::confined_command(
            context.sandbox.as_deref(),
            "sh",
            &["-c", command],
            &dir,
        );
        let outcome = match run_captured(process, timeout, &context.cancel, max_bytes).await {
            Ok(outcome) => outcome,
            Err(error) => return ToolOutput::error(format!("shell: cannot run sh: {error}")),
        };
        let text = format_outcome(command, &outcome, timeout);
        let output = ToolOutput {
            content: text,
            is_error: outcome.timed_out || outcome.cancelled,
            details: None,
            images: Vec::new(),
            created_files: Vec::new(),
        };
        output.with_details(json!({
            "exitCode": outcome.exit.and_then(|e| e.code),
            "signal": outcome.exit.and_then(|e| e.signal),
            "timedOut": outcome.timed_out,
            "cancelled": outcome.cancelled,
            "stdoutBytes": outcome.stdout.total(),
            "stderrBytes": outcome.stderr.total(),
        }))
    }
}
