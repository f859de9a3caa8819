//! The hook handlers of one hooks.json as its text has them, each with where it sits (event,
//! group, index), and switching one on or off in place: what the panel's hooks page lists and
//! edits, and what the TUI's `/hooks on|off <n>` switches.

use std::path::Path;

use serde_json::Value;

use crate::error::ConfigError;
use crate::hooks::{HOOK_EVENTS, HooksFile};
use crate::json_edit::{self, Step};
use crate::json_io::{lock_for_update, parse_json_text, read_text, write_bytes_atomic};

/// One handler of a hooks.json, with where it sits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRow {
    /// Its event (`PreToolUse`, …).
    pub event: String,
    /// Its group's place in the event's list.
    pub group: usize,
    /// Its place in its group.
    pub index: usize,
    /// Its group's matcher (empty: every call).
    pub matcher: String,
    /// Its command.
    pub command: String,
    /// Its timeout in seconds, when set.
    pub timeout: Option<u64>,
    /// Whether it runs (`enabled`, on unless the file says `false`).
    pub enabled: bool,
    /// Whether the file marks it trusted.
    pub trusted: bool,
}

impl HookRow {
    /// Its matcher as a person reads it (`*`: every call).
    pub fn matcher_shown(&self) -> &str {
        if self.matcher.is_empty() {
            "*"
        } else {
            &self.matcher
        }
    }
}

/// The handlers of a hooks.json text in file order (unknown events left out: they never run;
/// a text that is not JSON has none).
pub fn hook_rows(text: &str) -> Vec<HookRow> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let Some(events) = value.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (event, groups) in events {
        if !HOOK_EVENTS.contains(&event.as_str()) {
            continue;
        }
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group["matcher"].as_str().unwrap_or_default().to_string();
            for (h, handler) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                out.push(HookRow {
                    event: event.clone(),
                    group: g,
                    index: h,
                    matcher: matcher.clone(),
                    command: handler["command"].as_str().unwrap_or_default().to_string(),
                    timeout: handler["timeout"].as_u64(),
                    enabled: handler["enabled"].as_bool().unwrap_or(true),
                    trusted: handler["trusted"].as_bool().unwrap_or(false),
                });
            }
        }
    }
    out
}

/// Whether a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookSwitch {
    /// It runs (the default: the `enabled` flag is removed).
    On,
    /// It does not run (`"enabled": false`).
    Off,
}

/// `text` with handler `row` switched: only its `enabled` flag's bytes change. `None` when the
/// handler is not where `row` says.
pub fn switch_hook_text(text: &str, row: &HookRow, switch: HookSwitch) -> Option<String> {
    let at = [
        Step::Key("hooks"),
        Step::Key(&row.event),
        Step::Index(row.group),
        Step::Key("hooks"),
        Step::Index(row.index),
        Step::Key("enabled"),
    ];
    match switch {
        HookSwitch::On => json_edit::remove(text, &at).or_else(|| Some(text.to_string())),
        HookSwitch::Off => json_edit::set(text, &at, &false.into()),
    }
}

/// Switches handler number `number` (1-based, in [`hook_rows`] order) of the hooks file at
/// `path` on or off, in place and atomically, under the file's update lock; the result must
/// still load as a hooks file. Returns the handler as it now is.
pub fn switch_hook(path: &Path, number: usize, switch: HookSwitch) -> Result<HookRow, ConfigError> {
    let _lock = lock_for_update(path)?;
    let text = read_text(path)?.unwrap_or_default();
    let rows = hook_rows(&text);
    let row = number
        .checked_sub(1)
        .and_then(|i| rows.get(i))
        .ok_or_else(|| ConfigError::Rejected {
            message: format!(
                "{}: there is no hook number {number} (the file has {} hook{}; `/hooks` numbers them)",
                path.display(),
                rows.len(),
                if rows.len() == 1 { "" } else { "s" }
            ),
        })?;
    let edited = switch_hook_text(&text, row, switch).ok_or_else(|| ConfigError::Rejected {
        message: format!("{}: the hook could not be edited in place", path.display()),
    })?;
    // What is written must still load as a hooks file.
    parse_json_text::<HooksFile>(path, &edited)?;
    write_bytes_atomic(path, edited.as_bytes(), 0o600)?;
    Ok(HookRow {
        enabled: switch == HookSwitch::On,
        ..row.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"{
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "echo one"}]}],
    "PreToolUse": [{"matcher": "exec_command", "hooks": [
      {"type": "command", "command": "echo two", "enabled": false},
      {"type": "command", "command": "echo three"}
    ]}]
  }
}
"#;

    #[test]
    fn switching_a_hook_changes_its_flag_only_and_the_number_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.json");
        std::fs::write(&path, FILE).unwrap();
        let rows = hook_rows(FILE);
        assert_eq!(rows.len(), 3);
        let third = rows.iter().position(|r| r.command == "echo three").unwrap() + 1;
        let row = switch_hook(&path, third, HookSwitch::Off).unwrap();
        assert_eq!((row.command.as_str(), row.enabled), ("echo three", false));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""command": "echo one"}]}]"#), "{text}");
        assert!(
            hook_rows(&text)
                .iter()
                .all(|r| !r.enabled || r.command == "echo one")
        );
        let second = rows.iter().position(|r| r.command == "echo two").unwrap() + 1;
        switch_hook(&path, second, HookSwitch::On).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(r#""echo two", "enabled""#), "{text}");
        let before = std::fs::read(&path).unwrap();
        let err = switch_hook(&path, 9, HookSwitch::Off)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no hook number 9") && err.contains("3 hooks"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
