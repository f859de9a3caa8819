//! Process-group termination for hooks and other children.

use std::time::Duration;

/// Grace period between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1_000);

/// Sends SIGTERM to the process group led by `pid`, then SIGKILL after [`KILL_GRACE`] if any
/// member is still alive. A missing pid (already reaped) is a no-op.
pub async fn terminate_group(pid: Option<u32>) {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1) else {
        return;
    };
    if signal_group(pid, libc::SIGTERM) {
        let deadline = tokio::time::Instant::now() + KILL_GRACE;
        while tokio::time::Instant::now() < deadline {
            if !signal_group(pid, 0) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        signal_group(pid, libc::SIGKILL);
    }
}

/// Signals every process of group `pgid`; returns whether the group exists.
#[allow(unsafe_code)]
fn signal_group(pgid: i32, signal: i32) -> bool {
    // SAFETY: killpg only reads its two integer arguments; pgid is > 1 (never 0, 1 or a
    // negative value that would address our own group or every process).
    unsafe { libc::killpg(pgid, signal) == 0 }
}
