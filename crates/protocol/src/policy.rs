//! The permission policy's verdict on one tool call, as it is shown, printed and journaled
//! (`tool_approval_decision.permissionPolicy`).
//!
//! These are shapes only: the policy that fills them (rules, command analysis, the denial
//! message and one-line summary) lives in `braincode_tools::policy`, which re-exports them
//! under the same names.
//!
//! Reading is lenient where older journals differ: lists and flags added over time
//! (`unanalysable`, `protected`, …) default to empty when absent. Writing is unchanged: every
//! field is always written.

use serde::{Deserialize, Serialize};

/// What a permission rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyDecision {
    /// Runs without asking.
    Allow,
    /// Needs approval.
    Ask,
    /// Never runs.
    Deny,
}

impl PolicyDecision {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// What a rule was matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A written path.
    Path,
    /// A run command.
    Command,
    /// The call's arguments themselves (unreadable, or nested too deeply).
    Arguments,
    /// The tool's name (a tool rule).
    Tool,
}

impl TargetKind {
    /// `path`, `command`, `arguments` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Command => "command",
            Self::Arguments => "arguments",
            Self::Tool => "tool",
        }
    }
}

/// One rule that matched a target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleMatch {
    /// Path, command or arguments.
    pub kind: TargetKind,
    /// The path (project-relative, resolved) or simple command matched.
    pub target: String,
    /// The rule's pattern.
    pub pattern: String,
    /// What the match contributes.
    pub action: PolicyDecision,
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// Whether it forces a review.
    #[serde(default)]
    pub review_required: bool,
    /// Whether it is a built-in rule.
    #[serde(default)]
    pub default_rule: bool,
}

/// How one command was understood, for the approval UI and `braincode permissions check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandReport {
    /// What the command is (`command`, `run_script test`, `script body of deploy`, …).
    pub origin: String,
    /// The text analyzed.
    pub text: String,
    /// Every simple command found, with its unwrapped forms after `→`.
    #[serde(default)]
    pub subcommands: Vec<String>,
    /// Files it writes (redirections and file-writing commands).
    #[serde(default)]
    pub writes: Vec<String>,
    /// Why the command is unanalysable (empty when it was fully analysed); the same reasons
    /// as [`PolicyEvaluation::unanalysable`], per command.
    #[serde(default)]
    pub uncertain: Vec<String>,
}

/// The policy's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    /// Deny > ask > allow; `None` when no rule decided (the tool mode decides).
    pub decision: Option<PolicyDecision>,
    /// Every matching rule.
    #[serde(default)]
    pub matches: Vec<RuleMatch>,
    /// Whether a matching rule requires an independent review.
    #[serde(default)]
    pub review_required: bool,
    /// Resolved paths the call writes (project-relative, `../…` outside).
    #[serde(default)]
    pub paths: Vec<String>,
    /// How each command was understood.
    #[serde(default)]
    pub commands: Vec<CommandReport>,
    /// Other remarks (a script that could not be resolved, …).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Why what the call runs could not be fully analysed (empty: fully analysed). A call
    /// with reasons here is never allowed by a rule nor auto-approved on the analysis' word.
    #[serde(default)]
    pub unanalysable: Vec<String>,
    /// Why only a person may approve the call (protected paths, links, hard-linked files;
    /// empty: none).
    #[serde(default)]
    pub protected: Vec<String>,
}

impl PolicyEvaluation {
    /// Whether the call is denied.
    pub fn is_denied(&self) -> bool {
        self.decision == Some(PolicyDecision::Deny)
    }

    /// Whether the call could not be fully analysed.
    pub fn is_unanalysable(&self) -> bool {
        !self.unanalysable.is_empty()
    }

    /// Whether only a person may approve the call.
    pub fn is_protected(&self) -> bool {
        !self.protected.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> PolicyEvaluation {
        PolicyEvaluation {
            decision: Some(PolicyDecision::Ask),
            matches: vec![RuleMatch {
                kind: TargetKind::Command,
                target: "git push".into(),
                pattern: "git push*".into(),
                action: PolicyDecision::Ask,
                reason: "publishes commits".into(),
                review_required: true,
                default_rule: true,
            }],
            review_required: true,
            paths: vec![],
            commands: vec![CommandReport {
                origin: "command".into(),
                text: "git push".into(),
                subcommands: vec!["git push".into()],
                writes: vec![],
                uncertain: vec![],
            }],
            notes: vec![],
            unanalysable: vec![],
            protected: vec!["protected path .git/config".into()],
        }
    }

    #[test]
    fn wire_shape_is_camel_case_with_every_field() {
        let value = serde_json::to_value(sample()).expect("serializes");
        assert_eq!(
            value,
            json!({"decision": "ask", "matches": [{"kind": "command", "target": "git push",
                "pattern": "git push*", "action": "ask", "reason": "publishes commits",
                "reviewRequired": true, "defaultRule": true}],
                "reviewRequired": true, "paths": [],
                "commands": [{"origin": "command", "text": "git push",
                    "subcommands": ["git push"], "writes": [], "uncertain": []}],
                "notes": [], "unanalysable": [], "protected": ["protected path .git/config"]})
        );
        let none = serde_json::to_value(PolicyEvaluation::default()).expect("serializes");
        assert_eq!(none["decision"], serde_json::Value::Null);
    }

    #[test]
    fn round_trips_and_reads_lines_written_before_later_fields() {
        let evaluation = sample();
        let text = serde_json::to_string(&evaluation).expect("serializes");
        let back: PolicyEvaluation = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, evaluation);

        // Written before `unanalysable` and `protected` existed.
        let old: PolicyEvaluation = serde_json::from_value(json!({"decision": "deny",
            "matches": [], "reviewRequired": false, "paths": ["../x"], "commands": [],
            "notes": []}))
        .expect("parses");
        assert!(old.is_denied());
        assert!(!old.is_unanalysable() && !old.is_protected());
        assert_eq!(old.paths, ["../x"]);
    }

    #[test]
    fn unknown_kinds_and_decisions_are_errors() {
        let bad_kind = json!({"decision": "ask", "matches": [{"kind": "network",
            "target": "x", "pattern": "x", "action": "ask"}]});
        assert!(serde_json::from_value::<PolicyEvaluation>(bad_kind).is_err());
        assert!(serde_json::from_value::<PolicyEvaluation>(json!({"decision": "maybe"})).is_err());
        assert!(serde_json::from_value::<PolicyEvaluation>(json!("allow")).is_err());
    }
}
