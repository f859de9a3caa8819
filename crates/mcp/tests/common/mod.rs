//! Shared helpers of the MCP integration tests: specs for the test server, arguments, and
//! process checks.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use braincode_mcp::{Arguments, CallOutput, Content, Endpoint, ServerSpec};
use braincode_test_support::mcp::test_server_binary;
use serde_json::Value;

/// The test server's tools without `MCP_TEST_EXTRA_TOOLS`, in `tools/list` order.
pub const BASE_TOOLS: [&str; 8] = [
    "echo",
    "add",
    "fail",
    "hang",
    "crash",
    "write_marker",
    "image",
    "env",
];

/// The names of a connection's tools.
pub fn tool_names(conn: &braincode_mcp::Connection) -> Vec<&str> {
    conn.tools().iter().map(|t| t.name.as_str()).collect()
}

/// A stdio spec running the test server with `env`.
pub fn stdio_spec(name: &str, env: &[(&str, &str)]) -> ServerSpec {
    let binary = test_server_binary();
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let display = format!("{} --stdio", binary.display());
    let factory = move || {
        let mut command = Command::new(&binary);
        command.arg("--stdio").envs(env.iter().map(|(k, v)| (k, v)));
        command
    };
    spec_with(name, Arc::new(factory), display)
}

/// A stdio spec that runs the test server through `sh`, which first appends its pid (the
/// server's pid, as it then `exec`s) to `pid_file`: one line per spawn.
pub fn counted_spec(name: &str, env: &[(&str, &str)], pid_file: &Path) -> ServerSpec {
    let binary = test_server_binary();
    let script = format!(
        "echo $$ >> '{}'; exec '{}' --stdio",
        pid_file.display(),
        binary.display()
    );
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    let factory = move || {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&script)
            .envs(env.iter().map(|(k, v)| (k, v)));
        command
    };
    spec_with(name, Arc::new(factory), "sh -c test-server".to_string())
}

/// A stdio spec for a program that does not exist.
pub fn missing_program_spec(name: &str) -> ServerSpec {
    let factory = || Command::new("braincode-no-such-mcp-server");
    spec_with(
        name,
        Arc::new(factory),
        "braincode-no-such-mcp-server --stdio".to_string(),
    )
}

fn spec_with(name: &str, command: braincode_mcp::CommandFactory, display: String) -> ServerSpec {
    ServerSpec {
        name: name.to_string(),
        endpoint: Endpoint::Stdio { command, display },
        startup_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(20),
    }
}

/// An HTTP spec for `url` with `headers`.
pub fn http_spec(name: &str, url: &str, headers: &[(&str, &str)]) -> ServerSpec {
    let headers: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    ServerSpec {
        name: name.to_string(),
        endpoint: Endpoint::Http {
            url: url.to_string(),
            headers,
        },
        startup_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(20),
    }
}

/// Tool arguments from a JSON object literal.
pub fn args(value: Value) -> Arguments {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The text blocks of a result, joined.
pub fn text(out: &CallOutput) -> String {
    out.content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a process is gone (no /proc entry, or a zombie nobody reaped yet).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Waits (generously) for a process to be gone.
pub async fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if process_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    process_gone(pid)
}

/// The pids written by [`counted_spec`], in spawn order.
pub fn spawned_pids(pid_file: &Path) -> Vec<u32> {
    std::fs::read_to_string(pid_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The lines of a call log.
pub fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}
