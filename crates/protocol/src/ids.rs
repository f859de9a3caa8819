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

    /// The short id shown everywhere (status bar, panel, listings): the random suffix of a
    /// `YYYYMMDD-HHMMSS-xxxxxx` id (`b56614`), otherwise the first 12 characters. Every
    /// command that takes an id accepts it, as it accepts the whole id and any unique prefix
    /// of either.
    pub fn short(&self) -> &str {
        short_form(&self.0)
    }
}

/// The short form of a session id string (see [`SessionId::short`]).
pub fn short_form(id: &str) -> &str {
    let parts: Vec<&str> = id.split('-').collect();
    if let [date, time, suffix] = parts.as_slice()
        && date.len() == 8
        && time.len() == 6
        && date.bytes().chain(time.bytes()).all(|b| b.is_ascii_digit())
        && !suffix.is_empty()
        && suffix.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return suffix;
    }
    let end = id
        .char_indices()
        .nth(12)
        .map_or(id.len(), |(index, _)| index);
    &id[..end]
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
    fn the_short_id_is_the_random_suffix_or_a_prefix() {
        let id = SessionId::new("20261202-103723-b56614").unwrap();
        assert_eq!(id.short(), "b56614");
        let other = SessionId::new("0123456789abcdef0123").unwrap();
        assert_eq!(other.short(), "0123456789ab");
        assert_eq!(short_form("abc"), "abc");
        // A name shaped almost like ours keeps its head, not a piece of its middle.
        assert_eq!(short_form("2026-11-30T10.00"), "2026-11-30T1");
    }

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
