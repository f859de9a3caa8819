//! The gate every tool call passes before it runs: permission policy, then approval.

use async_trait::async_trait;
use braincode_llm::ToolCall;
use braincode_protocol::ToolCallOrigin;
use braincode_tools::ToolDefinition;

/// One tool call waiting for a decision.
pub struct GateRequest<'a> {
    /// The call as the model made it (arguments already parsed).
    pub call: &'a ToolCall,
    /// The tool it targets.
    pub tool: &'a ToolDefinition,
    /// Who is calling.
    pub origin: &'a ToolCallOrigin,
}

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    /// Run the call.
    Allow,
    /// Do not run it; the message goes back to the model as the tool's (error) output.
    Refuse(String),
}

/// Decides whether a tool call may run, and journals why.
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// Checks one call. Implementations record `tool_approval_decision` where relevant.
    async fn check(&self, request: GateRequest<'_>) -> GateOutcome;
}

/// A gate that lets everything through (tests, trusted internal agents).
pub struct OpenGate;

#[async_trait]
impl ToolGate for OpenGate {
    async fn check(&self, _request: GateRequest<'_>) -> GateOutcome {
        GateOutcome::Allow
    }
}
