//! The permission mode of a run: how much it may change without asking.

/// How much a run may change, and who approves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    /// Only read tools are offered (the headless default).
    #[default]
    ReadOnly,
    /// Every tool is offered; each edit and each command asks a person, with the diff or the
    /// command shown (the TUI's default). Without a person nothing that changes anything runs.
    Ask,
    /// Every tool is offered; file edits are approved by the runtime, and commands that run
    /// inside the OS sandbox too. A command the sandbox cannot confine asks a person.
    AllowEdits,
    /// Every tool is offered; every call is approved except permission-policy denials.
    Yes,
}

impl PermissionMode {
    /// Every mode, in the order Shift+Tab cycles through them.
    pub const CYCLE: [PermissionMode; 4] = [
        PermissionMode::Ask,
        PermissionMode::AllowEdits,
        PermissionMode::Yes,
        PermissionMode::ReadOnly,
    ];

    /// Parses the name [`as_str`](Self::as_str) gives.
    pub fn from_name(name: &str) -> Option<PermissionMode> {
        Self::CYCLE.into_iter().find(|mode| mode.as_str() == name)
    }

    /// The hook/payload name of the mode (journaled in `run_start`).
    pub const fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "default",
            PermissionMode::Ask => "ask",
            PermissionMode::AllowEdits => "acceptEdits",
            PermissionMode::Yes => "bypassPermissions",
        }
    }

    /// The name a person types and reads (`/mode edits`, the status bar).
    pub const fn label(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::Ask => "ask",
            PermissionMode::AllowEdits => "edits",
            PermissionMode::Yes => "yes",
        }
    }

    /// One line on what the mode does.
    pub const fn describe(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "tools read the project; nothing is changed",
            PermissionMode::Ask => {
                "every edit and every command asks you first, with the diff or the command"
            }
            PermissionMode::AllowEdits => {
                "edits apply; commands run when the OS sandbox confines them, otherwise they ask"
            }
            PermissionMode::Yes => {
                "edits and commands run without asking (permission deny rules still apply)"
            }
        }
    }

    /// The mode after this one (Shift+Tab).
    pub fn next(self) -> PermissionMode {
        let at = Self::CYCLE.iter().position(|m| *m == self).unwrap_or(0);
        Self::CYCLE[(at + 1) % Self::CYCLE.len()]
    }

    /// Whether the mode offers tools that change things.
    pub const fn may_change(self) -> bool {
        !matches!(self, PermissionMode::ReadOnly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_the_cycle_visits_every_mode() {
        for mode in PermissionMode::CYCLE {
            assert_eq!(PermissionMode::from_name(mode.as_str()), Some(mode));
        }
        let mut seen = vec![PermissionMode::Ask];
        let mut mode = PermissionMode::Ask.next();
        while mode != PermissionMode::Ask {
            seen.push(mode);
            mode = mode.next();
        }
        assert_eq!(seen, PermissionMode::CYCLE);
        assert_eq!(PermissionMode::from_name("plan"), None);
    }
}
