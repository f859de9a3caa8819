//! `dispatch_specialist`: lets the primary ask one more isolated specialist mid-run, within a
//! budget (auto 2, radical 4 per run).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use braincode_brain::RuntimeWorkerPlan;
use braincode_protocol::{ContextId, DispatchPhase, DynamicDispatch, Record, Role, WorkerPhase};
use braincode_tools::{Tool, ToolContext, ToolDefinition, ToolOutput, ToolPermission, ToolRisk};
use serde_json::{Value, json};

use crate::run::prompts::format_results;
use crate::run::state::RunShared;
use crate::run::workers::{WorkerJob, run_worker};

/// Roles the primary may dispatch to.
pub(crate) fn dispatchable(role: Role) -> bool {
    role.is_routed() && !matches!(role, Role::Review | Role::Rush | Role::ImageMaker)
}

/// The tool.
pub(crate) struct DispatchTool {
    definition: ToolDefinition,
    shared: Arc<RunShared>,
    parent: ContextId,
    primary_role: Role,
    max: u32,
    used: AtomicU32,
}

impl DispatchTool {
    /// A tool with `max` dispatches for the run.
    pub fn new(shared: Arc<RunShared>, parent: ContextId, primary_role: Role, max: u32) -> Self {
        let roles: Vec<&str> = Role::ROUTED
            .iter()
            .copied()
            .filter(|r| dispatchable(*r))
            .map(Role::as_str)
            .collect();
        let definition = ToolDefinition {
            name: "dispatch_specialist".into(),
            description: format!(
                "Ask one isolated specialist for help with a focused sub-question (at most {max} per run). \
                 The specialist sees only the request, your goal and the project support files, and returns a typed result."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "role": {"type": "string", "enum": roles, "description": "The specialist role."},
                    "goal": {"type": "string", "description": "A self-contained goal for the specialist."},
                    "reason": {"type": "string", "description": "Why you need it."}
                },
                "required": ["role", "goal"],
                "additionalProperties": false
            }),
            permission: ToolPermission::Read,
            risk: ToolRisk::Low,
        };
        Self {
            definition,
            shared,
            parent,
            primary_role,
            max,
            used: AtomicU32::new(0),
        }
    }
}

fn rejected(reason: impl std::fmt::Display) -> ToolOutput {
    ToolOutput::error(format!("dispatch_specialist rejected: {reason}"))
}

#[async_trait]
impl Tool for DispatchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: Value, _context: &ToolContext) -> ToolOutput {
        let role = match arguments
            .get("role")
            .and_then(Value::as_str)
            .map(str::parse::<Role>)
        {
            Some(Ok(role)) if dispatchable(role) => role,
            Some(Ok(role)) => return rejected(format!("role {role} cannot be dispatched")),
            Some(Err(err)) => return rejected(err),
            None => return rejected("missing `role`"),
        };
        let goal = arguments
            .get("goal")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default();
        if goal.is_empty() {
            return rejected("`goal` is empty");
        }
        let reason = arguments
            .get("reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        // Reserve a slot atomically so parallel calls cannot overspend the budget.
        let reserved = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                (used < self.max).then_some(used + 1)
            });
        let Ok(previous) = reserved else {
            return rejected(format!("the dispatch budget of {} is used up", self.max));
        };
        let number = previous + 1;
        // Derived from the request, not from the order: dispatches of one turn run at once.
        let context_id = ContextId(self.shared.ids.derived(&format!("dispatch:{role}:{goal}")));
        self.shared
            .sink
            .record(Record::DynamicDispatch(DynamicDispatch {
                phase: DispatchPhase::Request,
                role,
                goal: Some(goal.to_string()),
                reason: reason.clone(),
                context_id: context_id.to_string(),
                primary_role: Some(self.primary_role),
                status: None,
                summary: None,
            }));
        let policy = self.shared.brain.policy(role);
        let job = WorkerJob {
            plan: RuntimeWorkerPlan {
                role,
                phase: WorkerPhase::Support,
                goal: goal.to_string(),
                reason: reason.unwrap_or_else(|| "dispatched by the primary agent".into()),
                context_id: context_id.clone(),
                todo_ids: Vec::new(),
                model_chain: policy.chain(),
                thinking_level: policy.thinking_level,
                writer: false,
            },
            parent: self.parent.clone(),
            upstream: Vec::new(),
            prompt_override: None,
            place: None,
        };
        let run = match run_worker(&self.shared, job).await {
            Ok(run) => run,
            Err(err) => return ToolOutput::error(format!("dispatch_specialist stopped: {err}")),
        };
        self.shared
            .sink
            .record(Record::DynamicDispatch(DynamicDispatch {
                phase: DispatchPhase::Result,
                role,
                goal: None,
                reason: None,
                context_id: context_id.to_string(),
                primary_role: Some(self.primary_role),
                status: Some(run.status()),
                summary: Some(braincode_context::clip_chars(&run.result.summary, 2_000)),
            }));
        let text = format!(
            "Specialist {role} ({}) — dispatch {number}/{} used\n{}",
            run.status().as_str(),
            self.max,
            format_results(&[run.forwarded()])
        );
        ToolOutput::ok(text)
    }
}
