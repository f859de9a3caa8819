//! [`ConfigError`]: why the configuration of a run could not be loaded, one variant per
//! source, each naming the file and, when known, the line, column and field.

use std::fmt;
use std::path::{Path, PathBuf};

use braincode_config::JsonLocation;

/// A problem of one configuration file, as the config crate reports it (file, line, column,
/// field and what to do).
pub type FileError = braincode_config::ConfigError;

/// Where the id of the selected brain came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrainOrigin {
    /// `defaultBrainId` of this settings file (or its default when the file is missing).
    Settings {
        /// The settings file.
        path: PathBuf,
    },
    /// Asked for by the run itself (`--brain`, the TUI, the web panel).
    Requested,
}

/// One problem `tools.json` validation found, located in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsProblem {
    /// Field path of the offending value (`permissions.paths[2].pattern`).
    pub field: String,
    /// Line, column and field, when the field can be found in the text.
    pub location: JsonLocation,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for ToolsProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.location.line {
            Some(line) => write!(f, "line {line}")?,
            None => write!(f, "(line unknown)")?,
        }
        if let Some(column) = self.location.column {
            write!(f, " column {column}")?;
        }
        write!(f, ": {}: {}", self.field, self.message)
    }
}

/// Why the configuration of a run could not be loaded. Each variant names its source file;
/// the wrapped [`FileError`]s also carry the line, column and field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `settings.json` could not be read, parsed or validated.
    #[error(transparent)]
    Settings(FileError),
    /// `brains.json` could not be read, parsed or validated.
    #[error(transparent)]
    Brains(FileError),
    /// The selected brain id names no preset, or its presets do not resolve.
    #[error("{}", brain_message(.brain_id, .origin, .brains_path, .source))]
    Brain {
        /// The id that was asked for.
        brain_id: String,
        /// Where that id came from.
        origin: BrainOrigin,
        /// The brains file whose presets were searched.
        brains_path: PathBuf,
        /// What the brain crate reported (boxed: it keeps every variant small).
        source: Box<braincode_brain::BrainError>,
    },
    /// `models.json` could not be read, parsed or validated.
    #[error(transparent)]
    Models(FileError),
    /// `tools.json` could not be read or parsed.
    #[error(transparent)]
    Tools(FileError),
    /// `tools.json` parses but breaks a rule (an invalid glob, a duplicate tool, an unknown
    /// patch kind).
    #[error(
        "{} is invalid: {}; fix these entries, or move the file away to use the defaults",
        path.display(),
        problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    ToolsRules {
        /// The tools file.
        path: PathBuf,
        /// Every problem, in document order.
        problems: Vec<ToolsProblem>,
    },
    /// The permission rules of `tools.json` do not compile.
    #[error("{}: permission rules are invalid: {source}; fix that pattern", path.display())]
    Permissions {
        /// The tools file.
        path: PathBuf,
        /// What the policy reported.
        source: braincode_tools::PolicyError,
    },
    /// A `hooks.json` (the user's, or a trusted project's) could not be read or parsed.
    #[error(transparent)]
    Hooks(FileError),
    /// The workspace trust store could not be read (the project then counts as untrusted).
    #[error(transparent)]
    TrustStore(FileError),
}

/// The message of [`ConfigError::Brain`]: the file and field the id came from, then why.
fn brain_message(
    brain_id: &str,
    origin: &BrainOrigin,
    brains_path: &Path,
    source: &braincode_brain::BrainError,
) -> String {
    match (source, origin) {
        (braincode_brain::BrainError::UnknownBrain { .. }, BrainOrigin::Settings { path }) => {
            format!("{}: defaultBrainId: {source}", path.display())
        }
        (braincode_brain::BrainError::UnknownBrain { .. }, BrainOrigin::Requested) => {
            format!("brain {brain_id:?} asked for by this run: {source}")
        }
        _ => format!("{}: {source}", brains_path.display()),
    }
}

impl ConfigError {
    /// The config-crate error of the file, for the variants that wrap one.
    pub fn file_error(&self) -> Option<&FileError> {
        match self {
            ConfigError::Settings(err)
            | ConfigError::Brains(err)
            | ConfigError::Models(err)
            | ConfigError::Tools(err)
            | ConfigError::Hooks(err)
            | ConfigError::TrustStore(err) => Some(err),
            ConfigError::Brain { .. }
            | ConfigError::ToolsRules { .. }
            | ConfigError::Permissions { .. } => None,
        }
    }

    /// The file to fix, when there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigError::Brain { brains_path, .. } => {
                Some(self.unknown_default_brain().unwrap_or(brains_path))
            }
            ConfigError::ToolsRules { path, .. } | ConfigError::Permissions { path, .. } => {
                Some(path)
            }
            other => other.file_error().and_then(FileError::path),
        }
    }

    /// The settings file, when the unknown brain id came from its `defaultBrainId`.
    fn unknown_default_brain(&self) -> Option<&Path> {
        match self {
            ConfigError::Brain {
                origin: BrainOrigin::Settings { path },
                source,
                ..
            } if matches!(**source, braincode_brain::BrainError::UnknownBrain { .. }) => Some(path),
            _ => None,
        }
    }

    /// Line, column and field of the (first) problem, when known.
    pub fn location(&self) -> Option<JsonLocation> {
        match self {
            ConfigError::Brain { .. } => self.unknown_default_brain().map(|_| JsonLocation {
                field: Some("defaultBrainId".into()),
                ..JsonLocation::default()
            }),
            ConfigError::ToolsRules { problems, .. } => {
                problems.first().map(|problem| problem.location.clone())
            }
            ConfigError::Permissions { source, .. } => Some(JsonLocation {
                field: Some(match source {
                    braincode_tools::PolicyError::InvalidPathPattern { index, .. } => {
                        format!("permissions.paths[{index}].pattern")
                    }
                    braincode_tools::PolicyError::InvalidCommandPattern { index, .. } => {
                        format!("permissions.commands[{index}].pattern")
                    }
                    braincode_tools::PolicyError::InvalidToolPattern { index, .. } => {
                        format!("permissions.tools[{index}].pattern")
                    }
                }),
                ..JsonLocation::default()
            }),
            other => other.file_error().and_then(FileError::location).cloned(),
        }
    }
}
