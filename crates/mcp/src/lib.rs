//! MCP client hub: connects to MCP servers over stdio (a child process in its own process
//! group) or streamable HTTP, lists their tools and calls them, with a startup and a call
//! timeout per server, a restart of a server that dies, and failure reasons a person can act
//! on (exit code and stderr tail, timeout, protocol error).
//!
//! The `rmcp` SDK does the protocol; this crate's types are ours, so the rest of Braincode
//! never sees an `rmcp` type.

mod connection;
mod convert;
mod error;
mod http;
mod hub;
mod process;
mod types;

pub use connection::Connection;
pub use error::McpError;
pub use hub::{Hub, ServerState, ServerStatus};
pub use types::{
    Arguments, CallOutput, CommandFactory, Content, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT,
    Endpoint, ServerInfo, ServerSpec, ToolInfo,
};
