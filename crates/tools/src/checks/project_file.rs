//! `.braincode/checks.json`: a project's partial `checks` configuration, merged over the
//! tools.json one, plus scripts to add to and checks to remove from the selection.
//!
//! ```json
//! {"strategy": "smart", "policies": {"frontend": {"scripts": ["lint"]}},
//!  "add": ["make:integration"], "disable": ["cargo clippy"], "timeoutMs": 300000}
//! ```
//!
//! Strict: an unknown key or a wrong type is an error naming the field, since a silently
//! ignored setting would run (or skip) checks the user did not ask for.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{CheckPolicy, CheckStrategy, ChecksConfig, PATCH_KINDS};

/// Changes a project makes to the discovered or configured checks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChecksOverrides {
    /// Script names to run as well (resolved like configured scripts), after the selection.
    pub add: Vec<String>,
    /// Check names never to run (`cargo clippy`, `npm run lint`, `npm run lint (web)`).
    pub disable: Vec<String>,
}

/// A mistake in `.braincode/checks.json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checks.json: {}{message}", if field.is_empty() { String::new() } else { format!("{field}: ") })]
pub struct ChecksFileError {
    /// The field at fault (`strategy`, `policies.frontend.review`, `add[1]`); empty for the
    /// whole document.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

fn error(field: impl Into<String>, message: impl Into<String>) -> ChecksFileError {
    ChecksFileError {
        field: field.into(),
        message: message.into(),
    }
}

const KEYS: &str =
    "enabled, scripts, strategy, policies, timeoutMs, maxOutputBytes, inWriters, add, disable";
const POLICY_KEYS: [&str; 4] = ["enabled", "scripts", "review", "reason"];

/// Parses `.braincode/checks.json` and merges it over `base` (each key replaces the base's;
/// `policies` replace per patch kind; numbers are clamped like tools.json's). Returns the
/// merged configuration and the project's add/disable lists.
pub fn parse_project_checks(
    text: &str,
    base: &ChecksConfig,
) -> Result<(ChecksConfig, ChecksOverrides), ChecksFileError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| error("", format!("not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(error("", "expected a JSON object"));
    };
    let mut config = base.clone();
    let mut overrides = ChecksOverrides::default();
    for (key, value) in map {
        match key.as_str() {
            "enabled" | "inWriters" => {
                let on = (value.as_bool()).ok_or_else(|| error(&key, "expected true or false"))?;
                match key.as_str() {
                    "enabled" => config.enabled = on,
                    _ => config.in_writers = on,
                }
            }
            "scripts" => config.scripts = script_list(&key, &value)?,
            "strategy" => config.strategy = strategy(&value)?,
            "policies" => {
                let Value::Object(policies) = value else {
                    return Err(error(&key, "expected an object keyed by patch kind"));
                };
                for (kind, policy) in policies {
                    config
                        .policies
                        .insert(kind.clone(), check_policy(&kind, policy)?);
                }
            }
            "timeoutMs" | "maxOutputBytes" => {
                if !value.is_number() {
                    return Err(error(&key, "expected a number"));
                }
                // tools.json's reader owns the bounds: read the one number through it.
                let mut one = Map::new();
                one.insert(key.clone(), value);
                let clamped: ChecksConfig = serde_json::from_value(Value::Object(one))
                    .map_err(|e| error(&key, e.to_string()))?;
                if key == "timeoutMs" {
                    config.timeout_ms = clamped.timeout_ms;
                } else {
                    config.max_output_bytes = clamped.max_output_bytes;
                }
            }
            "add" => overrides.add = script_list(&key, &value)?,
            "disable" => overrides.disable = script_list(&key, &value)?,
            _ => return Err(error(&key, format!("unknown key, expected one of {KEYS}"))),
        }
    }
    Ok((config, overrides))
}

fn strategy(value: &Value) -> Result<CheckStrategy, ChecksFileError> {
    match value.as_str() {
        Some("smart") => Ok(CheckStrategy::Smart),
        Some("all") => Ok(CheckStrategy::All),
        Some(other) => Err(error(
            "strategy",
            format!("unknown variant {other:?}, expected smart or all"),
        )),
        None => Err(error("strategy", "expected \"smart\" or \"all\"")),
    }
}

/// A list of non-blank script names.
fn script_list(field: &str, value: &Value) -> Result<Vec<String>, ChecksFileError> {
    let Value::Array(items) = value else {
        return Err(error(field, "expected an array of script names"));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| match item.as_str() {
            Some(name) if !name.trim().is_empty() => Ok(name.trim().to_string()),
            Some(_) => Err(error(format!("{field}[{index}]"), "empty script name")),
            None => Err(error(format!("{field}[{index}]"), "expected a string")),
        })
        .collect()
}

fn check_policy(kind: &str, value: Value) -> Result<CheckPolicy, ChecksFileError> {
    let field = format!("policies.{kind}");
    if !PATCH_KINDS.contains(&kind) {
        return Err(error(
            field,
            format!(
                "unknown patch kind, expected one of {}",
                PATCH_KINDS.join(", ")
            ),
        ));
    }
    let Value::Object(map) = &value else {
        return Err(error(field, "expected an object"));
    };
    if let Some(key) = map.keys().find(|key| !POLICY_KEYS.contains(&key.as_str())) {
        return Err(error(
            format!("{field}.{key}"),
            format!("unknown key, expected one of {}", POLICY_KEYS.join(", ")),
        ));
    }
    if let Some(scripts) = map.get("scripts") {
        script_list(&format!("{field}.scripts"), scripts)?;
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        error(format!("{field}.{path}"), e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ReviewRequirement;

    fn parse(text: &str) -> Result<(ChecksConfig, ChecksOverrides), String> {
        parse_project_checks(text, &ChecksConfig::default()).map_err(|e| e.to_string())
    }

    #[test]
    fn merges_over_the_base() {
        let mut base = ChecksConfig {
            scripts: vec!["test".into()],
            ..ChecksConfig::default()
        };
        base.policies.insert(
            "backend".into(),
            CheckPolicy {
                enabled: Some(false),
                ..CheckPolicy::default()
            },
        );
        base.policies.insert(
            "frontend".into(),
            CheckPolicy {
                scripts: Some(vec!["lint".into()]),
                ..CheckPolicy::default()
            },
        );
        let (config, overrides) = parse_project_checks(
            r#"{"strategy": "all", "enabled": false, "policies": {"backend": {"review": "required", "reason": "r"}},
                "timeoutMs": 5, "maxOutputBytes": 30000, "inWriters": false, "add": [" make:integration "], "disable": ["cargo clippy"]}"#,
            &base,
        )
        .unwrap();
        assert_eq!(config.strategy, CheckStrategy::All);
        assert!(!config.enabled);
        assert!(!config.in_writers);
        assert!(base.in_writers, "on unless a file turns it off");
        assert_eq!(config.scripts, ["test"]);
        assert_eq!(config.timeout_ms, 1_000);
        assert_eq!(config.max_output_bytes, 30_000);
        let backend = &config.policies["backend"];
        assert_eq!(backend.enabled, None);
        assert_eq!(backend.review, Some(ReviewRequirement::Required));
        assert_eq!(backend.reason.as_deref(), Some("r"));
        assert_eq!(
            config.policies["frontend"].scripts.as_deref(),
            Some(&["lint".to_string()][..])
        );
        assert_eq!(overrides.add, ["make:integration"]);
        assert_eq!(overrides.disable, ["cargo clippy"]);
        let (same, none) = parse_project_checks("{}", &base).unwrap();
        assert_eq!(same, base);
        assert_eq!(none, ChecksOverrides::default());
    }

    #[test]
    fn errors_name_the_field() {
        for (text, expected) in [
            (
                r#"{"strategy": "fast"}"#,
                r#"checks.json: strategy: unknown variant "fast", expected smart or all"#,
            ),
            (
                r#"{"strategy": 1}"#,
                r#"checks.json: strategy: expected "smart" or "all""#,
            ),
            (
                r#"{"scripts": ["a", " "]}"#,
                "checks.json: scripts[1]: empty script name",
            ),
            (
                r#"{"add": "lint"}"#,
                "checks.json: add: expected an array of script names",
            ),
            (
                r#"{"disable": [1]}"#,
                "checks.json: disable[0]: expected a string",
            ),
            (
                r#"{"enabled": "yes"}"#,
                "checks.json: enabled: expected true or false",
            ),
            (
                r#"{"timeoutMs": "10s"}"#,
                "checks.json: timeoutMs: expected a number",
            ),
            (
                r#"{"policies": {"weird": {}}}"#,
                "checks.json: policies.weird: unknown patch kind",
            ),
            (
                r#"{"policies": {"frontend": {"skip": true}}}"#,
                "checks.json: policies.frontend.skip: unknown key",
            ),
            (
                r#"{"policies": {"frontend": {"scripts": [""]}}}"#,
                "checks.json: policies.frontend.scripts[0]: empty script name",
            ),
            (
                r#"{"policies": {"ci-risk": {"review": "always"}}}"#,
                "checks.json: policies.ci-risk.review: unknown variant `always`",
            ),
            (
                r#"{"policies": []}"#,
                "checks.json: policies: expected an object",
            ),
            (
                r#"{"extra": 1}"#,
                "checks.json: extra: unknown key, expected one of enabled, scripts",
            ),
            ("[]", "checks.json: expected a JSON object"),
            ("{", "checks.json: not valid JSON"),
        ] {
            let message = parse(text).unwrap_err();
            assert!(message.starts_with(expected), "{text}: {message}");
        }
    }
}
