//! The `run_script` tool.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::resolve_script;
use crate::exec::process::{format_outcome, run_captured};
use crate::fs::root_of;
use crate::registry::builtin_definition;
use crate::text::DEFAULT_OUTPUT_BYTES;
use crate::tool::{Tool, ToolContext, ToolDefinition, ToolOutput};
use crate::tool_args::{RunScriptArgs, ToolArgs};

/// Default timeout (ms).
pub const DEFAULT_SCRIPT_TIMEOUT_MS: u64 = 120_000;
/// Timeout bounds (ms).
pub const SCRIPT_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 600_000);

/// Runs a project script: package.json, cargo, make, pytest or go.
#[derive(Debug, Clone)]
pub struct RunScript {
    definition: ToolDefinition,
}

impl Default for RunScript {
    fn default() -> Self {
        Self {
            definition: builtin_definition::<RunScriptArgs>(
                "Run a project script by name: a package.json script, a cargo command (build, test, clippy…), a Makefile target, pytest (test) or a go command (test, build, vet). Prefix cargo:, make:, go: or pytest: to choose; an unknown name lists what exists.",
            ),
        }
    }
}

#[async_trait]
impl Tool for RunScript {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> ToolOutput {
        let args = match RunScriptArgs::parse(&arguments) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let root = root_of(context);
        let resolved = match resolve_script(&root, &args.script, &args.args) {
            Ok(resolved) => resolved,
            Err(error) => return ToolOutput::error(format!("run_script: {error}")),
        };
        let timeout = Duration::from_millis(
            args.timeout_ms
                .unwrap_or(DEFAULT_SCRIPT_TIMEOUT_MS)
                .clamp(SCRIPT_TIMEOUT_RANGE_MS.0, SCRIPT_TIMEOUT_RANGE_MS.1),
        );
        let args: Vec<&str> = resolved.args.iter().map(String::as_str).collect();
        let command = crate::exec::process::confined_command(
            context.sandbox.as_deref(),
            &resolved.program,
            &args,
            &root,
        );
        let outcome = match run_captured(
            command,
            timeout,
            &context.cancel,
            DEFAULT_OUTPUT_BYTES as usize,
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(error) => {
                return ToolOutput::error(format!(
                    "run_script: cannot run `{}`: {error}",
                    resolved.display
                ));
            }
        };
        let output = ToolOutput {
            content: format_outcome(&resolved.display, &outcome, timeout),
            is_error: outcome.timed_out
                || outcome.cancelled
                || outcome.exit.is_none_or(|e| e.code != Some(0)),
            details: None,
            images: Vec::new(),
            created_files: Vec::new(),
        };
        output.with_details(json!({
            "command": resolved.display,
            "exitCode": outcome.exit.and_then(|e| e.code),
            "timedOut": outcome.timed_out,
            "cancelled": outcome.cancelled,
        }))
    }
}
