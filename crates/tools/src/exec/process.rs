//! Child processes in their own process group: spawning, signalling the whole group, and
//! running a command to completion with a timeout, cancellation and tail-capped output.
//!
//! Every child is a group leader (`process_group(0)`), so a kill reaches whatever it started
//! (`sh -c 'server & worker'`). Killing is SIGTERM to the group, then SIGKILL after
//! [`KILL_GRACE`] if anything in the group is still alive.

use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::text::TailBuffer;

/// Time between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_millis(1_000);
/// How long output pipes may stay open after the main process exited before whatever still
/// holds them (a process left in the background) is stopped.
pub const DRAIN_GRACE: Duration = Duration::from_millis(1_000);

/// Sends `signal` to every process of group `pgid`. Returns whether the group existed.
#[allow(unsafe_code)]
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: killpg only reads its two integer arguments and has no memory-safety
    // preconditions; pgid > 1 rules out signalling our own group (0) or every process (-1).
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether any process of group `pgid` is still running (zombies waiting to be reaped by
/// another parent do not count).
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    match live_group_members(pgid) {
        Some(count) => count > 0,
        None => signal_group(pgid, 0),
    }
}

/// Processes of group `pgid` that are not zombies, from `/proc` (None where it is missing).
pub fn live_group_members(pgid: i32) -> Option<usize> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut count = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(after_comm) = stat.rfind(')').map(|index| &stat[index + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        let (Some(state), Some(pgrp)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if pgrp.parse::<i32>().ok() == Some(pgid) && *state != "Z" && *state != "X" {
            count += 1;
        }
    }
    Some(count)
}

/// SIGTERM to the group, then SIGKILL after [`KILL_GRACE`] if anything survived.
pub async fn terminate_group(pgid: i32) {
    if !signal_group(pgid, libc::SIGTERM) {
        return;
    }
    let deadline = tokio::time::Instant::now() + KILL_GRACE;
    while tokio::time::Instant::now() < deadline {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal_group(pgid, libc::SIGKILL);
}

/// SIGTERM now and SIGKILL after [`KILL_GRACE`] from a helper thread, for `Drop` paths that
/// cannot wait.
pub fn terminate_group_detached(pgids: Vec<i32>) {
    let pgids: Vec<i32> = pgids
        .into_iter()
        .filter(|pgid| signal_group(*pgid, libc::SIGTERM))
        .collect();
    if pgids.is_empty() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("braincode-kill-escalation".into())
        .spawn(move || {
            std::thread::sleep(KILL_GRACE);
            for pgid in pgids {
                if group_alive(pgid) {
                    signal_group(pgid, libc::SIGKILL);
                }
            }
        });
    if spawned.is_err() {
        tracing::warn!("could not start the kill escalation thread; processes got SIGTERM only");
    }
}

/// A command running `program args…` in `cwd`: inside `sandbox` when there is one, plain
/// otherwise (then a person approved it). Either way no credential variable of Braincode's
/// environment reaches it.
pub fn confined_command(
    sandbox: Option<&braincode_sandbox::Sandbox>,
    program: &str,
    args: &[&str],
    cwd: &std::path::Path,
) -> Command {
    let std_command = match sandbox {
        Some(sandbox) => {
            let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
            sandbox.command(program.as_ref(), &args, cwd)
        }
        None => {
            let mut command = std::process::Command::new(program);
            command.args(args).current_dir(cwd);
            braincode_sandbox::scrub_secret_env(&mut command);
            command
        }
    };
    Command::from(std_command)
}

/// Configures a command as a group leader with the environment tools expect (no pagers).
pub fn prepare(command: &mut Command) {
    command
        .process_group(0)
        .kill_on_drop(true)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExitInfo {
    /// Exit code, when it exited normally.
    pub code: Option<i32>,
    /// Signal that ended it.
    pub signal: Option<i32>,
}

impl ExitInfo {
    /// From a std exit status.
    pub fn from_status(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        Self {
            code: status.code(),
            signal: status.signal(),
        }
    }

    /// `exit code 0` / `killed by signal 9`.
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "exit status unknown".to_string(),
        }
    }
}

/// A finished run.
#[derive(Debug)]
pub struct RunOutcome {
    /// How it ended (`None` if waiting failed).
    pub exit: Option<ExitInfo>,
    /// stdout tail.
    pub stdout: TailBuffer,
    /// stderr tail.
    pub stderr: TailBuffer,
    /// Killed because the timeout expired.
    pub timed_out: bool,
    /// Killed because the run was cancelled.
    pub cancelled: bool,
}

fn pump<R>(mut reader: R, buffer: Arc<Mutex<TailBuffer>>) -> JoinHandle<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => {
                    if let Ok(mut buffer) = buffer.lock() {
                        buffer.push(&chunk[..read]);
                    }
                }
            }
        }
    })
}

/// Waits for output readers; if something left in the group keeps the pipes open, stops the
/// group and waits again.
pub async fn drain(pgid: i32, readers: Vec<JoinHandle<()>>) {
    let mut readers = readers;
    let all = async {
        for reader in readers.iter_mut() {
            let _ = reader.await;
        }
    };
    if tokio::time::timeout(DRAIN_GRACE, all).await.is_err() {
        terminate_group(pgid).await;
        for reader in readers {
            let _ = tokio::time::timeout(KILL_GRACE * 2, reader).await;
        }
    }
    if group_alive(pgid) {
        terminate_group(pgid).await;
    }
}

/// Runs a prepared command (stdin closed) to completion with a timeout and cancellation,
/// keeping the last `max_bytes` of stdout and of stderr.
pub async fn run_captured(
    mut command: Command,
    timeout: Duration,
    cancel: &CancellationToken,
    max_bytes: usize,
) -> std::io::Result<RunOutcome> {
    prepare(&mut command);
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child: Child = command.spawn()?;
    let pgid = child.id().map_or(0, |id| i32::try_from(id).unwrap_or(0));
    let stdout = Arc::new(Mutex::new(TailBuffer::new(max_bytes)));
    let stderr = Arc::new(Mutex::new(TailBuffer::new(max_bytes)));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(pump(out, stdout.clone()));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(pump(err, stderr.clone()));
    }
    let (mut timed_out, mut cancelled) = (false, false);
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = tokio::time::sleep(timeout) => {
            timed_out = true;
            terminate_group(pgid).await;
            child.wait().await.ok()
        }
        () = cancel.cancelled() => {
            cancelled = true;
            terminate_group(pgid).await;
            child.wait().await.ok()
        }
    };
    drain(pgid, readers).await;
    let take = |buffer: Arc<Mutex<TailBuffer>>| {
        buffer
            .lock()
            .map(|b| b.clone())
            .unwrap_or_else(|_| TailBuffer::new(1))
    };
    Ok(RunOutcome {
        exit: status.map(ExitInfo::from_status),
        stdout: take(stdout),
        stderr: take(stderr),
        timed_out,
        cancelled,
    })
}

/// Formats a finished run the way `shell` and `run_script` report it.
pub fn format_outcome(display: &str, outcome: &RunOutcome, timeout: Duration) -> String {
    let mut status = match outcome.exit {
        Some(exit) => exit.describe(),
        None => "exit status unknown".to_string(),
    };
    if outcome.timed_out {
        status.push_str(&format!(" (timed out after {} ms)", timeout.as_millis()));
    }
    if outcome.cancelled {
        status.push_str(" (cancelled)");
    }
    let stdout = outcome.stdout.to_text();
    let stderr = outcome.stderr.to_text();
    let mut text = format!("$ {display}\n{status}\n");
    text.push_str("stdout:\n");
    text.push_str(if stdout.is_empty() {
        "(empty)"
    } else {
        &stdout
    });
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("stderr:\n");
    text.push_str(if stderr.is_empty() {
        "(empty)"
    } else {
        &stderr
    });
    text
}
