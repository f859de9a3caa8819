//! The human view of a plan (`braincode run --dry-run`).

use std::fmt::Write as _;

use braincode_brain::RuntimePlan;

/// Renders a plan as labelled sections.
pub fn format_plan(plan: &RuntimePlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Brain:     {} ({}) · {}",
        plan.brain_name, plan.brain_id, plan.mode
    );
    let mut routing = format!("{} → primary {}", plan.source.as_str(), plan.primary);
    if let Some(confidence) = plan.confidence {
        let _ = write!(routing, " · confidence {:.0}%", confidence * 100.0);
    }
    let _ = writeln!(out, "Routing:   {routing}");
    let _ = writeln!(out, "Reason:    {}", plan.reason);
    if let Some(fallback) = &plan.fallback_reason {
        let _ = writeln!(out, "Fallback:  router not used: {fallback}");
    }
    let limits = &plan.limits;
    let _ = writeln!(
        out,
        "Limits:    {} parallel · {} workers · {} todos",
        limits.max_parallel_agents, limits.max_worker_agents, limits.max_todos
    );
    let _ = writeln!(out, "Workers:");
    for worker in &plan.workers {
        let _ = writeln!(
            out,
            "  {:<8} {:<10} {}  [{}]",
            worker.phase.as_str(),
            worker.role.as_str(),
            worker.context_id,
            worker.model_chain.join(" → ")
        );
        let _ = writeln!(out, "           {}", worker.goal);
        if worker.writer {
            let _ = writeln!(
                out,
                "           writer: edits in its own git worktree, merged back after its upstream"
            );
        }
    }
    let _ = writeln!(out, "Todos:");
    for todo in &plan.todos {
        let _ = writeln!(
            out,
            "  {:<20} {:<10} {}",
            todo.id,
            todo.role.as_str(),
            todo.title
        );
    }
    if !plan.dependencies.is_empty() {
        let _ = writeln!(out, "Dependencies:");
        for edge in &plan.dependencies {
            let _ = writeln!(out, "  {} → {}", edge.from, edge.to);
        }
    }
    let _ = writeln!(
        out,
        "Review:    {}",
        if plan.requires_review {
            "required"
        } else {
            "not required"
        }
    );
    if plan.clarification.required {
        let _ = writeln!(out, "Clarification needed: {}", plan.clarification.question);
        for option in &plan.clarification.options {
            let _ = writeln!(out, "  - {}: {}", option.label, option.description);
        }
    } else {
        let _ = writeln!(out, "Clarification: not needed");
    }
    for warning in &plan.warnings {
        let _ = writeln!(out, "Warning:   {warning}");
    }
    out
}
