//! Live output of a running task: progress lines on a terminal, or JSON event lines.

use std::io::Write;

use braincode_protocol::secrets::redact_secrets;
use braincode_protocol::{Record, RunEvent};
use braincode_runtime::EventSubscriber;

/// `--events`: every event as one JSON object per line on stdout.
pub struct JsonLines;

impl EventSubscriber for JsonLines {
    fn on_event(&self, event: &RunEvent) {
        if let Ok(line) = serde_json::to_string(event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", redact_secrets(&line));
            let _ = out.flush();
        }
    }
}

/// Human progress on stderr: which worker runs on which model, tool calls, warnings.
pub struct Progress {
    enabled: bool,
    /// A report (human or JSON) is printed at the end: warnings it says in their own place
    /// are left to it.
    report_follows: bool,
}

impl Progress {
    /// A printer; when disabled only warnings are shown.
    pub fn new(enabled: bool, report_follows: bool) -> Self {
        Self {
            enabled,
            report_follows,
        }
    }

    fn warning(&self, message: &str) -> Option<String> {
        (!(self.report_follows && said_by_the_report(message))).then(|| format!("! {message}"))
    }
}

/// Warnings the report says in a place of their own, so that a run says them once: the
/// router's fallback (the report's `Routing:` line carries its reason) and the note that the
/// embedded model answered (one of the report's last lines; JSON has it in `warnings`).
fn said_by_the_report(message: &str) -> bool {
    message.starts_with("router brain not used:")
        || message.starts_with("answered by the embedded model")
}

impl EventSubscriber for Progress {
    fn on_event(&self, event: &RunEvent) {
        let line = match event {
            RunEvent::Warning { message } => self.warning(message),
            RunEvent::Record { entry, .. } if matches!(entry.record, Record::Warning(_)) => {
                match &entry.record {
                    Record::Warning(warning) => self.warning(&warning.message),
                    _ => None,
                }
            }
            _ if !self.enabled => None,
            RunEvent::Status { message } => Some(format!("· {message}")),
            RunEvent::ToolStarted {
                agent,
                tool_name,
                summary,
                ..
            } => Some(format!("  {} → {tool_name} {summary}", agent.role)),
            RunEvent::ToolFinished {
                agent,
                tool_name,
                is_error: true,
                duration_ms,
                ..
            } => Some(format!(
                "  {} ✗ {tool_name} failed ({duration_ms} ms)",
                agent.role
            )),
            RunEvent::Record { entry, .. } => match &entry.record {
                Record::WorkerEnd(end) => {
                    let status = end
                        .result
                        .as_ref()
                        .map_or("done", |r| r.progress.status.as_str());
                    Some(format!(
                        "· {} ({}) {status}",
                        end.worker,
                        end.phase.as_str()
                    ))
                }
                Record::Routing(routing) => Some(format!(
                    "· plan: {} → primary {}{}",
                    routing.source.as_str(),
                    routing.primary_role,
                    routing
                        .confidence
                        .map(|c| format!(" · confidence {:.0}%", c * 100.0))
                        .unwrap_or_default()
                )),
                Record::WriterMerge(merge) => Some(format!(
                    "· {} writer merged back: {}{}{}",
                    merge.role,
                    merge.outcome.as_str(),
                    merge
                        .reason
                        .as_deref()
                        .map(|reason| format!(" ({reason})"))
                        .unwrap_or_default(),
                    merge
                        .checks_phrase()
                        .map(|checks| format!("; its {checks} in its worktree"))
                        .unwrap_or_default()
                )),
                // Listed, so a new record type is a decision here: the rest reach the
                // terminal as status events, or not at all.
                Record::RunStart(_)
                | Record::RunEnd(_)
                | Record::RunError(_)
                | Record::WorkerStart(_)
                | Record::WorkerError(_)
                | Record::AgentMessage(_)
                | Record::TodoPlan(_)
                | Record::TodoUpdate(_)
                | Record::ContextPlan(_)
                | Record::ClarificationRequest(_)
                | Record::CheckSummary(_)
                | Record::ReviewDecision(_)
                | Record::ReviewArtifactsSummary(_)
                | Record::FixIteration(_)
                | Record::PatchSummary(_)
                | Record::FinalReport(_)
                | Record::McpConnect(_)
                | Record::ToolCallCount(_)
                | Record::ModelRetry(_)
                | Record::NetworkAccess(_)
                | Record::RepoFacts(_)
                | Record::ModelReply(_)
                | Record::Warning(_)
                | Record::Handoff(_)
                | Record::DynamicDispatch(_)
                | Record::ExecutionPlanReview(_)
                | Record::ToolApprovalDecision(_)
                | Record::ToolExecutionSummary(_)
                | Record::HookSessionStart(_)
                | Record::HookUserPromptSubmit(_)
                | Record::HookSubagentStart(_)
                | Record::HookSubagentStop(_)
                | Record::HookStop(_)
                | Record::HookPreToolUse(_)
                | Record::HookPermissionRequest(_)
                | Record::HookPostToolUse(_)
                | Record::HookPreCompact(_)
                | Record::HookPostCompact(_)
                | Record::TokenUsage(_)
                | Record::FileChange(_)
                | Record::PatchBaseline(_)
                | Record::Undo(_)
                | Record::Compaction(_)
                | Record::Unknown(_) => None,
            },
            _ => None,
        };
        if let Some(line) = line {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{}", redact_secrets(&line));
        }
    }
}
