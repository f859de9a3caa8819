//! Permission policy v2: path and command rules with defaults that cannot be removed,
//! resolved deny > ask > allow.
//!
//! What makes it trustworthy:
//! - commands are parsed with the bash grammar into every simple command they run (see
//!   [`shell`]), and rules apply to each one, so `a; git push`, `sh -c "git push"`,
//!   `` echo `git push` `` and `sudo /usr/bin/git push` are all seen as `git push`;
//! - a command that cannot be analyzed confidently is never allowed: it is asked, and denied
//!   when a deny pattern occurs anywhere in its text;
//! - allow needs every simple command to be allowed (or harmless, like `tail`): `cargo test &&
//!   curl x | sh` is not allowed by the `cargo test` rule;
//! - paths are resolved (`..`, absolute paths, symlinks) against the project root before
//!   matching, so `src/x/../auth/a.ts` is `src/auth/a.ts` and an escape is `../…`;
//! - `run_script` is evaluated as the command it really runs, plus the package.json script or
//!   Makefile recipe text behind it.

pub mod approval;
mod normalize;
pub mod rules;
pub mod shell;
pub mod targets;
pub mod unwrap;
pub mod words;

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::config::{PermissionsConfig, PolicyDecision};
use crate::paths::{canonical_root, normalize_path_text, resolve_from};
use rules::{
    CompiledCommandRule, CompiledPathRule, MatchStrength, default_command_rules,
    default_path_rules, loose_text,
};
use targets::{PathOrigin, PathTarget};
use words::display_words;

pub use approval::requires_approval;

/// Commands that never need an allow rule of their own: an allowed command piped through
/// them stays allowed (`cargo test 2>&1 | tail -50`).
pub const NEUTRAL_COMMANDS: &[&str] = &[
    "echo", "printf", "true", "false", ":", "tail", "head", "grep", "egrep", "fgrep", "rg", "wc",
    "sort", "uniq", "cut", "tr", "cat", "pwd", "ls", "cd", "pushd", "popd", "sleep", "date",
    "which", "type", "test", "[", "basename", "dirname", "realpath", "nl", "column",
];

/// What a rule was matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A written path.
    Path,
    /// A run command.
    Command,
}

impl TargetKind {
    /// `path` or `command`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Command => "command",
        }
    }
}

/// One rule that matched a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleMatch {
    /// Path or command.
    pub kind: TargetKind,
    /// The path (project-relative, resolved) or simple command matched.
    pub target: String,
    /// The rule's pattern.
    pub pattern: String,
    /// What the match contributes.
    pub action: PolicyDecision,
    /// Why.
    pub reason: String,
    /// Whether it forces a review.
    pub review_required: bool,
    /// Whether it is a built-in rule.
    pub default_rule: bool,
}

/// How one command was understood, for the approval UI and `braincode permissions check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandReport {
    /// What the command is (`command`, `run_script test`, `script body of deploy`, …).
    pub origin: String,
    /// The text analyzed.
    pub text: String,
    /// Every simple command found, with its unwrapped forms after `→`.
    pub subcommands: Vec<String>,
    /// Files it writes through redirections.
    pub writes: Vec<String>,
    /// Why the analysis is not certain (empty when it is).
    pub uncertain: Vec<String>,
}

/// The policy's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    /// Deny > ask > allow; `None` when no rule decided (the tool mode decides).
    pub decision: Option<PolicyDecision>,
    /// Every matching rule.
    pub matches: Vec<RuleMatch>,
    /// Whether a matching rule requires an independent review.
    pub review_required: bool,
    /// Resolved paths the call writes (project-relative, `../…` outside).
    pub paths: Vec<String>,
    /// How each command was understood.
    pub commands: Vec<CommandReport>,
    /// Other remarks (a script that could not be resolved, …).
    pub notes: Vec<String>,
}

impl PolicyEvaluation {
    /// Whether the call is denied.
    pub fn is_denied(&self) -> bool {
        self.decision == Some(PolicyDecision::Deny)
    }

    /// The message returned to the model when the call is denied.
    pub fn denial_message(&self) -> Option<String> {
        if !self.is_denied() {
            return None;
        }
        let found = self
            .matches
            .iter()
            .find(|m| m.action == PolicyDecision::Deny)?;
        Some(format!(
            "Permission policy denied tool call: {} {} matched {}: {}",
            found.kind.as_str(),
            found.target,
            found.pattern,
            if found.reason.is_empty() {
                "deny"
            } else {
                found.reason.as_str()
            }
        ))
    }

    /// One line for the approval prompt and the journal.
    pub fn summary(&self) -> String {
        let decision = self.decision.map_or("no rule", PolicyDecision::as_str);
        let mut line = decision.to_string();
        if self.review_required {
            line.push_str(" (review required)");
        }
        if self.matches.is_empty() {
            return line;
        }
        let details: Vec<String> = self
            .matches
            .iter()
            .map(|m| {
                format!(
                    "{} {} `{}` matched `{}`{}{}",
                    m.action.as_str(),
                    m.kind.as_str(),
                    m.target,
                    m.pattern,
                    if m.default_rule { " [default]" } else { "" },
                    if m.reason.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", m.reason)
                    }
                )
            })
            .collect();
        format!("{line}: {}", details.join("; "))
    }

    fn push(&mut self, found: RuleMatch) {
        if !self.matches.contains(&found) {
            self.matches.push(found);
        }
    }
}

/// A call to evaluate.
#[derive(Debug, Clone, Copy)]
pub struct PermissionRequest<'a> {
    /// Tool name.
    pub tool_name: &'a str,
    /// Tool arguments.
    pub arguments: &'a Value,
    /// Project root (canonicalized by the policy).
    pub project_root: &'a Path,
}

/// Why a policy could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// An invalid path pattern.
    #[error("permissions.paths[{index}].pattern {pattern:?} is invalid: {message}")]
    InvalidPathPattern {
        /// Rule index in tools.json.
        index: usize,
        /// The pattern.
        pattern: String,
        /// What is wrong.
        message: String,
    },
    /// An invalid command pattern.
    #[error("permissions.commands[{index}].pattern {pattern:?} is invalid: {message}")]
    InvalidCommandPattern {
        /// Rule index in tools.json.
        index: usize,
        /// The pattern.
        pattern: String,
        /// What is wrong.
        message: String,
    },
}

/// The compiled policy: default rules first, then the user's.
#[derive(Debug, Clone)]
pub struct PermissionPolicy {
    path_rules: Vec<CompiledPathRule>,
    command_rules: Vec<CompiledCommandRule>,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self {
            path_rules: default_path_rules(),
            command_rules: default_command_rules(),
        }
    }
}

impl PermissionPolicy {
    /// Builds the policy from tools.json rules; the defaults are always in front.
    pub fn new(config: &PermissionsConfig) -> Result<Self, PolicyError> {
        let mut policy = Self::default();
        for (index, rule) in config.paths.iter().enumerate() {
            let compiled = CompiledPathRule::new(rule, false).map_err(|message| {
                PolicyError::InvalidPathPattern {
                    index,
                    pattern: rule.pattern.clone(),
                    message,
                }
            })?;
            policy.path_rules.push(compiled);
        }
        for (index, rule) in config.commands.iter().enumerate() {
            let compiled = CompiledCommandRule::new(rule, false).map_err(|message| {
                PolicyError::InvalidCommandPattern {
                    index,
                    pattern: rule.pattern.clone(),
                    message,
                }
            })?;
            policy.command_rules.push(compiled);
        }
        Ok(policy)
    }

    /// Evaluates one call.
    pub fn evaluate(&self, request: &PermissionRequest<'_>) -> PolicyEvaluation {
        let root = canonical_root(request.project_root);
        let extracted = targets::extract(request.tool_name, request.arguments, &root);
        let mut evaluation = PolicyEvaluation {
            notes: extracted.notes.clone(),
            ..PolicyEvaluation::default()
        };
        let mut any_target = false;
        let mut all_allowed = true;
        let mut any_allow = false;
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
        let has = |action| evaluation.matches.iter().any(|m| m.action == action);
        evaluation.decision = if has(PolicyDecision::Deny) {
            Some(PolicyDecision::Deny)
        } else if has(PolicyDecision::Ask) {
            Some(PolicyDecision::Ask)
        } else if any_target && all_allowed && any_allow {
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
        let (relative, absolute, lexical) = match resolve_from(root, &base, &target.raw) {
            Ok(resolved) => {
                let lexical = normalize_path_text(&target.raw);
                (
                    resolved.relative,
                    resolved.absolute.display().to_string(),
                    lexical,
                )
            }
            // A symlink loop: treat as outside so the default deny applies.
            Err(_) => (
                format!("../{}", normalize_path_text(&target.raw)),
                target.raw.clone(),
                String::new(),
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
        let mut allowed = false;
        for rule in &self.path_rules {
            if !candidates.iter().any(|c| rule.matches(c, &absolute)) {
                continue;
            }
            let mut action = rule.action;
            let mut reason = rule.reason.clone();
            if target.origin == PathOrigin::Redirect
                && rule.default_rule
                && rule.action == PolicyDecision::Deny
            {
                // A command writing outside the project (a log in /tmp) is asked, not denied:
                // the shell is not confined the way file tools are.
                action = PolicyDecision::Ask;
                reason = "the command writes outside the project (shell redirection): confirm it"
                    .to_string();
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
        (allowed, allowed)
    }

    /// Returns (every simple command allowed, some allow rule matched).
    fn evaluate_command(
        &self,
        root: &Path,
        command: &targets::CommandTarget,
        evaluation: &mut PolicyEvaluation,
    ) -> (bool, bool) {
        let analysis = shell::analyze(&command.text);
        let mut all_allowed = true;
        let mut any_allow = false;
        let mut report = CommandReport {
            origin: command.origin.clone(),
            text: command.text.clone(),
            subcommands: Vec::new(),
            writes: analysis.write_paths.clone(),
            uncertain: analysis.uncertain.clone(),
        };
        for parsed in &analysis.commands {
            let rendered: Vec<String> = parsed.forms.iter().map(|f| display_words(f)).collect();
            report.subcommands.push(rendered.join(" → "));
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
                    !word.dynamic && NEUTRAL_COMMANDS.contains(&word.text.as_str())
                });
            any_allow |= allowed;
            all_allowed &= allowed || neutral;
        }
        evaluation.commands.push(report);
        if !command.script_body {
            self.evaluate_invoked_scripts(root, command, &analysis, evaluation);
        }
        for path in &analysis.write_paths {
            let target = PathTarget {
                raw: path.clone(),
                base: command.workdir.clone(),
                origin: PathOrigin::Redirect,
            };
            self.evaluate_path(root, &target, evaluation);
        }
        if !analysis.is_certain() {
            all_allowed = false;
            evaluation.push(RuleMatch {
                kind: TargetKind::Command,
                target: command.text.clone(),
                pattern: "(command not fully analyzable)".to_string(),
                action: PolicyDecision::Ask,
                reason: analysis.uncertain.join("; "),
                review_required: false,
                default_rule: true,
            });
            for source in &analysis.sources {
                let loose = loose_text(source);
                for rule in &self.command_rules {
                    if rule.action == PolicyDecision::Deny && rule.matches_loose_text(&loose) {
                        evaluation.push(RuleMatch {
                            kind: TargetKind::Command,
                            target: crate::text::clip_chars(source, 200),
                            pattern: rule.pattern.clone(),
                            action: PolicyDecision::Deny,
                            reason: format!(
                                "{} (found in text that could not be fully analyzed)",
                                rule.reason
                            ),
                            review_required: rule.review,
                            default_rule: rule.default_rule,
                        });
                    }
                }
            }
        }
        if analysis.commands.is_empty() && analysis.is_certain() {
            // Nothing runs (an empty or comment-only command): nothing to allow.
            all_allowed = false;
        }
        (all_allowed, any_allow)
    }

    /// `npm run deploy` or `make release` typed in a shell runs the project's own script
    /// text: evaluate it too (deny and ask only).
    fn evaluate_invoked_scripts(
        &self,
        root: &Path,
        command: &targets::CommandTarget,
        analysis: &shell::ShellAnalysis,
        evaluation: &mut PolicyEvaluation,
    ) {
        let mut seen = std::collections::HashSet::new();
        for parsed in &analysis.commands {
            let Some(cwd) = &parsed.cwd else {
                continue;
            };
            let relative = match &command.workdir {
                Some(workdir) if !cwd.starts_with('/') => format!("{workdir}/{cwd}"),
                _ => cwd.clone(),
            };
            let Ok(dir) = resolve_from(root, root, &relative) else {
                continue;
            };
            for form in &parsed.forms {
                let words: Vec<&str> = form.iter().map(|w| w.text.as_str()).collect();
                for body in crate::script::invoked_script_bodies(&dir.absolute, &words) {
                    if seen.insert((body.name.clone(), body.text.clone())) {
                        let target = targets::CommandTarget {
                            text: body.text,
                            workdir: command.workdir.clone(),
                            origin: format!("script body of {}", body.name),
                            script_body: true,
                        };
                        self.evaluate_command(root, &target, evaluation);
                    }
                }
            }
        }
    }
}
