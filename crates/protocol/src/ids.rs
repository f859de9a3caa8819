//! Identifiers that appear in file names, journals and packets.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdError {
    /// The rejected value (clipped for display).
    pub value: String,
    /// What a valid value looks like.
    pub expected: &'static str,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid id {:?}: expected {}", self.value, self.expected)
    }
}

impl std::error::Error for IdError {}

/// A session id: the stem of `<home>/sessions/<id>.jsonl`.
///
/// Only `[A-Za-z0-9._-]` is allowed, so an id can never name a path outside the sessions
/// directory (`..` alone is refused too, as are `.` and the empty string).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// The accepted shape, for error messages.
    pub const EXPECTED: &'static str = "1-128 characters from [A-Za-z0-9._-], not '.' or '..'";

    /// Validates `value` as a session id.
    pub fn new(value: impl Into<String>) -> Result<Self, IdError> {
        let value = value.into();
        let valid_chars = value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if value.is_empty() || value.len() > 128 || !valid_chars || value == "." || value == ".." {
            let mut shown = value;
            if shown.len() > 80 {
                let cut = (0..=80)
                    .rev()
                    .find(|i| shown.is_char_boundary(*i))
                    .unwrap_or(0);
                shown.truncate(cut);
            }
            return Err(IdError {
                value: shown,
                expected: Self::EXPECTED,
            });
        }
        Ok(Self(value))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        SessionId::new(raw).map_err(serde::de::Error::custom)
    }
}

impl std::str::FromStr for SessionId {
    type Err = IdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionId::new(s)
    }
}

/// The id of one task context (brain or agent layer). Fresh per worker per run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ContextId(pub String);

impl ContextId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ContextId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ContextId {
    fn from(value: String) -> Self {
        Self(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_accept_safe_names_only() {
        for ok in ["abc", "a.b-c_d", "0123", "2026-11-30T10.00"] {
            assert!(SessionId::new(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "../x",
            "a b",
            "é",
            "a\0",
            &"x".repeat(129),
        ] {
            assert!(SessionId::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn session_id_deserialization_validates() {
        assert!(serde_json::from_str::<SessionId>("\"ok-id\"").is_ok());
        let err = serde_json::from_str::<SessionId>("\"../etc\"").unwrap_err();
        assert!(err.to_string().contains("invalid id"), "{err}");
    }
}
