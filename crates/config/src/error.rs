//! Errors of the config crate. Each one says what failed, where (file, line, column, field)
//! and what to do about it, because these messages reach the user as they are.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Where in a JSON file a problem is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JsonLocation {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Field path such as `brains[1].roles.backend.thinkingLevel`, when known.
    pub field: Option<String>,
}

impl fmt::Display for JsonLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// A failure to find, read, parse, validate or write a configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Neither `BRAINCODE_HOME` nor `HOME` names a directory.
    #[error("cannot locate the Braincode home: {reason}; set BRAINCODE_HOME to a directory")]
    NoHome {
        /// Why.
        reason: String,
    },
    /// A file or directory could not be read.
    #[error("cannot read {}: {source}; check that it exists and is readable", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A file or directory could not be written.
    #[error("cannot write {}: {source}; check the directory permissions and free space", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The file is not valid JSON.
    #[error(
        "{}{location}: {message}; fix the JSON syntax there, or move the file away to use the defaults",
        path.display()
    )]
    Syntax {
        /// The file.
        path: PathBuf,
        /// Line and column.
        location: Box<JsonLocation>,
        /// What the parser saw and expected.
        message: String,
    },
    /// The JSON is well formed but a value has the wrong type, an unknown variant, or is
    /// missing.
    #[error(
        "{}{location}: {}: {message}; fix that field (see the documentation of {})",
        path.display(),
        location.field.as_deref().unwrap_or("(top level)"),
        file_name(path)
    )]
    Field {
        /// The file.
        path: PathBuf,
        /// Line, column and field path.
        location: Box<JsonLocation>,
        /// What is wrong.
        message: String,
    },
    /// The values parse but break a rule (duplicate id, empty name, out-of-range number).
    #[error(
        "{}{location}: {}: {message}; {hint}",
        path.display(),
        location.field.as_deref().unwrap_or("(top level)")
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where, when known.
        location: Box<JsonLocation>,
        /// What is wrong.
        message: String,
        /// What to do.
        hint: String,
    },
    /// A secrets file is readable by other users.
    #[error(
        "{} is readable by group or others (mode {mode:03o}); it holds credentials, so Braincode refuses to use it until you run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    InsecurePermissions {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// A value given by the caller was refused before anything was written.
    #[error("{message}")]
    Rejected {
        /// What was refused and what to do.
        message: String,
    },
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

impl ConfigError {
    /// The file the error is about, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            ConfigError::Read { path, .. }
            | ConfigError::Write { path, .. }
            | ConfigError::Syntax { path, .. }
            | ConfigError::Field { path, .. }
            | ConfigError::Invalid { path, .. }
            | ConfigError::InsecurePermissions { path, .. } => Some(path),
            ConfigError::NoHome { .. } | ConfigError::Rejected { .. } => None,
        }
    }

    /// Line, column and field, when known.
    pub fn location(&self) -> Option<&JsonLocation> {
        match self {
            ConfigError::Syntax { location, .. }
            | ConfigError::Field { location, .. }
            | ConfigError::Invalid { location, .. } => Some(location),
            _ => None,
        }
    }
}

/// A failure to append to or read a session journal.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Opening, writing, syncing or reading the file failed.
    #[error("cannot {action} session journal {}: {source}; check the permissions of the sessions directory and free space", path.display())]
    Io {
        /// What was being done (`open`, `append to`, `sync`, `read`).
        action: &'static str,
        /// The journal file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A record could not be turned into JSON (a bug in the record type).
    #[error("cannot encode a {record_type} record for {}: {source}", path.display())]
    Encode {
        /// The record type.
        record_type: String,
        /// The journal file.
        path: PathBuf,
        /// The serializer error.
        source: serde_json::Error,
    },
    /// The Braincode home could not be located.
    #[error(transparent)]
    Home(#[from] ConfigError),
}

/// A failure to turn a session id or prefix into one session.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// Nothing matches.
    #[error(
        "no session matches {query:?}; run `braincode sessions list --all` to see the session ids"
    )]
    NotFound {
        /// What the user typed.
        query: String,
    },
    /// More than one session id starts with the prefix.
    #[error(
        "{query:?} matches {total} sessions: {}{}; type more characters of the id",
        candidates.join(", "),
        if *total > candidates.len() { ", …" } else { "" }
    )]
    Ambiguous {
        /// What the user typed.
        query: String,
        /// How many sessions match.
        total: usize,
        /// Matching ids, newest first (at most 10 are listed).
        candidates: Vec<String>,
    },
    /// The text cannot be a session id at all.
    #[error("{query:?} is not a session id: ids use only letters, digits, '.', '_' and '-'")]
    InvalidId {
        /// What the user typed.
        query: String,
    },
    /// The sessions directory could not be listed.
    #[error("cannot list the sessions directory {}: {source}", path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}
