//! Permission policy v2: path and command rules with defaults that cannot be removed,
//! resolved deny > ask > allow.
//!
//! What makes it trustworthy:
//! - commands are parsed with the bash grammar into every simple command they run (see
//!   [`shell`]), and rules apply to each one, so `a; git push`, `sh -c "git push"`,
//!   `` echo `git push` `` and `sudo /usr/bin/git push` are all seen as `git push`;
//! - a command that cannot be analysed to the end (a command name from a variable, `eval`,
//!   inline interpreter code, git aliases, wrappers with unknown options, …) is
//!   *unanalysable*: it is asked (never allowed by a rule, never auto-approved on the parser's
//!   word), and denied when a deny pattern occurs anywhere in its loose text;
//! - arguments of built-in tools are read with the tool's own typed struct: what the policy
//!   checks is what the tool runs, and arguments it cannot read deny the call;
//! - input nested past the analysis limits is denied, never a stack overflow;
//! - creating or changing a protected path (`.git/**`, agent and MCP configuration, …),
//!   creating a link, or editing a file with other hard links is *protected*: only a person
//!   may approve it;
//! - allow needs every simple command to be allowed (or harmless, like `tail`): `cargo test &&
//!   curl x | sh` is not allowed by the `cargo test` rule;
//! - paths are resolved (`..`, absolute paths, symlinks) against the project root before
//!   matching, so `src/x/../auth/a.ts` is `src/auth/a.ts` and an escape is `../…`;
//! - `run_script` is evaluated as the command it really runs, plus the package.json script or
//!   Makefile recipe text behind it.

pub mod approval;
mod denied;
mod evaluate;
pub mod gitcmd;
mod normalize;
pub mod programs;
pub mod protected;
pub mod rules;
pub mod shell;
pub mod targets;
pub mod unwrap;
pub mod words;

use std::path::Path;

use serde_json::Value;

use crate::config::PermissionsConfig;
use rules::{
    CompiledCommandRule, CompiledPathRule, CompiledToolRule, default_command_rules,
    default_path_rules,
};

pub use approval::requires_approval;
pub use braincode_protocol::{
    CommandReport, PolicyDecision, PolicyEvaluation, RuleMatch, TargetKind,
};
pub use protected::PROTECTED_PATHS;

/// Commands that never need an allow rule of their own: an allowed command piped through
/// them stays allowed (`cargo test 2>&1 | tail -50`).
pub const NEUTRAL_COMMANDS: &[&str] = &[
    "echo", "printf", "true", "false", ":", "tail", "head", "grep", "egrep", "fgrep", "rg", "wc",
    "sort", "uniq", "cut", "tr", "cat", "pwd", "ls", "cd", "pushd", "popd", "sleep", "date",
    "which", "type", "test", "[", "basename", "dirname", "realpath", "nl", "column",
];

/// Deepest JSON nesting accepted in a call's arguments; deeper is denied.
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The formatting of a [`PolicyEvaluation`] the policy owns: the message a denied call
/// returns to the model and the one-line summary shown for approval and journaled.
///
/// The evaluation's shape is `braincode_protocol`'s (it is journaled typed); an inherent impl
/// cannot live outside the crate of its type, so these are an extension trait: import it and
/// write `evaluation.summary()` as before.
pub trait PolicyEvaluationExt {
    /// The message returned to the model when the call is denied.
    fn denial_message(&self) -> Option<String>;

    /// One line for the approval prompt and the journal: the decision, every matching rule,
    /// and the unanalysable and protected reasons.
    fn summary(&self) -> String;
}

impl PolicyEvaluationExt for PolicyEvaluation {
    fn denial_message(&self) -> Option<String> {
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

    fn summary(&self) -> String {
        let decision = self.decision.map_or("no rule", PolicyDecision::as_str);
        let mut line = decision.to_string();
        if self.review_required {
            line.push_str(" (review required)");
        }
        let mut parts: Vec<String> = self
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
        if !self.unanalysable.is_empty() {
            parts.push(format!("unanalysable: {}", self.unanalysable.join("; ")));
        }
        if !self.protected.is_empty() {
            parts.push(format!("protected: {}", self.protected.join("; ")));
        }
        if parts.is_empty() {
            return line;
        }
        format!("{line}: {}", parts.join("; "))
    }
}

/// How the evaluator adds to a [`PolicyEvaluation`] without repeating itself.
trait EvaluationBuilder {
    /// Adds a matching rule once.
    fn push(&mut self, found: RuleMatch);
    /// Adds an unanalysable reason once.
    fn add_unanalysable(&mut self, reason: String);
    /// Adds a protected reason once.
    fn add_protected(&mut self, reason: String);
}

impl EvaluationBuilder for PolicyEvaluation {
    fn push(&mut self, found: RuleMatch) {
        if !self.matches.contains(&found) {
            self.matches.push(found);
        }
    }

    fn add_unanalysable(&mut self, reason: String) {
        if !self.unanalysable.contains(&reason) {
            self.unanalysable.push(reason);
        }
    }

    fn add_protected(&mut self, reason: String) {
        if !self.protected.contains(&reason) {
            self.protected.push(reason);
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
    /// For `write_stdin`: the text already typed into the same session (the gate keeps it),
    /// analysed together with the new text so a command typed in pieces is seen whole.
    pub session_history: Option<&'a str>,
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
    /// An invalid tool-name pattern.
    #[error("permissions.tools[{index}].pattern {pattern:?} is invalid: {message}")]
    InvalidToolPattern {
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
    tool_rules: Vec<CompiledToolRule>,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self {
            path_rules: default_path_rules(),
            command_rules: default_command_rules(),
            tool_rules: Vec::new(),
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
        for (index, rule) in config.tools.iter().enumerate() {
            let compiled =
                CompiledToolRule::new(rule).map_err(|message| PolicyError::InvalidToolPattern {
                    index,
                    pattern: rule.pattern.clone(),
                    message,
                })?;
            policy.tool_rules.push(compiled);
        }
        Ok(policy)
    }

    /// Also denies writes to this Braincode home (when it is not the one `BRAINCODE_HOME` or
    /// `~/.braincode` already names).
    pub fn with_braincode_home(mut self, home: &Path) -> Self {
        self.path_rules.extend(rules::directory_deny_rule(
            &home.display().to_string(),
            rules::BRAINCODE_HOME_REASON,
        ));
        self
    }
}
