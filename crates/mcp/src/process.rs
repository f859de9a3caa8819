//! A stdio server's process: spawned in its own process group, its exit watched, its stderr
//! kept in a small ring buffer, and the whole group killed when we are done with it.

use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::McpError;
use braincode_sandbox::{GroupSignal, signal_group};

/// Bytes of stderr kept per server.
const STDERR_KEEP: usize = 4_000;
/// Characters of stderr quoted in an error.
const TAIL_CHARS: usize = 400;
/// How long a closed transport waits for the process to exit before calling it a protocol
/// failure rather than an exit.
pub(crate) const EXIT_GRACE: Duration = Duration::from_millis(500);
/// After an exit, how long to wait for the last stderr bytes to be read.
const STDERR_DRAIN: Duration = Duration::from_millis(300);
/// Between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitInfo {
    pub(crate) code: Option<i32>,
    pub(crate) signal: Option<i32>,
}

/// The last bytes a server wrote to stderr, and whether its stderr is closed.
#[derive(Default)]
struct StderrRing {
    bytes: Mutex<VecDeque<u8>>,
}

impl StderrRing {
    fn push(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        let chunk = &chunk[chunk.len().saturating_sub(STDERR_KEEP)..];
        let overflow = (bytes.len() + chunk.len()).saturating_sub(STDERR_KEEP);
        let drop_front = overflow.min(bytes.len());
        bytes.drain(..drop_front);
        bytes.extend(chunk);
    }

    fn tail(&self) -> String {
        let bytes: Vec<u8> = {
            let guard = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
            guard.iter().copied().collect()
        };
        tail_of(&String::from_utf8_lossy(&bytes))
    }
}

/// The last [`TAIL_CHARS`] characters of `text`, trimmed, marked `…` when cut.
fn tail_of(text: &str) -> String {
    let text = text.trim();
    let count = text.chars().count();
    if count <= TAIL_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().skip(count - TAIL_CHARS).collect();
    format!("…{}", cut.trim_start())
}

/// What the hub may keep of a process to learn about its death: its exit and its stderr.
#[derive(Clone)]
pub(crate) struct ExitWatch {
    exit: watch::Receiver<Option<ExitInfo>>,
    stderr: Arc<StderrRing>,
    stderr_closed: watch::Receiver<bool>,
}

impl ExitWatch {
    /// The exit, if the process has exited.
    pub(crate) fn status(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Waits until the process exits.
    pub(crate) async fn exited(&self) -> ExitInfo {
        let mut exit = self.exit.clone();
        let seen = exit.wait_for(Option::is_some).await.ok().and_then(|v| *v);
        // The sender is dropped only after it sent the exit; `None` cannot happen but is
        // treated as "unknown exit".
        seen.unwrap_or(ExitInfo {
            code: None,
            signal: None,
        })
    }

    /// Waits up to `max` for the process to exit.
    pub(crate) async fn exited_within(&self, max: Duration) -> Option<ExitInfo> {
        tokio::time::timeout(max, self.exited()).await.ok()
    }

    /// The last lines of stderr, as they are now.
    pub(crate) fn stderr_tail(&self) -> String {
        self.stderr.tail()
    }

    /// [`McpError::Exited`] for this exit, once the last stderr bytes are read.
    pub(crate) async fn exit_error(&self, exit: ExitInfo) -> McpError {
        let mut closed = self.stderr_closed.clone();
        let _ = tokio::time::timeout(STDERR_DRAIN, closed.wait_for(|closed| *closed)).await;
        McpError::Exited {
            code: exit.code,
            signal: exit.signal,
            stderr_tail: self.stderr_tail(),
        }
    }
}

/// A running stdio server. Dropping it kills its process group.
pub(crate) struct ChildProcess {
    pid: u32,
    watch: ExitWatch,
    /// Set once the group got its SIGKILL: nothing more to do on drop.
    reaped_group: AtomicBool,
}

/// The pipes of a spawned server.
pub(crate) type Pipes = (ChildStdout, ChildStdin);

/// Spawns `command` with piped stdio in its own process group, and starts watching it.
pub(crate) fn spawn(
    command: std::process::Command,
    display: &str,
) -> Result<(ChildProcess, Pipes), McpError> {
    let mut command = tokio::process::Command::from(command);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawn_error = |message: String| McpError::Spawn {
        command: display.to_string(),
        message,
    };
    let mut child = command.spawn().map_err(|e| spawn_error(e.to_string()))?;
    let pipes = (child.stdout.take(), child.stdin.take(), child.stderr.take());
    let (Some(stdout), Some(stdin), Some(stderr), Some(pid)) =
        (pipes.0, pipes.1, pipes.2, child.id())
    else {
        // Only possible if the OS lost a pipe; the child is killed on drop.
        return Err(spawn_error(
            "the process came up without its stdio pipes".into(),
        ));
    };

    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let exit = match child.wait().await {
            Ok(status) => ExitInfo {
                code: status.code(),
                signal: status.signal(),
            },
            Err(_) => ExitInfo {
                code: None,
                signal: None,
            },
        };
        let _ = exit_tx.send(Some(exit));
    });

    let stderr_ring = Arc::new(StderrRing::default());
    let (closed_tx, closed_rx) = watch::channel(false);
    tokio::spawn(read_stderr(stderr, Arc::clone(&stderr_ring), closed_tx));

    let process = ChildProcess {
        pid,
        watch: ExitWatch {
            exit: exit_rx,
            stderr: stderr_ring,
            stderr_closed: closed_rx,
        },
        reaped_group: AtomicBool::new(false),
    };
    Ok((process, (stdout, stdin)))
}

async fn read_stderr(mut stderr: ChildStderr, ring: Arc<StderrRing>, closed: watch::Sender<bool>) {
    let mut chunk = [0u8; 1024];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => ring.push(&chunk[..n]),
        }
    }
    let _ = closed.send(true);
}

impl ChildProcess {
    /// The process id, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Its process group (it leads its own). A pid beyond `pid_t` becomes 0, which is never
    /// signalled.
    fn pgid(&self) -> i32 {
        i32::try_from(self.pid).unwrap_or(0)
    }

    /// Its exit and stderr.
    pub(crate) fn watch(&self) -> &ExitWatch {
        &self.watch
    }

    /// SIGTERM to the group, up to a second for the leader to exit, then SIGKILL to the
    /// group (whatever it left behind), and a short wait for the leader to be reaped.
    pub(crate) async fn terminate(&self) {
        if self.watch.status().is_none() {
            signal_group(self.pgid(), GroupSignal::Terminate);
            let _ = self.watch.exited_within(TERM_GRACE).await;
        }
        self.kill_group();
        let _ = self.watch.exited_within(TERM_GRACE).await;
    }

    /// SIGKILL to the whole group, once.
    pub(crate) fn kill_group(&self) {
        if !self.reaped_group.swap(true, Ordering::AcqRel) {
            signal_group(self.pgid(), GroupSignal::Kill);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // No server outlives its connection: whatever was not stopped is killed now.
        self.kill_group();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_last_bytes() {
        let ring = StderrRing::default();
        for _ in 0..100 {
            ring.push(&[b'a'; 100]);
        }
        ring.push(b"the end\n");
        let bytes = ring.bytes.lock().map(|b| b.len()).unwrap_or_default();
        assert_eq!(bytes, STDERR_KEEP);
        let tail = ring.tail();
        assert!(tail.ends_with("the end"), "{tail}");
        assert!(tail.starts_with('…'), "{tail}");
        assert_eq!(tail.chars().count(), TAIL_CHARS + 1);
    }

    #[test]
    fn ring_takes_a_huge_chunk() {
        let ring = StderrRing::default();
        ring.push(&vec![b'x'; STDERR_KEEP * 3]);
        assert_eq!(
            ring.bytes.lock().map(|b| b.len()).unwrap_or_default(),
            STDERR_KEEP
        );
    }

    #[test]
    fn tail_of_short_text_is_trimmed() {
        assert_eq!(tail_of("  boom\n\n"), "boom");
        assert_eq!(tail_of(""), "");
    }

    #[test]
    fn tail_survives_broken_utf8() {
        let ring = StderrRing::default();
        ring.push(&[0xff, 0xfe, b'o', b'k']);
        assert!(ring.tail().ends_with("ok"));
    }
}
