//! Why a server could not be reached or a call failed, in words a person can act on.

use crate::connection::CONNECTION_CLOSED;

/// An MCP failure. Every variant that comes from a stdio server carries the tail of its
/// stderr (the last lines a crashing server printed), secrets never included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The server's process could not be started (program not found, not executable, …).
    #[error("could not start `{command}`: {message}")]
    Spawn {
        /// The command as configured.
        command: String,
        /// The OS error.
        message: String,
    },
    /// The server's process exited (during startup or mid-run).
    #[error("server exited{}{}", exit_words(*code, *signal), tail_words(stderr_tail))]
    Exited {
        /// Exit code, if it exited normally.
        code: Option<i32>,
        /// Signal, if it was killed.
        signal: Option<i32>,
        /// The last lines of its stderr.
        stderr_tail: String,
    },
    /// A step took longer than its budget.
    #[error("{what} timed out after {after_ms} ms{}", tail_words(stderr_tail))]
    Timeout {
        /// `startup`, `initialize`, `tools/list`, `tools/call <tool>`.
        what: String,
        /// The budget.
        after_ms: u64,
        /// The last lines of its stderr (stdio servers).
        stderr_tail: String,
    },
    /// An HTTP server answered with an error status or could not be reached.
    #[error("HTTP {}: {message}", status.map_or_else(|| "connection failed".to_string(), |s| s.to_string()))]
    Http {
        /// The status, when there was a response.
        status: Option<u16>,
        /// What went wrong.
        message: String,
    },
    /// The server broke the protocol (bad JSON, unexpected message, closed stream).
    #[error("protocol error: {message}{}", tail_words(stderr_tail))]
    Protocol {
        /// What went wrong.
        message: String,
        /// The last lines of its stderr (stdio servers).
        stderr_tail: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("{code} · {message}{}", data.as_deref().map(|d| format!(" · {d}")).unwrap_or_default())]
    Rpc {
        /// JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
        /// Its data, as compact JSON.
        data: Option<String>,
    },
    /// No server of that name is configured in this hub.
    #[error("no MCP server named {0:?}")]
    UnknownServer(String),
    /// The server has no tool of that name.
    #[error("server {server:?} has no tool {tool:?}")]
    UnknownTool {
        /// The server.
        server: String,
        /// The tool asked for.
        tool: String,
    },
    /// The server died again after its one restart; it stays down for this run.
    #[error("server is down after a restart (last failure: {last})")]
    Down {
        /// The failure that took it down.
        last: Box<McpError>,
    },
    /// The caller cancelled.
    #[error("cancelled")]
    Cancelled,
}

fn exit_words(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!(" with code {code}"),
        (None, Some(signal)) => format!(" on signal {signal}"),
        (None, None) => String::new(),
    }
}

fn tail_words(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; stderr: {}", tail.trim())
    }
}

impl McpError {
    /// A short name of the failure kind (`spawn`, `exited`, `timeout`, `http`, `protocol`,
    /// `rpc`, `unknown_server`, `unknown_tool`, `down`, `cancelled`), for records.
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::Spawn { .. } => "spawn",
            McpError::Exited { .. } => "exited",
            McpError::Timeout { .. } => "timeout",
            McpError::Http { .. } => "http",
            McpError::Protocol { .. } => "protocol",
            McpError::Rpc { .. } => "rpc",
            McpError::UnknownServer(_) => "unknown_server",
            McpError::UnknownTool { .. } => "unknown_tool",
            McpError::Down { .. } => "down",
            McpError::Cancelled => "cancelled",
        }
    }

    /// What a person can do about it, when there is something to say.
    pub fn fix(&self) -> Option<String> {
        let fix = match self {
            McpError::Spawn { command, message } => spawn_fix(command, message),
            McpError::Exited { .. } => {
                "run the server's command by hand to see why it exits".to_string()
            }
            McpError::Timeout { what, .. } if what.starts_with("tools/call") => {
                "the tool took longer than its call timeout; raise `callTimeoutMs` for this \
                 server if it needs more time"
                    .to_string()
            }
            McpError::Timeout { .. } => "the server took longer than its startup timeout; raise \
                 `startupTimeoutMs` for it or check it starts by hand"
                .to_string(),
            McpError::Http { status, .. } => http_fix(*status),
            McpError::Protocol { message, .. } if message == CONNECTION_CLOSED => {
                "run the server's command by hand to see why it stops".to_string()
            }
            McpError::Protocol { .. } => {
                "check that the configured command or URL is an MCP server, and update it"
                    .to_string()
            }
            McpError::Rpc { code: -32601, .. } => {
                "the server does not support this request; update the server".to_string()
            }
            McpError::Rpc { code: -32602, .. } => {
                "the arguments do not match the tool's input schema".to_string()
            }
            McpError::Rpc { .. } | McpError::Cancelled => return None,
            McpError::UnknownServer(_) => {
                "check the name against the configured MCP servers".to_string()
            }
            McpError::UnknownTool { .. } => {
                "check the tool name against the tools the server lists".to_string()
            }
            McpError::Down { last } => match last.fix() {
                Some(fix) => format!("{fix}, then start a new session"),
                None => "fix the server, then start a new session".to_string(),
            },
        };
        Some(fix)
    }
}

fn spawn_fix(command: &str, message: &str) -> String {
    let program = command.split_whitespace().next().unwrap_or(command);
    let lower = message.to_ascii_lowercase();
    if lower.contains("os error 2") || lower.contains("no such file") {
        format!("check that `{program}` is installed and on PATH, or fix `command`")
    } else if lower.contains("os error 13") || lower.contains("permission denied") {
        format!("make `{program}` executable, or fix `command`")
    } else {
        format!("check that `{program}` can be run by hand")
    }
}

fn http_fix(status: Option<u16>) -> String {
    match status {
        None => "check that the server is running and that `url` is right",
        Some(401 | 403) => "check the server's `headers` (e.g. Authorization)",
        Some(404) => "check the server's `url` (the MCP endpoint path, often `/mcp`)",
        Some(300..=399) => "the server redirects: put the final address in `url`",
        Some(429) => "the server is rate limiting; wait and try again",
        Some(500..=599) => "the server failed; check its logs or try again later",
        Some(_) => "check the server's `url` and `headers`",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spawn_not_found_names_the_program() {
        let e = McpError::Spawn {
            command: "npx -y server".into(),
            message: "No such file or directory (os error 2)".into(),
        };
        assert_eq!(
            e.fix().as_deref(),
            Some("check that `npx` is installed and on PATH, or fix `command`")
        );
    }

    #[test]
    fn every_kind_has_words() {
        let exited = McpError::Exited {
            code: Some(3),
            signal: None,
            stderr_tail: "boom".into(),
        };
        assert_eq!(
            exited.to_string(),
            "server exited with code 3; stderr: boom"
        );
        assert!(exited.fix().is_some());
        let startup = McpError::Timeout {
            what: "initialize".into(),
            after_ms: 10,
            stderr_tail: String::new(),
        };
        assert!(
            startup
                .fix()
                .is_some_and(|f| f.contains("startupTimeoutMs"))
        );
        let call = McpError::Timeout {
            what: "tools/call hang".into(),
            after_ms: 10,
            stderr_tail: String::new(),
        };
        assert!(call.fix().is_some_and(|f| f.contains("callTimeoutMs")));
        let unauthorized = McpError::Http {
            status: Some(401),
            message: "unauthorized".into(),
        };
        assert_eq!(unauthorized.to_string(), "HTTP 401: unauthorized");
        assert!(
            unauthorized
                .fix()
                .is_some_and(|f| f.contains("Authorization"))
        );
        let down = McpError::Down {
            last: Box::new(exited),
        };
        assert!(down.fix().is_some_and(|f| f.contains("new session")));
        assert_eq!(McpError::Cancelled.fix(), None);
    }
}
