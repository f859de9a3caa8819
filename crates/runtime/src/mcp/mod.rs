//! MCP at run time: which servers a run starts and when, which agents see them, their tools
//! as agent tools (`mcp_search` / `mcp_call` or full schemas), and `mcp_connect` records.

pub mod check;
mod plan;
mod report;
mod runtime;
mod tools;

pub use plan::{McpSandboxes, PlannedServer, plan_for, server_spec};
pub use runtime::{McpHubCache, McpRuntime};
pub use tools::{definition_of, exposed_name};
