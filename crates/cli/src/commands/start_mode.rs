//! The permission mode an interactive session starts in (`braincode tui`, `braincode acp`):
//! one set of flags, one default.

use braincode_runtime::PermissionMode;

/// `--allow-edits`, `--read-only` or `--yes`; none of them: `ask`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct StartMode {
    /// Start in `edits` mode: file edits apply, commands run when the OS sandbox confines
    /// them (protected paths and unconfined commands ask). The default is `ask`: every edit
    /// and command asks first. The session's mode switch changes it (Shift+Tab in the
    /// terminal, the mode menu in an editor).
    #[arg(long, group = "permission")]
    pub allow_edits: bool,
    /// Start in `read-only` mode: tools read the project and change nothing.
    #[arg(long, group = "permission")]
    pub read_only: bool,
    /// Start in `yes` mode: every tool call runs without asking (commands in the OS sandbox;
    /// permission deny rules still apply).
    #[arg(long, short = 'y', group = "permission")]
    pub yes: bool,
}

impl StartMode {
    /// The mode the flags name.
    pub fn mode(&self) -> PermissionMode {
        if self.yes {
            PermissionMode::Yes
        } else if self.allow_edits {
            PermissionMode::AllowEdits
        } else if self.read_only {
            PermissionMode::ReadOnly
        } else {
            PermissionMode::Ask
        }
    }
}
