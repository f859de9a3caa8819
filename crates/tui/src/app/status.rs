//! The status line's model: what the bottom row of the screen says about the session.

use braincode_protocol::{Mode, Role};

/// Everything the status line shows; built by [`crate::app::App::status_line`].
#[derive(Debug, Clone, PartialEq)]
pub struct StatusLine {
    /// Brain name (from the latest `run_start`, else the configured one).
    pub brain: Option<String>,
    /// The Brain's mode.
    pub mode: Option<Mode>,
    /// Permission mode (`default`, `acceptEdits`, `bypassPermissions`).
    pub permission: String,
    /// Models of the roles at work (running workers; when idle, the last primary).
    pub models: Vec<(Role, String)>,
    /// Tokens used by every run of the session so far.
    pub tokens: u64,
    /// Cost so far, when a price is known.
    pub cost: Option<f64>,
    /// Session id.
    pub session_id: String,
    /// Sandbox state, as given at construction (`landlock`, `seatbelt`, `off`, …).
    pub sandbox: String,
    /// Whether a run is going.
    pub running: bool,
}
