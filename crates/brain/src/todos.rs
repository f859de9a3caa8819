//! Todo ids and the dependency graph between todos.

use std::collections::{HashMap, HashSet};

use braincode_protocol::{Role, Todo, TodoDependency};

/// Longest todo id kept, in characters.
pub const TODO_ID_MAX_CHARS: usize = 64;

/// The id shape used when a todo has none: `todo-NN-<role>` (NN 1-based, two digits; the
/// role lower-cased so the id stays within `[a-z0-9_-]`).
pub fn fallback_todo_id(index: usize, role: Role) -> String {
    format!(
        "todo-{:02}-{}",
        index.saturating_add(1),
        role.as_str().to_ascii_lowercase()
    )
}

/// Lower-cases `raw` and turns every run of characters outside `[a-z0-9_-]` into one `-`,
/// trimming `-` at both ends. The result may be empty.
pub fn slug(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut pending_dash = false;
    for c in raw.trim().chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c);
        } else {
            pending_dash = true;
        }
    }
    let trimmed = out.trim_matches('-');
    trimmed
        .chars()
        .take(TODO_ID_MAX_CHARS)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string()
}

/// Normalizes a todo id: [`slug`] of `raw`, or [`fallback_todo_id`] when that is empty.
/// `index` is the todo's 0-based position.
pub fn normalize_todo_id(raw: &str, index: usize, role: Role) -> String {
    let id = slug(raw);
    if id.is_empty() {
        fallback_todo_id(index, role)
    } else {
        id
    }
}

/// Makes `id` unique among `taken` by appending `-2`, `-3`, … and records it.
pub fn unique_todo_id(id: String, taken: &mut HashSet<String>) -> String {
    let mut candidate = id.clone();
    let mut suffix = 2usize;
    while taken.contains(&candidate) {
        candidate = format!("{id}-{suffix}");
        suffix += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// Where a todo runs relative to the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Support,
    Primary,
    Review,
}

fn stage(role: Role, primary: Role) -> Stage {
    if role == primary {
        Stage::Primary
    } else if role == Role::Review {
        Stage::Review
    } else {
        Stage::Support
    }
}

/// Whether `from` may precede `to`, given that support runs before the primary and review
/// runs last: review only feeds review; anything may feed review; support only comes from
/// support; the primary only from the primary or support.
fn executable(from: Stage, to: Stage) -> bool {
    match (from, to) {
        (Stage::Review, to) => to == Stage::Review,
        (_, Stage::Review) => true,
        (Stage::Support, _) => true,
        (Stage::Primary, to) => to == Stage::Primary,
    }
}

/// Whether adding `from -> to` would close a cycle (is `from` reachable from `to`?).
fn reaches(edges: &[TodoDependency], start: &str, target: &str) -> bool {
    let mut stack = vec![start];
    let mut seen: HashSet<&str> = HashSet::new();
    while let Some(node) = stack.pop() {
        if node == target {
            return true;
        }
        if seen.insert(node) {
            stack.extend(
                edges
                    .iter()
                    .filter(|e| e.from == node)
                    .map(|e| e.to.as_str()),
            );
        }
    }
    false
}

/// The outcome of [`normalize_dependencies_with_warnings`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NormalizedDependencies {
    /// The kept and implicit edges, without duplicates.
    pub edges: Vec<TodoDependency>,
    /// What was dropped and why.
    pub warnings: Vec<String>,
}

/// Like [`normalize_dependencies`], also saying which explicit edges were dropped.
pub fn normalize_dependencies_with_warnings(
    todos: &[Todo],
    edges: &[TodoDependency],
    primary: Role,
) -> NormalizedDependencies {
    let mut by_id: HashMap<String, &Todo> = HashMap::new();
    for todo in todos {
        by_id.entry(todo.id.clone()).or_insert(todo);
        by_id.entry(slug(&todo.id)).or_insert(todo);
    }
    let mut out = NormalizedDependencies::default();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut push =
        |out: &mut NormalizedDependencies, from: &Todo, to: &Todo, reason: Option<String>| {
            if from.id == to.id || !seen.insert((from.id.clone(), to.id.clone())) {
                return;
            }
            out.edges.push(TodoDependency {
                from: from.id.clone(),
                to: to.id.clone(),
                reason,
            });
        };

    for edge in edges {
        let lookup = |raw: &str| {
            by_id
                .get(raw.trim())
                .or_else(|| by_id.get(&slug(raw)))
                .copied()
        };
        let (Some(from), Some(to)) = (lookup(&edge.from), lookup(&edge.to)) else {
            out.warnings.push(format!(
                "dropped dependency {} -> {}: unknown todo id",
                edge.from, edge.to
            ));
            continue;
        };
        if from.id == to.id {
            continue;
        }
        if !executable(stage(from.role, primary), stage(to.role, primary)) {
            out.warnings.push(format!(
                "dropped dependency {} -> {}: a {} todo cannot wait for a {} todo that runs later",
                from.id, to.id, to.role, from.role
            ));
            continue;
        }
        if reaches(&out.edges, &to.id, &from.id) {
            out.warnings.push(format!(
                "dropped dependency {} -> {}: it would close a cycle",
                from.id, to.id
            ));
            continue;
        }
        push(&mut out, from, to, edge.reason.clone());
    }

    let of_stage = |wanted: Stage| {
        todos
            .iter()
            .filter(move |t| stage(t.role, primary) == wanted)
            .collect::<Vec<_>>()
    };
    let (support, primary_todos, review) = (
        of_stage(Stage::Support),
        of_stage(Stage::Primary),
        of_stage(Stage::Review),
    );
    for from in &support {
        for to in &primary_todos {
            push(
                &mut out,
                from,
                to,
                Some("support result feeds the primary".into()),
            );
        }
    }
    let feeders: Vec<&Todo> = if primary_todos.is_empty() {
        todos
            .iter()
            .filter(|t| stage(t.role, primary) != Stage::Review)
            .collect()
    } else {
        primary_todos
    };
    for from in &feeders {
        for to in &review {
            push(
                &mut out,
                from,
                to,
                Some("review checks the finished work".into()),
            );
        }
    }
    out
}

/// Normalizes the dependency edges of a plan.
///
/// Explicit edges are matched by id after the same normalization todo ids get (so `Build
/// UI` finds `build-ui`), and kept only when both todos exist, the edge is not a self-loop,
/// it is executable (review only feeds review; anything may feed review; support todos only
/// wait for support todos; primary todos wait for primary or support todos) and it does not
/// close a cycle. Implicit edges are then added: every support todo feeds every primary todo,
/// and every primary todo (or every non-review todo when there is none) feeds every review
/// todo. Duplicates are removed, the first reason kept.
pub fn normalize_dependencies(
    todos: &[Todo],
    edges: &[TodoDependency],
    primary: Role,
) -> Vec<TodoDependency> {
    normalize_dependencies_with_warnings(todos, edges, primary).edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use braincode_protocol::TaskStatus;

    fn todo(id: &str, role: Role) -> Todo {
        Todo {
            id: id.into(),
            title: id.into(),
            role,
            status: TaskStatus::Pending,
            reason: None,
            summary: None,
            error: None,
        }
    }

    fn edge(from: &str, to: &str) -> TodoDependency {
        TodoDependency {
            from: from.into(),
            to: to.into(),
            reason: None,
        }
    }

    fn pairs(edges: &[TodoDependency]) -> Vec<(&str, &str)> {
        edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str()))
            .collect()
    }

    #[test]
    fn todo_ids_are_slugged_or_generated() {
        assert_eq!(
            normalize_todo_id("  Build the UI!! ", 0, Role::Frontend),
            "build-the-ui"
        );
        assert_eq!(normalize_todo_id("--a__b--", 0, Role::Frontend), "a__b");
        assert_eq!(
            normalize_todo_id("改一下", 2, Role::ImageMaker),
            "todo-03-imagemaker"
        );
        assert_eq!(normalize_todo_id("", 9, Role::Review), "todo-10-review");
        assert_eq!(
            normalize_todo_id(&"x".repeat(100), 0, Role::Qa).len(),
            TODO_ID_MAX_CHARS
        );
        let mut taken = HashSet::new();
        assert_eq!(unique_todo_id("a".into(), &mut taken), "a");
        assert_eq!(unique_todo_id("a".into(), &mut taken), "a-2");
        assert_eq!(unique_todo_id("a".into(), &mut taken), "a-3");
    }

    #[test]
    fn explicit_edges_must_be_executable() {
        let todos = [
            todo("map", Role::Librarian),
            todo("api", Role::Backend),
            todo("ui", Role::Frontend),
            todo("check", Role::Review),
        ];
        let edges = [
            edge("map", "api"),   // support -> support: kept
            edge("ui", "api"),    // primary -> support: dropped
            edge("check", "ui"),  // review -> primary: dropped
            edge("api", "api"),   // self loop: dropped
            edge("ghost", "ui"),  // unknown: dropped
            edge("map", "check"), // anything -> review: kept
        ];
        let result = normalize_dependencies_with_warnings(&todos, &edges, Role::Frontend);
        assert_eq!(
            pairs(&result.edges),
            vec![
                ("map", "api"),
                ("map", "check"),
                ("map", "ui"),
                ("api", "ui"),
                ("ui", "check"),
            ]
        );
        assert_eq!(result.warnings.len(), 3, "{:?}", result.warnings);
    }

    #[test]
    fn edge_ids_are_normalized_like_todo_ids() {
        let todos = [
            todo("build-api", Role::Backend),
            todo("build-ui", Role::Frontend),
        ];
        let edges = [
            edge("  Build API ", "Build UI"),
            edge("BUILD API", "build ui"),
        ];
        let result = normalize_dependencies(&todos, &edges, Role::Qa);
        assert_eq!(pairs(&result), vec![("build-api", "build-ui")]);
    }

    #[test]
    fn cycles_are_refused() {
        let todos = [todo("a", Role::Backend), todo("b", Role::Dba)];
        let result = normalize_dependencies_with_warnings(
            &todos,
            &[edge("a", "b"), edge("b", "a")],
            Role::Rush,
        );
        assert_eq!(pairs(&result.edges), vec![("a", "b")]);
        assert!(result.warnings[0].contains("cycle"));
    }

    #[test]
    fn review_waits_for_everything_when_there_is_no_primary_todo() {
        let todos = [todo("a", Role::Backend), todo("r", Role::Review)];
        let result = normalize_dependencies(&todos, &[], Role::Frontend);
        assert_eq!(pairs(&result), vec![("a", "r")]);
    }
}
