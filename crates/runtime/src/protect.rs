//! Protected paths after every command: what the OS sandbox cannot forbid (a `.vscode/` or a
//! nested `.npmrc` that did not exist when it was built; any change under Landlock) is found,
//! undone and reported by [`braincode_sandbox::Sandbox::check_protected`]. This is the run's
//! side of it: when something was changed, one warning is journaled and the run is stopped
//! (status `blocked`), before Braincode itself reads the project again (git, the review diff).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use braincode_sandbox::Sandbox;
use tokio_util::sync::CancellationToken;

use crate::sink::RunSink;

/// How the cancel reason of a run stopped by a protected-path change begins (what tells it
/// from a Ctrl-C).
pub const PROTECTED_CHANGED: &str = "protected paths changed";

/// Checks a run's protected paths and stops the run when something changed them.
pub struct ProtectedWatch {
    sandbox: Arc<Sandbox>,
    sink: RunSink,
    cancel: CancellationToken,
    reason: Arc<OnceLock<String>>,
    /// Whether a change was reported already (the run stops at the first).
    reported: AtomicBool,
}

impl std::fmt::Debug for ProtectedWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtectedWatch")
            .field("sandbox", &self.sandbox.kind())
            .field("reported", &self.reported)
            .finish_non_exhaustive()
    }
}

impl ProtectedWatch {
    /// A watch over the project of `sandbox` that stops the run through `cancel` (with its
    /// reason in `reason`) and journals through `sink`.
    pub fn new(
        sandbox: Arc<Sandbox>,
        sink: RunSink,
        cancel: CancellationToken,
        reason: Arc<OnceLock<String>>,
    ) -> Self {
        // The reference is the project as the run starts, before any command, hook or MCP
        // server of the run could act.
        sandbox.accept_protected();
        Self {
            sandbox,
            sink,
            cancel,
            reason,
            reported: AtomicBool::new(false),
        }
    }

    /// Checks the protected paths after `after` ran (`the shell call …`, `the checks`, `a
    /// hook`). On a change: it is undone, one warning is journaled, the run is cancelled, and
    /// `Err` carries the message for the caller (a tool's output).
    pub async fn check(&self, after: &str) -> Result<(), String> {
        let sandbox = Arc::clone(&self.sandbox);
        // The check walks the project: off the async threads.
        let outcome = tokio::task::spawn_blocking(move || sandbox.check_protected()).await;
        let violation = match outcome {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(violation)) => violation.to_string(),
            Err(join) => format!("the protected-path check failed ({join})"),
        };
        let message = format!("after {after}, {violation}; the run was stopped");
        // A reason set first (a Ctrl-C, a budget) stays; the change is reported either way.
        let _ = self.reason.set(format!("{PROTECTED_CHANGED}: {violation}"));
        if !self.reported.swap(true, Ordering::SeqCst) {
            self.sink.warning(message.clone());
        }
        self.cancel.cancel();
        Err(message)
    }

    /// Takes the protected paths as they are as the reference (after a tool call a person or
    /// the policy approved wrote them).
    pub async fn accept(&self) {
        let sandbox = Arc::clone(&self.sandbox);
        let _ = tokio::task::spawn_blocking(move || sandbox.accept_protected()).await;
    }
}
