//! The raw Linux syscalls of the sandbox: the only module allowed to use `unsafe`.
//!
//! The child-side setup runs in a `pre_exec` closure, between `fork` and `exec` of a possibly
//! multi-threaded parent. It therefore only makes async-signal-safe syscalls and never
//! allocates: everything it needs (ruleset fd, BPF instructions, fds to pass) is prepared in
//! the parent and moved into the closure.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::Arc;

use libc::sock_filter;

const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
const PR_CAPBSET_DROP: libc::c_int = 24;
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// Capability numbers go up to 40 today; dropping a few beyond the kernel's last is harmless
/// (`EINVAL`, ignored).
const CAP_PROBE_LIMIT: libc::c_ulong = 64;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Whether this process runs as root (then children must shed root's capabilities, or they
/// keep powers such as `CAP_SYS_ADMIN` that bypass Landlock's `/proc` protections).
pub(crate) fn running_as_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The Landlock ABI version of the running kernel; 0 or negative when Landlock is missing
/// (`-ENOSYS`) or disabled at boot (`-EOPNOTSUPP`).
pub(crate) fn landlock_abi() -> i32 {
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, the syscall only
    // returns a number; it reads and writes no memory of ours.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 {
        -io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOSYS)
    } else {
        i32::try_from(ret).unwrap_or(i32::MAX)
    }
}

/// A sealed, close-on-exec memfd holding `data`, positioned at its start.
pub(crate) fn sealed_memfd(name: &CStr, data: &[u8]) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let raw =
        unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a freshly created fd that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut file = File::from(fd);
    file.write_all(data)?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on an fd we own, with integer arguments only.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: lseek on an fd we own, with integer arguments only.
    if unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_SET) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(OwnedFd::from(file))
}

/// What the child does between `fork` and `exec`.
pub(crate) struct ChildSetup {
    /// This process's pid: the child must still be its child after arming the death signal.
    pub parent_pid: libc::pid_t,
    /// An fd the child must inherit (bubblewrap's seccomp program), rewound to its start.
    pub pass_fd: Option<OwnedFd>,
    /// A Landlock ruleset to enforce on the child.
    pub landlock: Option<Arc<OwnedFd>>,
    /// A seccomp filter to install on the child itself.
    pub seccomp: Option<Arc<[sock_filter]>>,
    /// An errno to fail the spawn with, when the parent could not prepare the setup.
    pub fail: Option<i32>,
    /// Drop every capability (bounding, ambient, effective, permitted, inheritable) so that a
    /// root child and whatever it executes run without privileges.
    pub drop_capabilities: bool,
    /// Parent-side state that must live as long as the command (e.g. a private temp dir).
    pub keep_alive: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl ChildSetup {
    /// A setup that only arms the death signal.
    pub(crate) fn new() -> Self {
        Self {
            parent_pid: libc::pid_t::try_from(std::process::id()).unwrap_or(0),
            pass_fd: None,
            landlock: None,
            seccomp: None,
            fail: None,
            drop_capabilities: false,
            keep_alive: None,
        }
    }

    /// The fd number the child will see for `pass_fd`.
    pub(crate) fn pass_fd_number(&self) -> Option<RawFd> {
        self.pass_fd.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Runs in the forked child: async-signal-safe syscalls only, no allocation
    /// (`io::Error::from_raw_os_error` / `last_os_error` do not allocate).
    fn run_in_child(&self) -> io::Result<()> {
        if let Some(code) = self.fail {
            return Err(io::Error::from_raw_os_error(code));
        }
        // SAFETY: prctl with integer arguments; affects only this (child) process.
        if unsafe {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            )
        } != 0
        {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid has no arguments and cannot fail.
        if unsafe { libc::getppid() } != self.parent_pid {
            // The parent died before the death signal was armed.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(fd) = &self.pass_fd {
            let fd = fd.as_raw_fd();
            // SAFETY: fcntl/lseek on an fd this closure owns, integer arguments only. Clearing
            // FD_CLOEXEC in the child lets exactly this child's exec inherit it.
            if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: as above.
            if unsafe { libc::lseek(fd, 0, libc::SEEK_SET) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if self.drop_capabilities {
            drop_all_capabilities()?;
        }
        if self.landlock.is_none() && self.seccomp.is_none() {
            return Ok(());
        }
        // SAFETY: prctl with integer arguments; required before unprivileged Landlock and
        // seccomp, and keeps setuid binaries from regaining privileges.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(ruleset) = &self.landlock {
            // SAFETY: landlock_restrict_self takes a ruleset fd (owned by the Arc, alive for
            // the whole call) and integer flags; it reads no memory of ours.
            let ret = unsafe {
                libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32)
            };
            if ret != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(filter) = &self.seccomp {
            let Ok(len) = libc::c_ushort::try_from(filter.len()) else {
                return Err(io::Error::from_raw_os_error(libc::E2BIG));
            };
            let program = libc::sock_fprog {
                len,
                filter: filter.as_ptr().cast_mut(),
            };
            // SAFETY: `program` points at `len` instructions owned by the Arc, which outlives
            // the call; the kernel copies them and does not write through the pointer.
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0u32,
                    &program as *const libc::sock_fprog,
                )
            };
            if ret != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Empties the bounding and ambient sets (so `execve` grants root nothing) and the current
/// sets. Async-signal-safe: prctl and capset with stack data only.
fn drop_all_capabilities() -> io::Result<()> {
    for cap in 0..CAP_PROBE_LIMIT {
        // SAFETY: prctl with integer arguments; affects only this (child) process.
        if unsafe { libc::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINVAL) {
                return Err(err);
            }
        }
    }
    // SAFETY: prctl with integer arguments. Fails with EINVAL on kernels without ambient
    // capabilities (< 4.3), which have nothing to clear.
    let _ = unsafe { libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) };
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads one header and two data structs (version 3 layout), both alive on
    // this stack frame for the whole call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `command` run `setup` in the child before exec.
///
/// The death signal is tied to the *thread* that spawns the command: if that thread exits
/// while the child runs, the child is killed (`PR_SET_PDEATHSIG` semantics). Spawn from a
/// long-lived thread (a runtime worker or the main thread), not from a short-lived one.
pub(crate) fn install(command: &mut Command, setup: ChildSetup) {
    // SAFETY: the closure only calls async-signal-safe syscalls and does not allocate (see
    // `ChildSetup::run_in_child`); everything it touches was prepared before the fork.
    unsafe {
        command.pre_exec(move || setup.run_in_child());
    }
}

/// Arms `PR_SET_PDEATHSIG(SIGKILL)` on the child `command` starts (and checks, after arming,
/// that the parent is still alive), with no other confinement. The signal fires when the
/// thread that spawns the command exits: spawn from a long-lived thread.
pub(crate) fn install_die_with_parent(command: &mut Command) {
    install(command, ChildSetup::new());
}
