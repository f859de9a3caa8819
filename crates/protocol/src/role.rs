//! Roles, modes and phases: the names the whole system routes on.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An agent role. 13 are routed (the Brain may give them work); `routeBrain` and `pet` are
/// internal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// The planner that routes a prompt (internal).
    RouteBrain,
    /// UI, client state, accessibility.
    Frontend,
    /// APIs, services, validation, persistence boundaries.
    Backend,
    /// UX flows, interaction, copy, visual direction.
    Designer,
    /// Generated raster assets.
    ImageMaker,
    /// Schemas, migrations, queries.
    Dba,
    /// CI/CD, packaging, environments, git and shell work.
    Devops,
    /// Trust boundaries, secrets, injection, permissions.
    Security,
    /// Test strategy, regressions, verification.
    Qa,
    /// Independent review of results and diffs.
    Review,
    /// Handoff-ready summaries.
    Summarize,
    /// Hard architecture decisions and deep debugging.
    Oracle,
    /// Repository orientation and fact finding.
    Librarian,
    /// Tiny chores and short conversational replies.
    Rush,
    /// The status-panel companion (internal).
    Pet,
}

/// A role name that is not one of the known roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleParseError {
    /// The rejected name.
    pub value: String,
}

impl fmt::Display for RoleParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let valid: Vec<&str> = Role::ALL.iter().map(|r| r.as_str()).collect();
        write!(
            f,
            "unknown role {:?}; valid roles: {}",
            self.value,
            valid.join(", ")
        )
    }
}

impl std::error::Error for RoleParseError {}

impl Role {
    /// Every role, in catalog order.
    pub const ALL: [Role; 15] = [
        Role::RouteBrain,
        Role::Frontend,
        Role::Backend,
        Role::Designer,
        Role::ImageMaker,
        Role::Dba,
        Role::Devops,
        Role::Security,
        Role::Qa,
        Role::Review,
        Role::Summarize,
        Role::Oracle,
        Role::Librarian,
        Role::Rush,
        Role::Pet,
    ];

    /// The 13 roles the Brain may route work to.
    pub const ROUTED: [Role; 13] = [
        Role::Frontend,
        Role::Backend,
        Role::Designer,
        Role::ImageMaker,
        Role::Dba,
        Role::Devops,
        Role::Security,
        Role::Qa,
        Role::Review,
        Role::Summarize,
        Role::Oracle,
        Role::Librarian,
        Role::Rush,
    ];

    /// The JSON / CLI name of the role.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::RouteBrain => "routeBrain",
            Role::Frontend => "frontend",
            Role::Backend => "backend",
            Role::Designer => "designer",
            Role::ImageMaker => "imageMaker",
            Role::Dba => "dba",
            Role::Devops => "devops",
            Role::Security => "security",
            Role::Qa => "qa",
            Role::Review => "review",
            Role::Summarize => "summarize",
            Role::Oracle => "oracle",
            Role::Librarian => "librarian",
            Role::Rush => "rush",
            Role::Pet => "pet",
        }
    }

    /// Whether the Brain may route work to this role.
    pub const fn is_routed(self) -> bool {
        !matches!(self, Role::RouteBrain | Role::Pet)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = RoleParseError;
    /// Parses a role name; matching is exact but case-insensitive (`imagemaker` works).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        Role::ALL
            .iter()
            .copied()
            .find(|r| r.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| RoleParseError {
                value: s.to_string(),
            })
    }
}

/// Orchestration mode (a global setting, not part of the brain).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Focused plans; risky actions need explicit approval.
    #[default]
    Auto,
    /// Expansive plans; tool calls auto-approved (permission `deny` rules still apply).
    Radical,
}

impl Mode {
    /// The JSON / CLI name of the mode.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Radical => "radical",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(Mode::Auto),
            "radical" => Ok(Mode::Radical),
            other => Err(format!(
                "unknown mode {other:?}; valid modes: auto, radical"
            )),
        }
    }
}

/// Where a worker runs in the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerPhase {
    /// Isolated support worker, before the primary.
    Support,
    /// The primary agent that acts and merges.
    Primary,
    /// The independent reviewer.
    Review,
}

impl WorkerPhase {
    /// The JSON name of the phase.
    pub const fn as_str(self) -> &'static str {
        match self {
            WorkerPhase::Support => "support",
            WorkerPhase::Primary => "primary",
            WorkerPhase::Review => "review",
        }
    }
}

/// Metric phase a model call is attributed to (order = report order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The routeBrain planning call.
    Router,
    /// Support workers and dynamic dispatches.
    Support,
    /// The primary agent.
    Primary,
    /// The review worker.
    Review,
    /// The status companion.
    Pet,
    /// Anything not attributed.
    Unknown,
}

impl Phase {
    /// Every phase in report order.
    pub const ALL: [Phase; 6] = [
        Phase::Router,
        Phase::Support,
        Phase::Primary,
        Phase::Review,
        Phase::Pet,
        Phase::Unknown,
    ];

    /// The JSON name of the phase.
    pub const fn as_str(self) -> &'static str {
        match self {
            Phase::Router => "router",
            Phase::Support => "support",
            Phase::Primary => "primary",
            Phase::Review => "review",
            Phase::Pet => "pet",
            Phase::Unknown => "unknown",
        }
    }
}

impl From<WorkerPhase> for Phase {
    fn from(value: WorkerPhase) -> Self {
        match value {
            WorkerPhase::Support => Phase::Support,
            WorkerPhase::Primary => Phase::Primary,
            WorkerPhase::Review => Phase::Review,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_round_trip_through_json_and_from_str() {
        for role in Role::ALL {
            let json = serde_json::to_string(&role).unwrap();
            assert_eq!(json, format!("\"{}\"", role.as_str()));
            assert_eq!(serde_json::from_str::<Role>(&json).unwrap(), role);
            assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
        }
        assert_eq!(Role::ROUTED.len(), 13);
        assert!(Role::ROUTED.iter().all(|r| r.is_routed()));
        assert!(!Role::Pet.is_routed() && !Role::RouteBrain.is_routed());
    }

    #[test]
    fn unknown_role_error_lists_valid_roles() {
        let err = "coder".parse::<Role>().unwrap_err().to_string();
        assert!(
            err.contains("\"coder\"") && err.contains("librarian"),
            "{err}"
        );
    }
}
