//! The `mcp_connect` record: which MCP servers a run connected to, and which it could not.
//!
//! The report follows the reference (`{connected, failed, skipped, pending, toolCount, loading,
//! strategy}`, one list per outcome); every field is optional with a default, so a report
//! from a loader that knows less still parses.

use serde::{Deserialize, Serialize};

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// How a server's connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Connected; its tools are offered.
    Connected,
    /// The connection failed.
    Failed,
    /// Not started (disabled, untrusted, unsupported transport).
    Skipped,
    /// Still connecting when the report was made.
    Pending,
}

impl McpServerStatus {
    /// The JSON name of the status.
    pub const fn as_str(self) -> &'static str {
        match self {
            McpServerStatus::Connected => "connected",
            McpServerStatus::Failed => "failed",
            McpServerStatus::Skipped => "skipped",
            McpServerStatus::Pending => "pending",
        }
    }
}

/// When MCP servers are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpLoadingStrategy {
    /// Wait up to the startup budget before the run goes on.
    Eager,
    /// Connect in the background.
    Background,
    /// Connect only when an agent asks (`mcp__connect`).
    Lazy,
}

/// One server of an MCP connection report.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerReport {
    /// Server name (the key in `mcp.json`).
    pub name: String,
    /// Where it was configured (`project`, `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Transport (`stdio`, `http`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// Tools it offers (connected servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_count: Option<u32>,
    /// Why it failed (failed servers), secrets redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why it was skipped or is pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Time spent connecting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// The MCP connection report: each server listed under its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConnectReport {
    /// Servers that connected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connected: Vec<McpServerReport>,
    /// Servers that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<McpServerReport>,
    /// Servers not started.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<McpServerReport>,
    /// Servers still connecting.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<McpServerReport>,
    /// Tools offered by all connected servers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tool_count: u32,
    /// Whether servers are still loading in the background.
    #[serde(default, skip_serializing_if = "is_false")]
    pub loading: bool,
    /// The loading strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<McpLoadingStrategy>,
}

impl McpConnectReport {
    /// Every server with its status, in the order connected, failed, skipped, pending.
    pub fn servers(&self) -> impl Iterator<Item = (McpServerStatus, &McpServerReport)> {
        [
            (McpServerStatus::Connected, &self.connected),
            (McpServerStatus::Failed, &self.failed),
            (McpServerStatus::Skipped, &self.skipped),
            (McpServerStatus::Pending, &self.pending),
        ]
        .into_iter()
        .flat_map(|(status, list)| list.iter().map(move |server| (status, server)))
    }

    /// The list that holds servers of `status`.
    pub fn list_mut(&mut self, status: McpServerStatus) -> &mut Vec<McpServerReport> {
        match status {
            McpServerStatus::Connected => &mut self.connected,
            McpServerStatus::Failed => &mut self.failed,
            McpServerStatus::Skipped => &mut self.skipped,
            McpServerStatus::Pending => &mut self.pending,
        }
    }
}

/// `mcp_connect`: the MCP connection report of a run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpConnect {
    /// The report.
    #[serde(default)]
    pub report: McpConnectReport,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_reference_shape_parses_and_round_trips() {
        let value = json!({"report": {
            "connected": [{"scope": "project", "name": "fs", "toolCount": 4, "transport": "stdio",
                           "durationMs": 120}],
            "failed": [{"scope": "user", "name": "gh", "error": "spawn failed"}],
            "skipped": [{"name": "web", "reason": "untrusted"}],
            "pending": [{"scope": "user", "name": "slow", "reason": "startup budget exceeded"}],
            "toolCount": 4, "loading": true, "strategy": "eager"
        }});
        let record: McpConnect = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(record.report.tool_count, 4);
        assert_eq!(record.report.strategy, Some(McpLoadingStrategy::Eager));
        let servers: Vec<(&str, &str)> = record
            .report
            .servers()
            .map(|(status, s)| (status.as_str(), s.name.as_str()))
            .collect();
        assert_eq!(
            servers,
            [
                ("connected", "fs"),
                ("failed", "gh"),
                ("skipped", "web"),
                ("pending", "slow")
            ]
        );
        assert_eq!(serde_json::to_value(&record).unwrap(), value);
    }

    #[test]
    fn a_loose_report_parses_with_defaults() {
        let record: McpConnect = serde_json::from_value(json!({"report": {}})).unwrap();
        assert_eq!(record, McpConnect::default());
        let record: McpConnect = serde_json::from_value(json!({})).unwrap();
        assert_eq!(record.report.servers().count(), 0);
        let mut report = McpConnectReport::default();
        report
            .list_mut(McpServerStatus::Failed)
            .push(McpServerReport {
                name: "x".into(),
                ..McpServerReport::default()
            });
        assert_eq!(
            serde_json::to_value(&report).unwrap(),
            json!({"failed": [{"name": "x"}]})
        );
    }
}
