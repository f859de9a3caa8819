//! Evaluating one call: targets from the arguments, rules over each path and command, the
//! unanalysable and protected reasons, and the decision (deny > ask > allow).

use std::path::Path;

use super::rules::{MatchStrength, loose_variants};
use super::targets::{self, CommandTarget, PathOrigin, PathTarget};
use super::words::display_words;
use super::{
    EvaluationBuilder, MAX_ARGUMENT_DEPTH, NEUTRAL_COMMANDS, PermissionPolicy, PermissionRequest,
    PolicyEvaluation, RuleMatch, TargetKind, protected, shell,
};
use crate::config::{PolicyDecision, ReviewRequirement};
use crate::paths::{canonical_root, normalize_path_text, resolve_from};

/// Package-manager settings that make scripts run through a program the project chose.
const PACKAGE_MANAGER_RISKY_KEYS: &[&str] = &[
    "scriptshell",
    "shell",
    "nodeoptions",
    "yarnpath",
    "plugins",
    "git",
    "onloadscript",
    "nodegyp",
    "initmodule",
    "globalconfig",
    "userconfig",
];
/// Package-manager configuration files read from the project.
const PACKAGE_MANAGER_FILES: &[&str] = &[
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmrc",
    "pnpm-workspace.yaml",
    "bunfig.toml",
];
const PACKAGE_MANAGERS: &[&str] = &[
    "npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx", "corepack",
];

/// Whether a JSON value nests deeper than `limit` (checked without recursion).
fn json_too_deep(value: &serde_json::Value, limit: usize) -> bool {
    let mut stack = vec![(value, 1usize)];
    while let Some((current, depth)) = stack.pop() {
        if depth > limit {
            return true;
        }
        match current {
            serde_json::Value::Array(items) => {
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            serde_json::Value::Object(map) => {
                stack.extend(map.values().map(|item| (item, depth + 1)));
            }
            _ => {}
        }
    }
    false
}

fn deny_arguments(evaluation: &mut PolicyEvaluation, tool: &str, pattern: &str, reason: String) {
    evaluation.push(RuleMatch {
        kind: TargetKind::Arguments,
        target: tool.to_string(),
        pattern: pattern.to_string(),
        action: PolicyDecision::Deny,
        reason,
        review_required: false,
        default_rule: true,
    });
    evaluation.decision = Some(PolicyDecision::Deny);
}

impl PermissionPolicy {
    /// Evaluates one call.
    pub fn evaluate(&self, request: &PermissionRequest<'_>) -> PolicyEvaluation {
        let mut evaluation = PolicyEvaluation::default();
        if json_too_deep(request.arguments, MAX_ARGUMENT_DEPTH) {
            deny_arguments(
                &mut evaluation,
                request.tool_name,
                "(argument nesting limit)",
                format!("the arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels"),
            );
            return evaluation;
        }
        let root = canonical_root(request.project_root);
        let extracted = targets::extract(
            request.tool_name,
            request.arguments,
            &root,
            request.session_history,
        );
        evaluation.notes.clone_from(&extracted.notes);
        if let Some(error) = &extracted.invalid {
            deny_arguments(
                &mut evaluation,
                request.tool_name,
                "(arguments the policy cannot read)",
                format!("{error}; nothing runs on arguments the permission policy could not read"),
            );
            return evaluation;
        }
        let mut any_target = false;
        let mut all_allowed = true;
        let mut any_allow = false;
        for link in &extracted.links {
            evaluation.add_protected(format!("creates a symbolic link {link}"));
        }
        for read in &extracted.reads {
            if let Ok(resolved) = resolve_from(&root, &root, &read.raw)
                && resolved.inside
                && braincode_sandbox::is_secret_file(&root, &resolved.relative)
            {
                evaluation.add_protected(format!(
                    "reads the secret file {} (credentials the sandbox hides from commands)",
                    resolved.relative
                ));
            }
        }
        for target in &extracted.paths {
            any_target = true;
            let (allowed, matched) = self.evaluate_path(&root, target, &mut evaluation);
            all_allowed &= allowed;
            any_allow |= matched;
        }
        for command in &extracted.commands {
            let (allowed, matched) = self.evaluate_command(&root, command, &mut evaluation);
            if !command.script_body {
                any_target = true;
                all_allowed &= allowed;
                any_allow |= matched;
            }
        }
        // Tool rules: the whole tool, whatever its arguments.
        let mut tool_allowed = false;
        for compiled in &self.tool_rules {
            if !compiled.matches(request.tool_name) {
                continue;
            }
            let rule = &compiled.rule;
            tool_allowed |= rule.policy == PolicyDecision::Allow;
            evaluation.push(RuleMatch {
                kind: TargetKind::Tool,
                target: request.tool_name.to_string(),
                pattern: rule.pattern.clone(),
                action: rule.policy,
                reason: rule
                    .reason
                    .clone()
                    .unwrap_or_else(|| format!("tool rule {}", rule.pattern)),
                review_required: rule.review == Some(ReviewRequirement::Required),
                default_rule: false,
            });
        }
        if !evaluation.protected.is_empty() {
            let reason = evaluation.protected.join("; ");
            evaluation.push(RuleMatch {
                kind: TargetKind::Path,
                target: reason.clone(),
                pattern: "(protected)".to_string(),
                action: PolicyDecision::Ask,
                reason: format!("protected: {reason}: only a person can approve this"),
                review_required: false,
                default_rule: true,
            });
        }
        let has = |action| evaluation.matches.iter().any(|m| m.action == action);
        evaluation.decision = if has(PolicyDecision::Deny) {
            Some(PolicyDecision::Deny)
        } else if has(PolicyDecision::Ask)
            || !evaluation.unanalysable.is_empty()
            || !evaluation.protected.is_empty()
        {
            Some(PolicyDecision::Ask)
        } else if (any_target && all_allowed && any_allow) || tool_allowed {
            // A tool allowed by name runs when nothing it touches is denied or asked.
            Some(PolicyDecision::Allow)
        } else {
            None
        };
        evaluation.review_required = evaluation.matches.iter().any(|m| m.review_required);
        evaluation
    }

    /// Returns (every part allowed, some allow rule matched).
    fn evaluate_path(
        &self,
        root: &Path,
        target: &PathTarget,
        evaluation: &mut PolicyEvaluation,
    ) -> (bool, bool) {
        let base = match &target.base {
            Some(base) => match resolve_from(root, root, base) {
                Ok(resolved) => resolved.absolute,
                Err(_) => root.to_path_buf(),
            },
            None => root.to_path_buf(),
        };
        let mut raws = vec![target.raw.clone()];
        let expanded = shell::expand_home(target.raw.trim());
        if expanded != target.raw.trim() {
            // `~/x` is a literal directory for the file tools, but an MCP server or a shell
            // may expand it: evaluate both.
            raws.push(expanded);
        }
        let mut allowed = false;
        for raw in raws {
            allowed |= self.evaluate_one_path(root, &base, target, &raw, evaluation);
        }
        (allowed, allowed)
    }

    /// Evaluates one spelling of a path target; returns whether an allow rule matched.
    fn evaluate_one_path(
        &self,
        root: &Path,
        base: &Path,
        target: &PathTarget,
        raw: &str,
        evaluation: &mut PolicyEvaluation,
    ) -> bool {
        let (relative, absolute, lexical, physical) = match resolve_from(root, base, raw) {
            Ok(resolved) => (
                resolved.relative,
                resolved.absolute.display().to_string(),
                normalize_path_text(raw),
                Some(resolved.absolute),
            ),
            // A symlink loop: treat as outside so the default deny applies.
            Err(_) => (
                format!("../{}", normalize_path_text(raw)),
                raw.to_string(),
                String::new(),
                None,
            ),
        };
        if !evaluation.paths.contains(&relative) {
            evaluation.paths.push(relative.clone());
        }
        let inside = !relative.starts_with("../") && relative != "..";
        let mut candidates = vec![relative.clone()];
        if inside
            && !lexical.is_empty()
            && !lexical.starts_with('/')
            && target.base.is_none()
            && lexical != relative
        {
            candidates.push(lexical);
        }
        if inside {
            if let Some(found) = candidates.iter().find(|c| protected::is_protected(c)) {
                evaluation.add_protected(format!("protected path {found}"));
            }
            if let Some(links) = physical.as_deref().and_then(protected::hard_links)
                && links > 1
            {
                evaluation.add_protected(format!(
                    "{relative} has {links} hard links: changing it changes every other name of the same file"
                ));
            }
        }
        let mut allowed = false;
        for rule in &self.path_rules {
            if !candidates.iter().any(|c| rule.matches(c, &absolute)) {
                continue;
            }
            let mut action = rule.action;
            let mut reason = rule.reason.clone();
            if target.origin == PathOrigin::Redirect && rule.outside_project {
                // A command writing outside the project (a log in /tmp) is asked, not denied:
                // the OS sandbox confines commands; secrets have their own deny rules.
                action = PolicyDecision::Ask;
                reason = "the command writes outside the project: confirm it".to_string();
            }
            if action == PolicyDecision::Allow {
                allowed = true;
            }
            evaluation.push(RuleMatch {
                kind: TargetKind::Path,
                target: relative.clone(),
                pattern: rule.pattern.clone(),
                action,
                reason,
                review_required: rule.review,
                default_rule: rule.default_rule,
            });
        }
        allowed
    }

    /// Returns (every simple command allowed, some allow rule matched).
    fn evaluate_command(
        &self,
        root: &Path,
        command: &CommandTarget,
        evaluation: &mut PolicyEvaluation,
    ) -> (bool, bool) {
        let analysis = shell::analyze(&command.text);
        let mut unanalysable = analysis.unanalysable.clone();
        if command.typed_input {
            unanalysable.insert(
                0,
                "text typed into a running program (write_stdin): the program that reads it is not known to the policy"
                    .to_string(),
            );
        }
        let mut all_allowed = true;
        let mut any_allow = false;
        let mut subcommands = Vec::new();
        for reason in &analysis.too_deep {
            evaluation.push(RuleMatch {
                kind: TargetKind::Command,
                target: braincode_protocol::clip_chars_then_ellipsis(&command.text, 200),
                pattern: "(nesting limit)".to_string(),
                action: PolicyDecision::Deny,
                reason: format!("{reason}: too deep to analyse"),
                review_required: false,
                default_rule: true,
            });
        }
        for parsed in &analysis.commands {
            let rendered: Vec<String> = parsed.forms.iter().map(|f| display_words(f)).collect();
            subcommands.push(rendered.join(" → "));
            let mut allowed = false;
            for (index, form) in parsed.forms.iter().enumerate() {
                let target = display_words(form);
                for rule in &self.command_rules {
                    let (action, reason) = match rule.action {
                        PolicyDecision::Allow => {
                            if index != 0
                                || rule.matches(form, true) != Some(MatchStrength::Certain)
                            {
                                continue;
                            }
                            allowed = true;
                            (PolicyDecision::Allow, rule.reason.clone())
                        }
                        action => match rule.matches(form, false) {
                            Some(MatchStrength::Certain) => (action, rule.reason.clone()),
                            Some(MatchStrength::Possible) => (
                                PolicyDecision::Ask,
                                format!(
                                    "{} (may match: part of the command is only known at run time)",
                                    if rule.reason.is_empty() {
                                        format!("{} rule", action.as_str())
                                    } else {
                                        rule.reason.clone()
                                    }
                                ),
                            ),
                            None => continue,
                        },
                    };
                    evaluation.push(RuleMatch {
                        kind: TargetKind::Command,
                        target: target.clone(),
                        pattern: rule.pattern.clone(),
                        action,
                        reason,
                        review_required: rule.review,
                        default_rule: rule.default_rule,
                    });
                }
            }
            let neutral = parsed
                .forms
                .first()
                .and_then(|form| form.first())
                .is_some_and(|word| {
                    !word.dynamic
                        && !word.expanded
                        && NEUTRAL_COMMANDS.contains(&word.text.as_str())
                });
            any_allow |= allowed;
            all_allowed &= allowed || neutral;
        }
        let report = evaluation.commands.len();
        evaluation.commands.push(super::CommandReport {
            origin: command.origin.clone(),
            text: command.text.clone(),
            subcommands,
            writes: analysis.write_paths.clone(),
            uncertain: Vec::new(),
        });
        if !command.script_body {
            unanalysable
                .extend(self.evaluate_invoked_scripts(root, command, &analysis, evaluation));
        }
        for path in &analysis.write_paths {
            let target = PathTarget {
                raw: path.clone(),
                base: command.workdir.clone(),
                origin: PathOrigin::Redirect,
            };
            self.evaluate_path(root, &target, evaluation);
        }
        for path in &analysis.link_paths {
            let shown = match &command.workdir {
                Some(workdir) if !path.starts_with('/') => format!("{workdir}/{path}"),
                _ => path.clone(),
            };
            evaluation.add_protected(format!("creates a link {shown}"));
        }
        unanalysable.dedup();
        if let Some(report) = evaluation.commands.get_mut(report) {
            report.uncertain.clone_from(&unanalysable);
        }
        if !unanalysable.is_empty() || !analysis.too_deep.is_empty() {
            all_allowed = false;
        }
        if !unanalysable.is_empty() {
            evaluation.push(RuleMatch {
                kind: TargetKind::Command,
                target: braincode_protocol::clip_chars_then_ellipsis(&command.text, 200),
                pattern: "(command not fully analysable)".to_string(),
                action: PolicyDecision::Ask,
                reason: format!("unanalysable: {}", unanalysable.join("; ")),
                review_required: false,
                default_rule: true,
            });
            self.deny_in_loose_text(&analysis, evaluation);
            for reason in unanalysable {
                evaluation.add_unanalysable(reason);
            }
        }
        if analysis.commands.is_empty() && analysis.is_analysable() {
            // Nothing runs (an empty or comment-only command): nothing to allow.
            all_allowed = false;
        }
        (all_allowed, any_allow)
    }

    /// An unanalysable command is denied when a deny pattern appears anywhere in its text.
    fn deny_in_loose_text(
        &self,
        analysis: &shell::ShellAnalysis,
        evaluation: &mut PolicyEvaluation,
    ) {
        for source in &analysis.sources {
            let variants = loose_variants(source, &analysis.separators);
            for rule in &self.command_rules {
                if rule.action == PolicyDecision::Deny
                    && variants.iter().any(|loose| rule.matches_loose_text(loose))
                {
                    evaluation.push(RuleMatch {
                        kind: TargetKind::Command,
                        target: braincode_protocol::clip_chars_then_ellipsis(source, 200),
                        pattern: rule.pattern.clone(),
                        action: PolicyDecision::Deny,
                        reason: format!(
                            "{} (found in text that could not be fully analysed)",
                            rule.reason
                        ),
                        review_required: rule.review,
                        default_rule: rule.default_rule,
                    });
                }
            }
        }
    }

    /// `npm run deploy` or `make release` typed in a shell runs the project's own script
    /// text: evaluate it too (deny and ask only). Returns why a package manager's run is
    /// unanalysable (project settings that choose the program scripts run through).
    fn evaluate_invoked_scripts(
        &self,
        root: &Path,
        command: &CommandTarget,
        analysis: &shell::ShellAnalysis,
        evaluation: &mut PolicyEvaluation,
    ) -> Vec<String> {
        let mut reasons = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for parsed in &analysis.commands {
            let invokes_scripts = parsed.forms.iter().any(|form| {
                form.first().is_some_and(|w| {
                    PACKAGE_MANAGERS.contains(&w.text.as_str())
                        || matches!(w.text.as_str(), "make" | "gmake")
                })
            });
            if !invokes_scripts {
                continue;
            }
            let dir = parsed.cwd.as_ref().and_then(|cwd| {
                let relative = match &command.workdir {
                    Some(workdir) if !cwd.starts_with('/') => format!("{workdir}/{cwd}"),
                    _ => cwd.clone(),
                };
                resolve_from(root, root, &relative).ok()
            });
            let runs_package_manager = parsed.forms.iter().any(|form| {
                form.first()
                    .is_some_and(|w| PACKAGE_MANAGERS.contains(&w.text.as_str()))
            });
            if runs_package_manager {
                let mut dirs = vec![root.to_path_buf()];
                if let Some(dir) = &dir {
                    dirs.insert(0, dir.absolute.clone());
                }
                for reason in package_manager_settings(&dirs) {
                    if !reasons.contains(&reason) {
                        reasons.push(reason);
                    }
                }
            }
            let Some(dir) = dir else {
                continue;
            };
            for form in &parsed.forms {
                let words: Vec<&str> = form.iter().map(|w| w.text.as_str()).collect();
                for body in crate::script::invoked_script_bodies(&dir.absolute, &words) {
                    if seen.insert((body.name.clone(), body.text.clone())) {
                        let target = CommandTarget {
                            text: body.text,
                            workdir: command.workdir.clone(),
                            origin: format!("script body of {}", body.name),
                            script_body: true,
                            typed_input: false,
                        };
                        self.evaluate_command(root, &target, evaluation);
                    }
                }
            }
        }
        reasons
    }
}

/// Project package-manager settings that change what runs (`script-shell`, `node-options`,
/// `yarnPath`, …), as reasons.
fn package_manager_settings(dirs: &[std::path::PathBuf]) -> Vec<String> {
    let mut reasons = Vec::new();
    for dir in dirs {
        for file in PACKAGE_MANAGER_FILES {
            let Some(text) = crate::paths::read_project_text(dir, file) else {
                // A settings file that exists but is not a readable regular file here (a
                // link) cannot be checked, yet the package manager would follow it.
                if std::fs::symlink_metadata(dir.join(file)).is_ok() {
                    let reason = format!(
                        "{file} is not a regular file (a symbolic link?): its settings cannot be checked"
                    );
                    if !reasons.contains(&reason) {
                        reasons.push(reason);
                    }
                }
                continue;
            };
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with('#') || line.starts_with(';') {
                    continue;
                }
                let Some(key) = line.split(['=', ':']).next() else {
                    continue;
                };
                let normalized: String = key
                    .trim()
                    .trim_matches(['"', '\''])
                    .chars()
                    .filter(|c| !matches!(c, '-' | '_'))
                    .collect::<String>()
                    .to_lowercase();
                if PACKAGE_MANAGER_RISKY_KEYS.contains(&normalized.as_str()) {
                    let reason = format!(
                        "{file} sets `{}`: the package manager runs scripts or code through a program the project chose",
                        key.trim()
                    );
                    if !reasons.contains(&reason) {
                        reasons.push(reason);
                    }
                }
            }
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_depth_is_checked_without_recursion() {
        let mut value = serde_json::json!(1);
        for _ in 0..(MAX_ARGUMENT_DEPTH + 5) {
            value = serde_json::json!([value]);
        }
        assert!(json_too_deep(&value, MAX_ARGUMENT_DEPTH));
        assert!(!json_too_deep(
            &serde_json::json!({"a": [1, {"b": 2}]}),
            MAX_ARGUMENT_DEPTH
        ));
    }
}
