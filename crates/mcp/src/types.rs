//! The values the hub takes and gives: server specs, tools, call results.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Connect (spawn or HTTP + `initialize` + `tools/list`) budget when the config gives none.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(15);
/// Budget of one `tools/call` when the config gives none.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Builds the command of a stdio server, afresh for every start (a restart spawns again).
/// The caller decides what the command is: plain, or wrapped in the OS sandbox; with its
/// environment already set and secrets scrubbed. The hub adds stdio pipes and its own
/// process group.
pub type CommandFactory = Arc<dyn Fn() -> std::process::Command + Send + Sync>;

/// How to reach a server.
#[derive(Clone)]
pub enum Endpoint {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        /// Builds the command to spawn.
        command: CommandFactory,
        /// For messages: the program and arguments as configured (`npx -y server`).
        display: String,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint URL.
        url: String,
        /// Extra headers (already expanded), e.g. `Authorization`.
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Header values are secrets: never printed.
            Endpoint::Stdio { display, .. } => write!(f, "stdio `{display}`"),
            Endpoint::Http { url, headers } => {
                write!(f, "http {url}")?;
                if !headers.is_empty() {
                    let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                    write!(f, " (headers: {})", names.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// One server the hub may connect to.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Its name (the key in `mcp.json`); tools are exposed as `mcp__<name>__<tool>`.
    pub name: String,
    /// How to reach it.
    pub endpoint: Endpoint,
    /// Budget for spawn/connect + `initialize` + `tools/list`.
    pub startup_timeout: Duration,
    /// Budget for one `tools/call`.
    pub call_timeout: Duration,
}

/// What the server said about itself in `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// `serverInfo.version`.
    pub version: Option<String>,
    /// The negotiated protocol version.
    pub protocol_version: Option<String>,
    /// The server's `instructions`, if any.
    pub instructions: Option<String>,
}

/// One tool of a server, as `tools/list` described it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    /// The tool's own name (without the `mcp__server__` prefix).
    pub name: String,
    /// `title` (or `annotations.title`), if any.
    pub title: Option<String>,
    /// `description` (empty when absent).
    pub description: String,
    /// `inputSchema` (an open object schema when absent).
    pub input_schema: Value,
    /// `annotations.readOnlyHint == true`.
    pub read_only: bool,
    /// `annotations.destructiveHint`, when given.
    pub destructive: Option<bool>,
}

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64.
    Image {
        /// MIME type.
        mime_type: String,
        /// Base64 data.
        data: String,
    },
    /// Audio, base64 (passed on as a note: no model we speak takes audio tool results).
    Audio {
        /// MIME type.
        mime_type: String,
        /// Base64 data.
        data: String,
    },
    /// An embedded resource.
    Resource {
        /// Its URI.
        uri: String,
        /// MIME type, if given.
        mime_type: Option<String>,
        /// Its text (text resources).
        text: Option<String>,
        /// Size in bytes of a binary resource's base64 blob.
        blob_len: Option<usize>,
    },
    /// A link to a resource.
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// Its description.
        description: Option<String>,
    },
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallOutput {
    /// Content blocks in order.
    pub content: Vec<Content>,
    /// `structuredContent`, if any.
    pub structured: Option<Value>,
    /// `isError`: the tool ran and reports a failure.
    pub is_error: bool,
}

/// Arguments of a tool call: a JSON object.
pub type Arguments = Map<String, Value>;
