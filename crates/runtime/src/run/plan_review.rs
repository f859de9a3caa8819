//! The execution plan review: the side effects a run may have, declared before it acts.

use braincode_brain::RuntimePlan;
use braincode_protocol::{ExecutionPlanReview, Mode, SideEffect, ValidationPlan};

use crate::approval::PermissionMode;
use crate::run::state::RunShared;

/// The review record of `plan`, or `None` when the run cannot change anything.
pub(crate) fn plan_review(shared: &RunShared, plan: &RuntimePlan) -> Option<ExecutionPlanReview> {
    let mut effects = Vec::new();
    let effect = |kind: &str, target: &str, risk: &str| SideEffect {
        kind: kind.into(),
        target: target.into(),
        risk: risk.into(),
    };
    // (edit and patch target suffix, their risk, the commands' target, its risk)
    let declared = match shared.permission {
        PermissionMode::ReadOnly => None,
        PermissionMode::Ask => Some((
            " (asks a person)",
            "low",
            "shell/exec_command/write_stdin (asks a person)",
            "low",
        )),
        PermissionMode::AllowEdits => Some((
            "",
            "medium",
            "shell/exec_command/write_stdin (OS sandbox, otherwise asks a person)",
            "medium",
        )),
        PermissionMode::Yes => Some((
            "",
            "medium",
            "shell/exec_command/write_stdin/kill_background",
            "high",
        )),
    };
    if let Some((edit_suffix, edit_risk, commands, command_risk)) = declared {
        effects.push(effect(
            "file_edit",
            &format!("edit_file{edit_suffix}"),
            edit_risk,
        ));
        effects.push(effect(
            "patch",
            &format!("apply_patch{edit_suffix}"),
            edit_risk,
        ));
        effects.push(effect("command", commands, command_risk));
        if shared.permission == PermissionMode::Yes {
            effects.push(effect("script", "run_script", "high"));
        } else if shared.checks.config.enabled {
            effects.push(effect("checks", "run_check (OS sandbox)", "medium"));
        }
    }
    // MCP tools that may change things reach an agent only when the run may change things.
    let mcp_exposed =
        shared.permission != PermissionMode::ReadOnly && shared.mcp.startable().next().is_some();
    if mcp_exposed {
        for server in shared.mcp.startable() {
            effects.push(effect(
                "mcp",
                &format!("{}:{}", server.config.scope, server.name()),
                "medium",
            ));
        }
    }
    if effects.is_empty() {
        return None;
    }
    let radical = shared.mode == Mode::Radical;
    let mut triggers = Vec::new();
    if plan.requires_review {
        triggers.push("independent review required".to_string());
    }
    triggers.push("file mutation exposed".to_string());
    if shared.permission.may_change() {
        triggers.push("command execution exposed".to_string());
    }
    if !shared.checks.config.enabled {
        triggers.push("checks disabled".to_string());
    }
    if mcp_exposed {
        triggers.push("MCP exposed".to_string());
    }
    Some(ExecutionPlanReview {
        plan_id: format!("{}:plan", plan.brain_context.id),
        status: if radical {
            "auto_approved".into()
        } else {
            "approved".into()
        },
        approver: if radical {
            "mode_policy".into()
        } else {
            "runtime_policy".into()
        },
        required_review: plan.requires_review,
        proposed_side_effects: effects,
        validation_plan: ValidationPlan {
            checks: {
                let mut checks = Vec::new();
                let config = &shared.checks.config;
                checks.push(if !config.enabled {
                    "checks disabled".to_string()
                } else if !config.scripts.is_empty() {
                    format!("configured checks: {}", config.scripts.join(", "))
                } else {
                    format!(
                        "{} check selection by changed files (cargo, python, node, go, make)",
                        match config.strategy {
                            braincode_tools::CheckStrategy::Smart => "smart",
                            braincode_tools::CheckStrategy::All => "all",
                        }
                    )
                });
                if plan.requires_review {
                    checks.push("independent review worker".into());
                }
                checks
            },
            evidence: vec!["patch summary (git status)".into(), "git diff".into()],
            success_criteria: plan.todos.iter().map(|t| t.title.clone()).collect(),
        },
        risk_triggers: triggers,
        residual_pre_execution_risks: Vec::new(),
    })
}
