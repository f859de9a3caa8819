//! Coding tools, the permission policy that guards them, and the per-run evidence cache.
//!
//! Every tool implements [`Tool`]. Before a call runs, the runtime asks the
//! [`PermissionPolicy`] (deny > ask > allow) and then the approval flow; the tools themselves
//! also confine paths to the project root, so a bypassed approval still cannot write outside it.

mod tool;

pub use tool::{
    SharedTool, Tool, ToolContext, ToolDefinition, ToolOutput, ToolPermission, ToolRisk,
};
