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

/// What an agent's hooks bring to the gate's check of one call.
#[derive(Clone, Copy, Default)]
pub struct GateHooks<'a> {
    /// The hooks to fire (`PermissionRequest`) before a person is asked.
    pub hooks: Option<&'a crate::hooks::AgentHooks>,
    /// A `PreToolUse` hook asked that a person decide this call: why.
    pub ask: Option<&'a str>,
}

/// Decides whether a tool call may run, and journals why.
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// Checks one call. Implementations record `tool_approval_decision` where relevant.
    async fn check(&self, request: GateRequest<'_>) -> GateOutcome;

    /// Checks one call with what the agent's hooks add. A gate that never asks a person
    /// cannot honour a hook's `ask`, so it refuses such a call (a hook only makes a call
    /// stricter); otherwise it checks as [`check`](Self::check) does.
    async fn check_with_hooks(
        &self,
        request: GateRequest<'_>,
        hooks: GateHooks<'_>,
    ) -> GateOutcome {
        if let Some(reason) = hooks.ask {
            return GateOutcome::Refuse(format!(
                "blocked: a PreToolUse hook asked that a person approve {} ({reason}) and nobody can approve it here",
                request.tool.name
            ));
        }
        self.check(request).await
    }

    /// Whether a person approved call `call_id` although it changes protected paths: what it
    /// changes there is then the new reference, not a change to undo (see
    /// [`crate::protect`]).
    fn person_approved_protected(&self, _call_id: &str) -> bool {
        false
    }
}

/// A gate that lets everything through (tests, trusted internal agents).
pub struct OpenGate;

#[async_trait]
impl ToolGate for OpenGate {
    async fn check(&self, _request: GateRequest<'_>) -> GateOutcome {
        GateOutcome::Allow
    }
}
