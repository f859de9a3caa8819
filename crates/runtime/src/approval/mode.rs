//! The permission mode of a run: how much it may change without asking.

/// How much a run may change, chosen on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PermissionMode {
    /// Only read tools are offered (the default).
    #[default]
    ReadOnly,
    /// Read and edit tools are offered; file edits are approved by the runtime.
    AllowEdits,
    /// Every tool is offered; every call is approved except permission-policy denials.
    Yes,
}

impl PermissionMode {
    /// Parses the name [`as_str`](Self::as_str) gives.
    pub fn from_name(name: &str) -> Option<PermissionMode> {
        [
            PermissionMode::ReadOnly,
            PermissionMode::AllowEdits,
            PermissionMode::Yes,
        ]
        .into_iter()
        .find(|mode| mode.as_str() == name)
    }

    /// The hook/payload name of the mode.
    pub const fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "default",
            PermissionMode::AllowEdits => "acceptEdits",
            PermissionMode::Yes => "bypassPermissions",
        }
    }
}
