//! Signalling a child's whole process group: the one kill every crate uses for the commands,
//! hooks and MCP servers it spawned as group leaders (`process_group(0)`).

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// A signal sent to a process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    /// SIGTERM: asks the group to stop.
    Terminate,
    /// SIGKILL: stops it.
    Kill,
}

/// Sends `signal` to every process of group `pgid`. Returns whether the group existed.
///
/// A group id of 0 or 1 (or a negative one) would mean "our own group" or "every process we
/// may signal": those are never signalled.
pub fn signal_group(pgid: i32, signal: GroupSignal) -> bool {
    let Some(pid) = group_pid(pgid) else {
        return false;
    };
    let signal = match signal {
        GroupSignal::Terminate => Signal::TERM,
        GroupSignal::Kill => Signal::KILL,
    };
    kill_process_group(pid, signal).is_ok()
}

/// Whether group `pgid` still has a process we may signal (zombies included: signal 0).
pub fn group_exists(pgid: i32) -> bool {
    group_pid(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

/// The pid of a group we may address, or `None` for 1 and below.
fn group_pid(pgid: i32) -> Option<Pid> {
    if pgid <= 1 {
        return None;
    }
    Pid::from_raw(pgid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_group_and_every_process_are_never_signalled() {
        assert!(!signal_group(0, GroupSignal::Terminate));
        assert!(!signal_group(1, GroupSignal::Kill));
        assert!(!group_exists(0));
        assert!(!group_exists(-1));
    }

    #[test]
    fn a_spawned_group_exists_until_it_is_killed() {
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        let pgid = i32::try_from(child.id()).expect("a pid fits pid_t");
        assert!(group_exists(pgid));
        assert!(signal_group(pgid, GroupSignal::Kill));
        let status = child.wait().expect("wait for sleep");
        assert!(!status.success());
        assert!(!group_exists(pgid));
    }
}
