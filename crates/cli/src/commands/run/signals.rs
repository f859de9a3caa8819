//! Signals during `braincode run`: SIGINT (Ctrl-C), SIGTERM (`timeout`, CI cancellation,
//! `docker stop`, systemd) and SIGHUP (the terminal went away) all cancel the run the same way
//! — the run stops its commands and hooks with everything they started, writes its report and
//! its `run_error`, and the process exits with 128 + the signal number. A second signal of any
//! of the three quits at once: every process group still registered gets SIGKILL and the
//! process exits without a report.

use std::io::Write;
use std::sync::{Arc, OnceLock};

use braincode_protocol::SessionId;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// A signal that cancels the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: a polite request to stop.
    Terminate,
    /// SIGHUP: the controlling terminal closed.
    Hangup,
}

impl Signal {
    /// The conventional name.
    pub const fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The process exit code of a run it cancelled: 128 + the signal number (130, 143, 129),
    /// as a shell reports a process the signal killed.
    pub const fn exit_code(self) -> i32 {
        // The signal numbers are the same on Linux and macOS.
        128 + match self {
            Signal::Interrupt => 2,
            Signal::Terminate => 15,
            Signal::Hangup => 1,
        }
    }
}

/// Installs the handlers: the first signal sets `reason` and fires `cancel`, a second one
/// kills every registered process group and exits. Returns where the first signal is
/// recorded. Quitting at once names the run's `session` (short id) and how to take it up.
/// Fails (saying which signal) only when a handler cannot be installed.
pub fn cancel_on_signals(
    cancel: CancellationToken,
    reason: Arc<OnceLock<String>>,
    session: Option<SessionId>,
) -> anyhow::Result<Arc<OnceLock<Signal>>> {
    let install = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|err| {
            anyhow::anyhow!("cannot install the {name} handler: {err}; the run was not started")
        })
    };
    let mut interrupt = install(SignalKind::interrupt(), "SIGINT")?;
    let mut terminate = install(SignalKind::terminate(), "SIGTERM")?;
    let mut hangup = install(SignalKind::hangup(), "SIGHUP")?;
    let received = Arc::new(OnceLock::new());
    let first = received.clone();
    tokio::spawn(async move {
        let Some(signal) = next(&mut interrupt, &mut terminate, &mut hangup).await else {
            return;
        };
        let _ = first.set(signal);
        let _ = reason.set(format!("{} received", signal.name()));
        // stderr may be gone after a hangup: never fail (or panic) on it.
        let _ = writeln!(
            std::io::stderr(),
            "\n{} received: cancelling… (send it again to quit immediately)",
            signal.name()
        );
        cancel.cancel();
        if let Some(again) = next(&mut interrupt, &mut terminate, &mut hangup).await {
            braincode_tools::exec::process::kill_all_groups();
            if let Some(session) = &session {
                let _ = writeln!(
                    std::io::stderr(),
                    "{} received again: quit without a report; `braincode run --resume {}` takes the run up",
                    again.name(),
                    session.short()
                );
            }
            std::process::exit(again.exit_code());
        }
    });
    Ok(received)
}

/// The next of the three signals (`None` once no handler can deliver any more).
async fn next(
    interrupt: &mut tokio::signal::unix::Signal,
    terminate: &mut tokio::signal::unix::Signal,
    hangup: &mut tokio::signal::unix::Signal,
) -> Option<Signal> {
    tokio::select! {
        Some(()) = interrupt.recv() => Some(Signal::Interrupt),
        Some(()) = terminate.recv() => Some(Signal::Terminate),
        Some(()) = hangup.recv() => Some(Signal::Hangup),
        else => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal_number() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        assert_eq!(Signal::Hangup.exit_code(), 129);
    }
}
