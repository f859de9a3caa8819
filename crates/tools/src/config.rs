//! `tools.json`: the tool list, the checks configuration and the permission rules.
//!
//! Parsing is lenient where the original was (legacy `requiresApproval`, custom tool entries,
//! missing fields take defaults, numbers are clamped) and strict where a mistake would weaken
//! the policy: [`ToolsConfig::validate`] rejects invalid glob patterns, naming the rule.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::registry::builtin_spec;
use crate::tool::{ToolPermission, ToolRisk};

/// What a rule decides: the wire shape is protocol's (it is journaled with every evaluation).
pub use braincode_protocol::PolicyDecision;

/// Default check timeout (ms).
pub const DEFAULT_CHECK_TIMEOUT_MS: u64 = 180_000;
/// Check timeout bounds (ms).
pub const CHECK_TIMEOUT_RANGE_MS: (u64, u64) = (1_000, 900_000);
/// Default check output tail (bytes).
pub const DEFAULT_CHECK_OUTPUT_BYTES: u64 = 24_000;
/// Check output tail bounds (bytes).
pub const CHECK_OUTPUT_RANGE_BYTES: (u64, u64) = (1_000, 512_000);

/// Patch kinds a checks policy may be keyed by.
pub const PATCH_KINDS: [&str; 9] = [
    "docs-only",
    "test-only",
    "frontend",
    "backend",
    "auth-risk",
    "db-risk",
    "package-change",
    "ci-risk",
    "unknown-code",
];

/// The whole `tools.json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsConfig {
    /// Tool entries (built-in and custom), in file order.
    #[serde(default)]
    pub tools: Vec<ToolEntry>,
    /// Patch checks configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<ChecksConfig>,
    /// Permission rules (the defaults are always added in front of them by the policy).
    #[serde(default)]
    pub permissions: PermissionsConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            tools: crate::registry::BUILTIN_TOOLS
                .iter()
                .map(|spec| ToolEntry::builtin_default(spec.name))
                .collect(),
            checks: None,
            permissions: PermissionsConfig::default(),
        }
    }
}

/// Whether a tool asks for confirmation when a call looks dangerous.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Never asks on its own account.
    Allow,
    /// Asks when the call looks dangerous.
    ConfirmDangerous,
}

/// One entry of `tools`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "RawToolEntry")]
pub struct ToolEntry {
    /// Tool name; names that are not built-in are kept as custom entries.
    pub name: String,
    /// Description override shown in settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Permission class as written (built-in tools keep their own class at run time).
    pub permissions: ToolPermission,
    /// Risk class as written.
    pub risk: ToolRisk,
    /// Whether the tool is enabled in a fresh configuration.
    pub default_enabled: bool,
    /// Approval policy.
    pub approval_policy: ApprovalPolicy,
    /// Whether the tool is offered to agents.
    pub enabled: bool,
}

impl ToolEntry {
    /// The default entry for a tool name: the built-in catalog values, or conservative values
    /// (execute / high / confirm-dangerous) for a custom tool.
    pub fn builtin_default(name: &str) -> Self {
        match builtin_spec(name) {
            Some(spec) => Self {
                name: name.to_string(),
                description: None,
                permissions: spec.permission,
                risk: spec.risk,
                default_enabled: true,
                approval_policy: spec.approval,
                enabled: true,
            },
            None => Self {
                name: name.to_string(),
                description: None,
                permissions: ToolPermission::Execute,
                risk: ToolRisk::High,
                default_enabled: true,
                approval_policy: ApprovalPolicy::ConfirmDangerous,
                enabled: true,
            },
        }
    }

    /// Whether the name is one of the built-in tools.
    pub fn is_builtin(&self) -> bool {
        builtin_spec(&self.name).is_some()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawToolEntry {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, alias = "permission")]
    permissions: Option<ToolPermission>,
    #[serde(default)]
    risk: Option<ToolRisk>,
    #[serde(default)]
    default_enabled: Option<bool>,
    #[serde(default)]
    approval_policy: Option<ApprovalPolicy>,
    #[serde(default)]
    requires_approval: Option<bool>,
    #[serde(default)]
    enabled: Option<bool>,
}

impl From<RawToolEntry> for ToolEntry {
    fn from(raw: RawToolEntry) -> Self {
        let defaults = ToolEntry::builtin_default(&raw.name);
        let legacy = raw.requires_approval.map(|requires| {
            if requires {
                ApprovalPolicy::ConfirmDangerous
            } else {
                ApprovalPolicy::Allow
            }
        });
        let default_enabled = raw.default_enabled.unwrap_or(defaults.default_enabled);
        Self {
            name: raw.name,
            description: raw.description,
            permissions: raw.permissions.unwrap_or(defaults.permissions),
            risk: raw.risk.unwrap_or(defaults.risk),
            default_enabled,
            approval_policy: raw
                .approval_policy
                .or(legacy)
                .unwrap_or(defaults.approval_policy),
            enabled: raw.enabled.unwrap_or(default_enabled),
        }
    }
}

/// How checks pick scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStrategy {
    /// Per patch kind.
    #[default]
    Smart,
    /// Every check for every patch.
    All,
}

/// Whether the checks set up the project's dependencies before they first run (`cargo
/// fetch`, a `.venv` with the test extras, `npm ci`, `go mod download`), in the sandbox, with
/// the network limited to the package registries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FetchDependencies {
    /// Only when asked (`--fetch-deps`); a check that could not run says how.
    #[default]
    Ask,
    /// Before the first checks of a project (and again when its lockfile changes).
    Always,
    /// Never, even with `--fetch-deps`.
    Never,
}

/// Whether a rule or check requires an independent review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewRequirement {
    /// A review worker must run.
    Required,
    /// No review is forced.
    Optional,
}

/// Per-patch-kind check policy.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckPolicy {
    /// `false` skips checks for this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Scripts to run for this kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scripts: Option<Vec<String>>,
    /// Whether this kind forces a review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRequirement>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `checks`: which scripts verify a patch. Numbers are clamped when read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "RawChecksConfig")]
pub struct ChecksConfig {
    /// Whether checks run at all.
    pub enabled: bool,
    /// Scripts to run regardless of patch kind (empty: choose per kind).
    pub scripts: Vec<String>,
    /// Selection strategy.
    pub strategy: CheckStrategy,
    /// Per-patch-kind policies.
    pub policies: BTreeMap<String, CheckPolicy>,
    /// Timeout per script (ms), clamped to 1 000..900 000.
    pub timeout_ms: u64,
    /// Output tail kept per script (bytes), clamped to 1 000..512 000.
    pub max_output_bytes: u64,
    /// Whether dependencies are set up before the checks.
    pub fetch_dependencies: FetchDependencies,
    /// Whether each parallel writer runs the checks its files select in its own worktree
    /// before its merge (the merged tree's checks run either way). Off spares each writer a
    /// cold build in its worktree.
    #[serde(skip_serializing_if = "is_on")]
    pub in_writers: bool,
}

/// `inWriters` is written only when it is off (its default is on).
fn is_on(value: &bool) -> bool {
    *value
}

impl Default for ChecksConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            scripts: Vec::new(),
            strategy: CheckStrategy::Smart,
            policies: BTreeMap::new(),
            timeout_ms: DEFAULT_CHECK_TIMEOUT_MS,
            max_output_bytes: DEFAULT_CHECK_OUTPUT_BYTES,
            fetch_dependencies: FetchDependencies::Ask,
            in_writers: true,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawChecksConfig {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    scripts: Vec<String>,
    #[serde(default)]
    strategy: CheckStrategy,
    #[serde(default)]
    policies: BTreeMap<String, CheckPolicy>,
    #[serde(default)]
    timeout_ms: Option<f64>,
    #[serde(default)]
    max_output_bytes: Option<f64>,
    #[serde(default)]
    fetch_dependencies: FetchDependencies,
    #[serde(default)]
    in_writers: Option<bool>,
}

fn clamp_number(value: Option<f64>, default: u64, (min, max): (u64, u64)) -> u64 {
    match value {
        Some(value) if value.is_finite() => (value.max(0.0).floor() as u64).clamp(min, max),
        _ => default,
    }
}

impl From<RawChecksConfig> for ChecksConfig {
    fn from(raw: RawChecksConfig) -> Self {
        Self {
            enabled: raw.enabled.unwrap_or(true),
            scripts: raw.scripts,
            strategy: raw.strategy,
            policies: raw.policies,
            timeout_ms: clamp_number(
                raw.timeout_ms,
                DEFAULT_CHECK_TIMEOUT_MS,
                CHECK_TIMEOUT_RANGE_MS,
            ),
            max_output_bytes: clamp_number(
                raw.max_output_bytes,
                DEFAULT_CHECK_OUTPUT_BYTES,
                CHECK_OUTPUT_RANGE_BYTES,
            ),
            fetch_dependencies: raw.fetch_dependencies,
            in_writers: raw.in_writers.unwrap_or(true),
        }
    }
}

/// `permissions`: user rules.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsConfig {
    /// Rules on file paths written by tools.
    #[serde(default)]
    pub paths: Vec<PathRule>,
    /// Rules on commands run by tools.
    #[serde(default)]
    pub commands: Vec<CommandRule>,
    /// Rules on tool names (`mcp__github__*`): deny, ask or allow a whole tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolRule>,
}

/// A rule on tool names; `*` matches any run of characters, case is ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRule {
    /// Tool-name pattern (`mcp__db__*`).
    pub pattern: String,
    /// What a call of a matching tool gets.
    pub policy: PolicyDecision,
    /// Whether a match forces a review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRequirement>,
    /// Why, shown to the user and the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A rule on paths. `**` matches any sequence, `*` any run without `/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathRule {
    /// Glob over project-relative paths (`../…` for paths outside the project).
    pub pattern: String,
    /// What an edit matching it gets.
    pub edit: PolicyDecision,
    /// Whether a match forces a review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRequirement>,
    /// Why, shown to the user and the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A rule on commands: words matched inside each simple command, or a glob when it has `*`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandRule {
    /// Command pattern.
    pub pattern: String,
    /// What a command matching it gets.
    pub policy: PolicyDecision,
    /// Whether a match forces a review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRequirement>,
    /// Why, shown to the user and the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One problem found by [`ToolsConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigProblem {
    /// JSON path of the offending value (`permissions.paths[2].pattern`).
    pub location: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Every problem of a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid tools.json: {}", .problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ConfigErrors {
    /// The problems, in document order.
    pub problems: Vec<ConfigProblem>,
}

impl ToolsConfig {
    /// Parses `tools.json` text. The error carries serde's line and column.
    pub fn from_json_str(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Adds a default entry for every built-in tool the file does not list (custom entries
    /// and the file order are kept). Returns whether anything was added.
    pub fn add_missing_builtin_entries(&mut self) -> bool {
        let mut added = false;
        for spec in crate::registry::BUILTIN_TOOLS {
            if !self.tools.iter().any(|entry| entry.name == spec.name) {
                self.tools.push(ToolEntry::builtin_default(spec.name));
                added = true;
            }
        }
        added
    }

    /// Whether a tool is enabled; tools the file does not list are enabled.
    pub fn is_enabled(&self, name: &str) -> bool {
        self.tools
            .iter()
            .find(|entry| entry.name == name)
            .is_none_or(|entry| entry.enabled)
    }

    /// The checks configuration, or the defaults.
    pub fn checks_or_default(&self) -> ChecksConfig {
        self.checks.clone().unwrap_or_default()
    }

    /// Checks the document for mistakes that would change what the policy means. Unknown tool
    /// names are custom entries, not problems.
    pub fn validate(&self) -> Result<(), ConfigErrors> {
        let mut problems = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (index, entry) in self.tools.iter().enumerate() {
            if entry.name.trim().is_empty() {
                problems.push(ConfigProblem {
                    location: format!("tools[{index}].name"),
                    message: "tool name is empty; give the entry a name or remove it".into(),
                });
            } else if !seen.insert(entry.name.as_str()) {
                problems.push(ConfigProblem {
                    location: format!("tools[{index}].name"),
                    message: format!(
                        "tool {:?} is listed more than once; keep one entry",
                        entry.name
                    ),
                });
            }
        }
        if let Some(checks) = &self.checks {
            for (index, script) in checks.scripts.iter().enumerate() {
                if script.trim().is_empty() {
                    problems.push(ConfigProblem {
                        location: format!("checks.scripts[{index}]"),
                        message: "script name is empty".into(),
                    });
                }
            }
            for kind in checks.policies.keys() {
                if !PATCH_KINDS.contains(&kind.as_str()) {
                    problems.push(ConfigProblem {
                        location: format!("checks.policies.{kind}"),
                        message: format!(
                            "unknown patch kind {kind:?}; expected one of {}",
                            PATCH_KINDS.join(", ")
                        ),
                    });
                }
            }
        }
        for (index, rule) in self.permissions.paths.iter().enumerate() {
            if let Err(message) = crate::policy::rules::check_path_pattern(&rule.pattern) {
                problems.push(ConfigProblem {
                    location: format!("permissions.paths[{index}].pattern"),
                    message: format!("invalid pattern {:?}: {message}", rule.pattern),
                });
            }
        }
        for (index, rule) in self.permissions.commands.iter().enumerate() {
            if let Err(message) = crate::policy::rules::check_command_pattern(&rule.pattern) {
                problems.push(ConfigProblem {
                    location: format!("permissions.commands[{index}].pattern"),
                    message: format!("invalid pattern {:?}: {message}", rule.pattern),
                });
            }
        }
        for (index, rule) in self.permissions.tools.iter().enumerate() {
            if let Err(message) = crate::policy::rules::check_tool_pattern(&rule.pattern) {
                problems.push(ConfigProblem {
                    location: format!("permissions.tools[{index}].pattern"),
                    message: format!("invalid pattern {:?}: {message}", rule.pattern),
                });
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigErrors { problems })
        }
    }
}

#[cfg(test)]
mod tests;
