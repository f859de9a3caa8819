//! MCP at run time: which servers a run starts and when, which agents see them, their tools
//! as agent tools (`mcp_search` / `mcp_call` or full schemas), and `mcp_connect` records.

pub mod check;
mod plan;
mod report;
mod runtime;
mod tools;

pub use plan::{McpSandboxes, PlannedServer, plan_for, plan_servers, server_spec};
pub use report::connect_report;
pub use runtime::{McpHubCache, McpRuntime};
pub use tools::{call_output_text, definition_of, exposed_name, permission_of};
