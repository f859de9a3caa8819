//! The `mcp_connect` report of a hub: every server under its outcome, with the reason.

use braincode_mcp::{ServerState, ServerStatus};
use braincode_protocol::{McpConnectReport, McpLoadingStrategy, McpServerReport, McpServerStatus};

use super::PlannedServer;

/// The report of `planned` servers given the hub's `states` (`None`: the hub has not been
/// made yet). `lazy_reason` says why a server that has not started is waiting.
pub fn connect_report(
    planned: &[PlannedServer],
    states: Option<&[ServerState]>,
    strategy: McpLoadingStrategy,
    not_started_reason: &dyn Fn(&PlannedServer) -> String,
) -> McpConnectReport {
    let mut report = McpConnectReport {
        strategy: Some(strategy),
        ..McpConnectReport::default()
    };
    for server in planned {
        let mut entry = McpServerReport {
            name: server.name().to_string(),
            scope: Some(server.config.scope.as_str().to_string()),
            transport: Some(
                serde_json::to_value(server.config.transport)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            ),
            ..McpServerReport::default()
        };
        if let Some(skip) = &server.skip {
            entry.reason = Some(skip.clone());
            report.skipped.push(entry);
            continue;
        }
        let state = states.and_then(|states| states.iter().find(|s| s.name == server.name()));
        let status = match state {
            None => {
                entry.reason = Some(not_started_reason(server));
                McpServerStatus::Pending
            }
            Some(state) => match state.status {
                ServerStatus::NotStarted => {
                    entry.reason = Some(not_started_reason(server));
                    McpServerStatus::Pending
                }
                ServerStatus::Connecting => {
                    entry.reason = Some(if state.restarts > 0 {
                        "restarting after a crash".into()
                    } else {
                        "connecting".into()
                    });
                    report.loading = true;
                    McpServerStatus::Pending
                }
                ServerStatus::Connected => {
                    entry.tool_count = Some(state.tools.len() as u32);
                    entry.duration_ms = state.connect_ms;
                    if state.restarts > 0 {
                        entry.reason = Some(format!(
                            "restarted after: {}",
                            state
                                .error
                                .as_ref()
                                .map_or_else(String::new, ToString::to_string)
                        ));
                    }
                    report.tool_count += state.tools.len() as u32;
                    McpServerStatus::Connected
                }
                ServerStatus::Failed => {
                    let error = state.error.as_ref();
                    let mut text = error.map_or_else(|| "failed".to_string(), ToString::to_string);
                    if let Some(fix) = error.and_then(braincode_mcp::McpError::fix) {
                        text.push_str(" — ");
                        text.push_str(&fix);
                    }
                    entry.error =
                        Some(braincode_protocol::secrets::redact_secrets(&text).into_owned());
                    entry.duration_ms = state.connect_ms;
                    McpServerStatus::Failed
                }
                ServerStatus::Stopped => {
                    entry.reason = Some("stopped".into());
                    McpServerStatus::Skipped
                }
            },
        };
        report.list_mut(status).push(entry);
    }
    report
}
