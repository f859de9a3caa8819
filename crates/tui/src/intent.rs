//! `/intent` (Ctrl+O): the latest request's plan as a graph — what it asked, how it was
//! routed, and its todos in layers (a todo sits one layer below the last todo it waits on),
//! rooted at the Brain, each with its status. A dependency cycle (a plan the router got
//! wrong) is shown, not looped on.

use braincode_protocol::{FinalReport, TaskStatus, Todo, TodoDependency};

/// The status glyph of a todo.
fn glyph(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Pending => "○",
        TaskStatus::Running => "◐",
        TaskStatus::Completed => "●",
        TaskStatus::Blocked => "⊘",
        TaskStatus::Failed => "✗",
    }
}

/// The layer of each todo (0: waits on nothing), or `None` for a todo in a cycle.
pub fn layers(todos: &[Todo], dependencies: &[TodoDependency]) -> Vec<Option<usize>> {
    let index = |id: &str| todos.iter().position(|todo| todo.id == id);
    let edges: Vec<(usize, usize)> = dependencies
        .iter()
        .filter_map(|edge| Some((index(&edge.from)?, index(&edge.to)?)))
        .filter(|(from, to)| from != to)
        .collect();
    let mut layer = vec![None; todos.len()];
    let mut waiting: Vec<usize> = (0..todos.len())
        .map(|node| edges.iter().filter(|(_, to)| *to == node).count())
        .collect();
    let mut ready: Vec<usize> = (0..todos.len()).filter(|n| waiting[*n] == 0).collect();
    for node in &ready {
        layer[*node] = Some(0);
    }
    // Kahn's order: a todo's layer is one below the deepest todo it waits on.
    while let Some(node) = ready.pop() {
        let depth = layer[node].unwrap_or(0);
        for (_, to) in edges.iter().filter(|(from, _)| *from == node) {
            layer[*to] = Some(layer[*to].map_or(depth + 1, |d: usize| d.max(depth + 1)));
            waiting[*to] -= 1;
            if waiting[*to] == 0 {
                ready.push(*to);
            }
        }
    }
    // A todo still waiting is on a cycle: no layer.
    for (node, left) in waiting.iter().enumerate() {
        if *left > 0 {
            layer[node] = None;
        }
    }
    layer
}

/// The intent graph of a run: header lines, then the todo layers.
pub fn intent_lines(report: &FinalReport, dependencies: &[TodoDependency]) -> Vec<String> {
    let routing = &report.routing;
    let task = report.task.lines().next().unwrap_or_default();
    let mut lines = vec![
        format!("Intent      {}", braincode_protocol::clip_chars(task, 120)),
        format!(
            "Mode        {} · brain {}",
            report.brain.mode.as_str(),
            report.brain.id
        ),
        format!("Primary     {}", routing.primary_role),
        format!("Routing     {}", routing.source.as_str()),
    ];
    if let Some(confidence) = routing.confidence {
        lines.push(format!("Confidence  {:.0}%", confidence * 100.0));
    }
    if let Some(reason) = &routing.reason {
        lines.push(format!(
            "Reason      {}",
            braincode_protocol::clip_chars(reason, 160)
        ));
    }
    let workers: Vec<String> = routing
        .workers
        .iter()
        .map(|worker| worker.role.to_string())
        .collect();
    if !workers.is_empty() {
        lines.push(format!("Workers     {}", workers.join(", ")));
    }
    lines.push(String::new());
    lines.push(format!("● brain root ({})", routing.primary_role));
    let todos = &report.todos;
    if todos.is_empty() {
        lines.push("└─ no todos (a direct answer)".into());
        return lines;
    }
    let layer = layers(todos, dependencies);
    let deepest = layer.iter().flatten().max().copied().unwrap_or(0);
    let mut rows: Vec<(usize, &Todo)> = Vec::new();
    for depth in 0..=deepest {
        for (todo, _) in todos.iter().zip(&layer).filter(|(_, l)| **l == Some(depth)) {
            rows.push((depth, todo));
        }
    }
    let cyclic: Vec<&Todo> = todos
        .iter()
        .zip(&layer)
        .filter(|(_, l)| l.is_none())
        .map(|(todo, _)| todo)
        .collect();
    let last = rows.len() + usize::from(!cyclic.is_empty());
    for (at, (depth, todo)) in rows.iter().enumerate() {
        let branch = if at + 1 == last { "└─" } else { "├─" };
        let after: Vec<&str> = dependencies
            .iter()
            .filter(|edge| edge.to == todo.id)
            .map(|edge| edge.from.as_str())
            .collect();
        let after = if after.is_empty() {
            String::new()
        } else {
            format!("  (after {})", after.join(", "))
        };
        lines.push(format!(
            "{branch}{} {} {} [{}]{after}",
            "──".repeat(*depth),
            glyph(todo.status),
            todo.title,
            todo.role
        ));
    }
    if !cyclic.is_empty() {
        let ids: Vec<&str> = cyclic.iter().map(|todo| todo.id.as_str()).collect();
        lines.push(format!("└─ ↻ cycle: {} wait on each other", ids.join(", ")));
    }
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use braincode_protocol::{JournalEntry, Record};
    use braincode_session::fold::RunState;
    use serde_json::json;

    fn apply(state: &mut RunState, record: serde_json::Value) {
        let record: Record = serde_json::from_value(record).unwrap();
        state.apply(&JournalEntry::new(0, record));
    }

    #[test]
    fn a_todo_sits_below_the_deepest_one_it_waits_on_and_a_cycle_is_named() {
        let mut state = RunState::new("s1");
        apply(
            &mut state,
            json!({"type": "run_start", "prompt": "fix the login\nand more"}),
        );
        let todo = |id: &str, role: &str, status: &str| json!({"id": id, "title": format!("do {id}"), "role": role, "status": status});
        let edge = |from: &str, to: &str| json!({"from": from, "to": to});
        apply(
            &mut state,
            json!({"type": "todo_plan", "todos": [
                todo("map", "librarian", "completed"), todo("secure", "security", "running"),
                todo("fix", "backend", "pending"), todo("a", "qa", "pending"), todo("b", "qa", "pending")
            ], "dependencies": [
                edge("map", "secure"), edge("map", "fix"), edge("secure", "fix"),
                edge("a", "b"), edge("b", "a")
            ]}),
        );
        let report = state.report();
        assert_eq!(
            layers(&report.todos, state.dependencies()),
            [Some(0), Some(1), Some(2), None, None]
        );
        let graph = intent_lines(&report, state.dependencies()).join("\n");
        assert!(graph.starts_with("Intent      fix the login\n"), "{graph}");
        assert!(graph.contains("├─ ● do map [librarian]"), "{graph}");
        assert!(
            graph.contains("├─── ◐ do secure [security]  (after map)"),
            "{graph}"
        );
        assert!(
            graph.contains("├───── ○ do fix [backend]  (after map, secure)"),
            "{graph}"
        );
        assert!(
            graph.ends_with("└─ ↻ cycle: a, b wait on each other"),
            "{graph}"
        );
    }
}
