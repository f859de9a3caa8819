//! Child processes in their own process group: spawning, signalling the whole group, and
//! running a command to completion with a timeout, cancellation and tail-capped output.
//!
//! Every child is a group leader (`process_group(0)`), so a kill reaches whatever it started
//! (`sh -c 'server & worker'`). Killing is SIGTERM to the group, then SIGKILL after
//! [`KILL_GRACE`] if anything in the group is still alive.
//!
//! Every group is owned by a [`ProcessGroup`] guard from the moment its leader is spawned:
//! dropping the guard (a cancelled future, an aborted task, a runtime shutting down) kills
//! the whole group, so no code path can orphan what a command started. Groups that are alive
//! or being killed are listed in a process-wide registry, which [`kill_all_groups`] and
//! [`settle_all_groups`] use when Braincode itself is about to exit.

use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use braincode_sandbox::{GroupSignal, group_exists, signal_group};
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

/// Whether any process of group `pgid` is still running (zombies waiting to be reaped by
/// another parent do not count).
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    match live_group_members(pgid) {
        Some(count) => count > 0,
        None => group_exists(pgid),
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
    if !signal_group(pgid, GroupSignal::Terminate) {
        return;
    }
    let deadline = tokio::time::Instant::now() + KILL_GRACE;
    while tokio::time::Instant::now() < deadline {
        if !group_alive(pgid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal_group(pgid, GroupSignal::Kill);
}

/// SIGTERM now and SIGKILL after [`KILL_GRACE`] from a helper thread, for `Drop` paths that
/// cannot wait. The groups stay in the registry until the escalation is done, so
/// [`settle_all_groups`] still finishes the job if Braincode exits first.
pub fn terminate_group_detached(pgids: Vec<i32>) {
    let pgids: Vec<i32> = pgids
        .into_iter()
        .filter(|pgid| signal_group(*pgid, GroupSignal::Terminate))
        .collect();
    if pgids.is_empty() {
        return;
    }
    for pgid in &pgids {
        registry::add(*pgid);
    }
    let escalation = pgids.clone();
    let spawned = std::thread::Builder::new()
        .name("braincode-kill-escalation".into())
        .spawn(move || {
            let deadline = std::time::Instant::now() + KILL_GRACE;
            while std::time::Instant::now() < deadline
                && escalation.iter().any(|pgid| group_alive(*pgid))
            {
                std::thread::sleep(Duration::from_millis(25));
            }
            for pgid in escalation {
                if group_alive(pgid) {
                    signal_group(pgid, GroupSignal::Kill);
                }
                registry::remove(pgid);
            }
        });
    if spawned.is_err() {
        tracing::warn!("could not start the kill escalation thread; processes got SIGTERM only");
        for pgid in pgids {
            registry::remove(pgid);
        }
    }
}

/// The process-wide list of groups that may still be alive: owned by a live
/// [`ProcessGroup`] or being killed by [`terminate_group_detached`]. Counted, because both
/// may hold the same group for a moment.
mod registry {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    static GROUPS: Mutex<BTreeMap<i32, usize>> = Mutex::new(BTreeMap::new());

    fn with<T>(f: impl FnOnce(&mut BTreeMap<i32, usize>) -> T) -> T {
        match GROUPS.lock() {
            Ok(mut groups) => f(&mut groups),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    pub(super) fn add(pgid: i32) {
        with(|groups| *groups.entry(pgid).or_default() += 1);
    }

    pub(super) fn remove(pgid: i32) {
        with(|groups| {
            if let Some(count) = groups.get_mut(&pgid) {
                *count -= 1;
                if *count == 0 {
                    groups.remove(&pgid);
                }
            }
        });
    }

    pub(super) fn all() -> Vec<i32> {
        with(|groups| groups.keys().copied().collect())
    }
}

/// Process groups Braincode started that may still be alive (owned by a [`ProcessGroup`] or
/// being killed), for diagnostics and tests.
pub fn registered_groups() -> Vec<i32> {
    registry::all()
}

/// SIGKILL to every registered group, now, without waiting: for a process that is about to
/// exit at once (a second Ctrl-C).
pub fn kill_all_groups() {
    for pgid in registry::all() {
        signal_group(pgid, GroupSignal::Kill);
    }
}

/// Blocks until every registered group is gone: SIGTERM to each, then SIGKILL to what is
/// still alive after [`KILL_GRACE`]. For the end of a process (after the report is out), so
/// that nothing Braincode started outlives it even when a guard's escalation thread has not
/// run yet. Returns at once when nothing is registered.
pub fn settle_all_groups() {
    let groups = registry::all();
    if groups.is_empty() {
        return;
    }
    let alive: Vec<i32> = groups
        .into_iter()
        .filter(|pgid| group_alive(*pgid) && signal_group(*pgid, GroupSignal::Terminate))
        .collect();
    let deadline = std::time::Instant::now() + KILL_GRACE;
    while std::time::Instant::now() < deadline && alive.iter().any(|pgid| group_alive(*pgid)) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pgid in alive {
        if group_alive(pgid) {
            signal_group(pgid, GroupSignal::Kill);
        }
    }
}

/// Owns one child's process group from spawn to death: dropping it kills the whole group
/// (SIGTERM, then SIGKILL after [`KILL_GRACE`], from a helper thread) unless the group was
/// already seen gone. Create it right after `spawn`, before any `.await`, so that a future
/// dropped anywhere later cannot leave the group running.
///
/// The group id stays safe to signal while the leader is unreaped or any member lives (the
/// kernel does not reuse an id that is still a group's); [`ProcessGroup::release`] disarms
/// the guard once the group is gone, before its id could be reused.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: i32,
    armed: bool,
}

impl ProcessGroup {
    /// Takes ownership of the group led by `pid` (a child spawned with `process_group(0)`);
    /// `None` when the child has no pid (it already exited and was reaped).
    pub fn adopt(pid: Option<u32>) -> Option<ProcessGroup> {
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 1)?;
        registry::add(pgid);
        Some(ProcessGroup { pgid, armed: true })
    }

    /// The group id (the leader's pid).
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// Kills the group now (SIGTERM, SIGKILL after [`KILL_GRACE`]) and waits for it.
    pub async fn terminate(&mut self) {
        if self.armed {
            terminate_group(self.pgid).await;
            self.release();
        }
    }

    /// Disarms the guard when nothing of the group is alive any more; a group with live
    /// members stays owned (and is killed on drop).
    pub fn release(&mut self) {
        if self.armed && !group_alive(self.pgid) {
            self.armed = false;
            registry::remove(self.pgid);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        if self.armed {
            terminate_group_detached(vec![self.pgid]);
            registry::remove(self.pgid);
        }
    }
}

/// A command running `program args…` in `cwd`: inside `sandbox` when there is one, plain
/// otherwise (then a person approved it). Either way no credential variable of Braincode's
/// environment reaches it.
pub fn confined_command(
    sandbox: Option<&braincode_sandbox::Sandbox>,
    program: &str,
    args: &[&str],
    cwd: &Path,
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
            // No sandbox to tie it to Braincode's life: the kernel kills it if we die.
            braincode_sandbox::die_with_parent(&mut command);
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

/// Reads `reader` to its end (or first error) on a task of its own, handing each chunk to
/// `take`: the one reading loop behind a command's tail buffers and an exec session's output.
pub(crate) fn pump_chunks<R>(
    mut reader: R,
    mut take: impl FnMut(&[u8]) + Send + 'static,
) -> JoinHandle<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => take(&chunk[..read]),
            }
        }
    })
}

fn pump<R>(reader: R, buffer: Arc<Mutex<TailBuffer>>) -> JoinHandle<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    pump_chunks(reader, move |chunk| {
        if let Ok(mut buffer) = buffer.lock() {
            buffer.push(chunk);
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
    let mut group = ProcessGroup::adopt(child.id());
    let pgid = group.as_ref().map_or(0, ProcessGroup::pgid);
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
            if let Some(group) = group.as_mut() {
                group.terminate().await;
            }
            child.wait().await.ok()
        }
        () = cancel.cancelled() => {
            cancelled = true;
            if let Some(group) = group.as_mut() {
                group.terminate().await;
            }
            child.wait().await.ok()
        }
    };
    drain(pgid, readers).await;
    if let Some(group) = group.as_mut() {
        group.release();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `sleep` duration no other process uses: found in `/proc` by that exact argument.
    fn marker() -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        format!("{}7.{nanos:09}", 10_000 + std::process::id() % 80_000)
    }

    /// Live processes with an argument equal to `marker`.
    fn live_with_arg(marker: &str) -> usize {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return 0;
        };
        entries
            .flatten()
            .filter(|entry| {
                let pid = entry.file_name().to_string_lossy().to_string();
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let state = stat
                    .rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().next().map(str::to_string));
                cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes())
                    && !matches!(state.as_deref(), Some("Z" | "X") | None)
            })
            .count()
    }

    async fn until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !done() {
            assert!(tokio::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_a_running_command_kills_its_whole_group() {
        let marker = marker();
        let script = format!("sleep {marker} & sleep {marker}");
        let command = confined_command(None, "sh", &["-c", &script], Path::new("/"));
        let running = tokio::spawn(async move {
            run_captured(
                command,
                Duration::from_secs(600),
                &CancellationToken::new(),
                1_000,
            )
            .await
        });
        until("the command never started", || live_with_arg(&marker) == 2).await;
        running.abort();
        assert!(running.await.is_err_and(|e| e.is_cancelled()));
        until("a process of the dropped command's group survived", || {
            live_with_arg(&marker) == 0
        })
        .await;
    }

    #[test]
    fn an_unsandboxed_child_dies_with_the_thread_that_spawned_it() {
        let marker = marker();
        let spawner = std::thread::spawn(move || {
            confined_command(None, "sleep", &[&marker], Path::new("/"))
                .into_std()
                .spawn()
                .unwrap()
        });
        // The spawning thread has exited: the kernel sends the child SIGKILL.
        let mut child = spawner.join().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the child outlived the thread that spawned it"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(rustix::process::Signal::KILL.as_raw())
        );
    }
}
