//! The one system call this crate makes itself: signalling a server's process group.
#![allow(unsafe_code)]

/// Sends `signal` to every process of the group `pgid`. Returns whether the group existed.
pub(crate) fn signal_group(pgid: u32, signal: i32) -> bool {
    // A group id of 0 or 1 (or one that does not fit a pid_t) would mean "our own group" or
    // "every process we may signal": never send those.
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        return false;
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // addresses the process group, which is the server's own (spawned with process_group(0)).
    unsafe { libc::kill(-pgid, signal) == 0 }
}
