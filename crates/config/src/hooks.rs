//! `hooks.json` (user `<home>/hooks.json`, project `.agents/hooks.json`): which commands run on
//! which events. This module only reads and validates the files; running hooks is the
//! runtime's job.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::json_io;
use crate::{ConfigError, Home};

/// Hook events the schema knows. Entries under any other name are dropped with a warning.
pub const HOOK_EVENTS: [&str; 10] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "SubagentStop",
    "Stop",
];

/// Whether a file belongs to the user (home) or to the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// `~/.braincode/...`.
    User,
    /// Inside the project root.
    Project,
}

impl Scope {
    /// `user` or `project`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn default_handler_type() -> String {
    "command".into()
}

fn default_true() -> bool {
    true
}

fn timeout_seconds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<u64>::deserialize(deserializer)?;
    match value {
        Some(0) => Err(de::Error::custom(
            "timeout must be at least 1 second (it is in seconds; default 600)",
        )),
        other => Ok(other),
    }
}

/// One hook handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookHandler {
    /// Handler type; only `command` runs.
    #[serde(rename = "type", default = "default_handler_type")]
    pub kind: String,
    /// Shell command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Command used on Windows instead of `command`.
    #[serde(
        default,
        alias = "command_windows",
        skip_serializing_if = "Option::is_none"
    )]
    pub command_windows: Option<String>,
    /// Timeout in seconds (at least 1; default 600).
    #[serde(
        default,
        deserialize_with = "timeout_seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<u64>,
    /// Status line shown while the hook runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Run without waiting (not supported yet; such handlers are skipped at run time).
    #[serde(default, rename = "async")]
    pub is_async: bool,
    /// Whether the handler is on.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Whether the user trusts this command to run (untrusted handlers are skipped).
    #[serde(default)]
    pub trusted: bool,
}

impl HookHandler {
    /// Whether the handler has something to run.
    pub fn has_command(&self) -> bool {
        let present = |c: &Option<String>| c.as_deref().is_some_and(|c| !c.trim().is_empty());
        present(&self.command) || present(&self.command_windows)
    }
}

/// Handlers that share a matcher.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookGroup {
    /// Regex (or literal when the regex is invalid) matched against the event's value;
    /// empty or `*` matches everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The handlers.
    #[serde(default)]
    pub hooks: Vec<HookHandler>,
}

/// Event name → groups, after dropping unknown events (their names are kept for warnings).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HookEvents {
    /// Known events.
    pub events: BTreeMap<String, Vec<HookGroup>>,
    /// Names of the events that were dropped.
    pub unknown: Vec<String>,
}

impl<'de> Deserialize<'de> for HookEvents {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EventsVisitor;
        impl<'de> Visitor<'de> for EventsVisitor {
            type Value = HookEvents;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object mapping event names to lists of hook groups")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HookEvents, A::Error> {
                let mut out = HookEvents::default();
                while let Some(name) = map.next_key::<String>()? {
                    if HOOK_EVENTS.contains(&name.as_str()) {
                        let groups = map.next_value::<Vec<HookGroup>>()?;
                        out.events.entry(name).or_default().extend(groups);
                    } else {
                        map.next_value::<de::IgnoredAny>()?;
                        out.unknown.push(name);
                    }
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(EventsVisitor)
    }
}

impl Serialize for HookEvents {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.events.serialize(serializer)
    }
}

/// The contents of one hooks.json.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HooksFile {
    /// Event name → groups.
    #[serde(default)]
    pub hooks: HookEvents,
}

impl HooksFile {
    /// Number of handlers that have a command.
    pub fn handler_count(&self) -> usize {
        self.hooks
            .events
            .values()
            .flatten()
            .map(|group| group.hooks.iter().filter(|h| h.has_command()).count())
            .sum()
    }
}

/// One hooks.json that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookSource {
    /// The file.
    pub path: PathBuf,
    /// User or project.
    pub scope: Scope,
    /// Its normalized contents.
    pub file: HooksFile,
    /// What was dropped while normalizing (unknown events, groups without a command).
    pub warnings: Vec<String>,
}

/// Reads one hooks.json: `Ok(None)` when missing or empty; a malformed file is an error with
/// line, column and field. Unknown events and groups without any command are dropped and
/// reported in `warnings`.
pub fn read_hooks_file(path: &Path, scope: Scope) -> Result<Option<HookSource>, ConfigError> {
    let Some(mut file) = json_io::read_json_file::<HooksFile>(path)? else {
        return Ok(None);
    };
    let mut warnings: Vec<String> = file
        .hooks
        .unknown
        .iter()
        .map(|name| {
            format!(
                "{}: unknown hook event {name:?} ignored (known events: {})",
                path.display(),
                HOOK_EVENTS.join(", ")
            )
        })
        .collect();
    for (event, groups) in &mut file.hooks.events {
        let before = groups.len();
        groups.retain(|group| group.hooks.iter().any(HookHandler::has_command));
        if groups.len() < before {
            warnings.push(format!(
                "{}: {} {event} group(s) without any command ignored",
                path.display(),
                before - groups.len()
            ));
        }
    }
    file.hooks.events.retain(|_, groups| !groups.is_empty());
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    Ok(Some(HookSource {
        path: path.to_path_buf(),
        scope,
        file,
        warnings,
    }))
}

/// Project hooks file: `<root>/.agents/hooks.json`.
pub fn project_hooks_path(project_root: &Path) -> PathBuf {
    project_root.join(".agents").join("hooks.json")
}

/// Reads the user (`<home>/hooks.json`) and project (`.agents/hooks.json`) hook files, user
/// first. Both run; neither shadows the other.
///
/// The project file is read only when `trust` (decided once by the caller, see
/// [`crate::trust`]) says the user trusts the project; its handlers are then trusted as a
/// whole, whatever their own `trusted` field says. A user handler still needs
/// `"trusted": true` in the user's own file.
pub fn load_hooks(
    home: &Home,
    project_root: &Path,
    trust: &crate::ProjectTrust,
) -> Result<Vec<HookSource>, ConfigError> {
    let mut sources = Vec::new();
    if let Some(source) = read_hooks_file(&home.hooks_path(), Scope::User)? {
        sources.push(source);
    }
    if trust.is_trusted()
        && let Some(mut source) =
            read_hooks_file(&project_hooks_path(project_root), Scope::Project)?
    {
        for handler in source
            .file
            .hooks
            .events
            .values_mut()
            .flatten()
            .flat_map(|group| group.hooks.iter_mut())
        {
            handler.trusted = true;
        }
        sources.push(source);
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::check_trust;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn parses_appendix_f_shape_with_defaults_and_aliases() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home"));
        let project = dir.path().join("project");
        write(
            &home.hooks_path(),
            r#"{"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [
                {"command": "echo hi", "command_windows": "echo win", "timeout": 5, "trusted": true}
            ]}], "Bogus": [{"hooks": []}]}}"#,
        );
        write(
            &project_hooks_path(&project),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "async": true, "enabled": false}]},
                                   {"hooks": [{"statusMessage": "nothing to run"}]}]}}"#,
        );
        let sources = load_hooks(&home, &project, &check_trust(&home, &project).0).unwrap();
        assert_eq!(
            sources.len(),
            1,
            "an untrusted project's hooks are not read"
        );
        crate::trust::trust_project(&home, &project).unwrap();
        let sources = load_hooks(&home, &project, &check_trust(&home, &project).0).unwrap();
        assert_eq!(sources.len(), 2);
        let user = &sources[0];
        assert_eq!(user.scope, Scope::User);
        let handler = &user.file.hooks.events["SessionStart"][0].hooks[0];
        assert_eq!(handler.kind, "command");
        assert_eq!(handler.command_windows.as_deref(), Some("echo win"));
        assert_eq!(handler.timeout, Some(5));
        assert!(handler.enabled && handler.trusted && !handler.is_async);
        assert!(user.warnings.iter().any(|w| w.contains("\"Bogus\"")));
        let project_source = &sources[1];
        let stop = &project_source.file.hooks.events["Stop"];
        assert_eq!(stop.len(), 1, "group without command dropped");
        assert!(stop[0].hooks[0].is_async && !stop[0].hooks[0].enabled);
        assert!(
            stop[0].hooks[0].trusted,
            "a trusted project's handlers are trusted as a whole"
        );
        assert_eq!(project_source.file.handler_count(), 1);
    }

    #[test]
    fn zero_timeout_is_a_located_field_error() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path();
        write(
            &project_hooks_path(project),
            "{\"hooks\": {\n \"Stop\": [{\"hooks\": [{\"command\": \"x\", \"timeout\": 0}]}]}}",
        );
        let home = Home::at(dir.path().join("h"));
        crate::trust::trust_project(&home, project).unwrap();
        let err = load_hooks(&home, project, &check_trust(&home, project).0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("hooks.json:2:"), "{err}");
        assert!(err.contains("hooks.Stop[0].hooks[0].timeout"), "{err}");
        assert!(err.contains("at least 1 second"), "{err}");
    }

    #[test]
    fn malformed_json_is_an_error_and_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        write(&home.hooks_path(), "{\"hooks\": {");
        let err = load_hooks(&home, dir.path(), &check_trust(&home, dir.path()).0).unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(home.hooks_path()).unwrap(),
            "{\"hooks\": {"
        );
    }
}
