//! Makefiles: finding the project's Makefile, reading its rules (targets, prerequisites,
//! recipes), and the recipe text a target runs with its prerequisites.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::resolve::{MAX_SCRIPT_NESTING, ScriptBody};

/// The rules of the project's Makefile (`None` when there is none; one that cannot be read
/// has no rules).
pub(super) fn makefile_rules(root: &Path) -> Option<BTreeMap<String, MakeRule>> {
    let path = makefile(root)?;
    let name = path.file_name()?.to_str()?;
    Some(parse_makefile(
        &crate::paths::read_project_text(root, name).unwrap_or_default(),
    ))
}

fn makefile(root: &Path) -> Option<PathBuf> {
    ["GNUmakefile", "makefile", "Makefile"]
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
}

#[derive(Debug, Default)]
pub(super) struct MakeRule {
    prerequisites: Vec<String>,
    recipe: Vec<String>,
}

fn parse_makefile(text: &str) -> BTreeMap<String, MakeRule> {
    let mut rules: BTreeMap<String, MakeRule> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    let joined = text.replace("\\\n", " ");
    // `.RECIPEPREFIX = >` makes recipe lines start with `>` instead of a tab.
    let mut prefix = '\t';
    for line in joined.lines() {
        if let Some(value) = line.trim_start().strip_prefix(".RECIPEPREFIX") {
            let value = value
                .trim_start()
                .trim_start_matches([':', '+', '?', '!'])
                .trim_start_matches('=');
            prefix = value.trim().chars().next().unwrap_or('\t');
            continue;
        }
        if let Some(recipe) = line.strip_prefix(prefix) {
            let command = recipe.trim_start_matches(['@', '-', '+']).trim();
            if !command.is_empty() {
                for target in &current {
                    rules
                        .entry(target.clone())
                        .or_default()
                        .recipe
                        .push(command.to_string());
                }
            }
            continue;
        }
        let trimmed = line.trim_end();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        current.clear();
        let Some((targets, rest)) = trimmed.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || targets.contains('=') {
            continue;
        }
        let rest = rest.trim_start_matches(':');
        let (prerequisites, inline) = match rest.split_once(';') {
            Some((prerequisites, inline)) => (prerequisites, Some(inline.trim())),
            None => (rest, None),
        };
        for target in targets.split_whitespace() {
            if target.starts_with('.') || target.contains('%') || target.contains('$') {
                continue;
            }
            let rule = rules.entry(target.to_string()).or_default();
            rule.prerequisites
                .extend(prerequisites.split_whitespace().map(str::to_string));
            if let Some(inline) = inline.filter(|i| !i.is_empty()) {
                rule.recipe.push(inline.to_string());
            }
            current.push(target.to_string());
        }
    }
    rules
}
pub(super) fn make_bodies(rules: &BTreeMap<String, MakeRule>, target: &str) -> Vec<ScriptBody> {
    let mut bodies: Vec<ScriptBody> = Vec::new();
    let mut queue = vec![(target.to_string(), 0usize)];
    let mut seen = std::collections::HashSet::new();
    while let Some((current, depth)) = queue.pop() {
        if !seen.insert(current.clone()) {
            continue;
        }
        let Some(rule) = rules.get(&current) else {
            continue;
        };
        for line in &rule.recipe {
            bodies.push(ScriptBody {
                name: current.clone(),
                text: line.clone(),
            });
        }
        if depth < MAX_SCRIPT_NESTING {
            for prerequisite in &rule.prerequisites {
                queue.push((prerequisite.clone(), depth + 1));
            }
        }
    }
    bodies
}
