//! The Braincode home directory (`~/.braincode`, or `BRAINCODE_HOME`).
//!
//! Reading never creates or rewrites anything: a missing file means "use the defaults" and a
//! malformed one is reported and left untouched. Directories are created only by writers,
//! at the moment they write.

use std::path::{Path, PathBuf};

use braincode_protocol::SessionId;

use crate::ConfigError;

/// The Braincode home and the paths of everything in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    /// Environment variable that overrides the home location.
    pub const ENV_VAR: &'static str = "BRAINCODE_HOME";

    /// `BRAINCODE_HOME` when set and non-empty (made absolute against the current directory),
    /// else `$HOME/.braincode`.
    pub fn from_env() -> Result<Home, ConfigError> {
        if let Some(value) = std::env::var_os(Self::ENV_VAR).filter(|v| !v.is_empty()) {
            let path = PathBuf::from(value);
            let path = if path.is_absolute() {
                path
            } else {
                std::env::current_dir()
                    .map_err(|err| ConfigError::NoHome {
                        reason: format!(
                            "BRAINCODE_HOME is relative and the current directory is unknown ({err})"
                        ),
                    })?
                    .join(path)
            };
            return Ok(Home { root: path });
        }
        match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Home {
                root: PathBuf::from(home).join(".braincode"),
            }),
            None => Err(ConfigError::NoHome {
                reason: "neither BRAINCODE_HOME nor HOME is set".into(),
            }),
        }
    }

    /// A home at an explicit directory (tests, `--home`).
    pub fn at(path: impl Into<PathBuf>) -> Home {
        Home { root: path.into() }
    }

    /// The home directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `settings.json`: mode, default brain, features, config server, references.
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    /// `brains.json`: user Brain Model presets.
    pub fn brains_path(&self) -> PathBuf {
        self.root.join("brains.json")
    }

    /// `models.json`: user model catalogue entries.
    pub fn models_path(&self) -> PathBuf {
        self.root.join("models.json")
    }

    /// `tools.json`: tool switches and permission rules.
    pub fn tools_path(&self) -> PathBuf {
        self.root.join("tools.json")
    }

    /// `auth.json`: provider credentials (mode 0600).
    pub fn auth_path(&self) -> PathBuf {
        self.root.join("auth.json")
    }

    /// `hooks.json`: user hooks.
    pub fn hooks_path(&self) -> PathBuf {
        self.root.join("hooks.json")
    }

    /// `mcp.json`: user MCP servers.
    pub fn mcp_path(&self) -> PathBuf {
        self.root.join("mcp.json")
    }

    /// `AGENTS.md`: user instructions added to every prompt.
    pub fn agents_md_path(&self) -> PathBuf {
        self.root.join("AGENTS.md")
    }

    /// `skills/`: user skills.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// `sessions/`: one JSONL journal per session.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `models/`: pulled local GGUF models.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// `logs/`.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// `cache/`.
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// `sessions/<id>.jsonl`.
    pub fn session_path(&self, id: &SessionId) -> PathBuf {
        self.sessions_dir().join(format!("{}.jsonl", id.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_live_under_the_root() {
        let home = Home::at("/tmp/bc");
        assert_eq!(home.settings_path(), PathBuf::from("/tmp/bc/settings.json"));
        assert_eq!(home.auth_path(), PathBuf::from("/tmp/bc/auth.json"));
        assert_eq!(home.skills_dir(), PathBuf::from("/tmp/bc/skills"));
        let id = SessionId::new("abc").unwrap();
        assert_eq!(
            home.session_path(&id),
            PathBuf::from("/tmp/bc/sessions/abc.jsonl")
        );
    }
}
