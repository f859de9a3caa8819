//! The seccomp-BPF filter shared by both Linux backends, built in the parent process.
//!
//! The filter is a deny-list written as raw classic BPF rather than through `seccompiler` or
//! `libseccomp`: it is about sixty instructions, it must check the architecture and reject the
//! x32 syscall range itself, it compares only the low 32 bits of `int` arguments (what the
//! kernel looks at), and the same bytes go both to `bwrap --seccomp FD` and to `seccomp(2)`.
//! A small hand-written program keeps all of that visible and avoids a C library or a
//! dependency; the unit tests below run it through an interpreter.
//!
//! Everything not listed is allowed. Denied: debugging other processes (`ptrace`,
//! `process_vm_*`), kernel keyrings, `bpf`, `perf_event_open`, loading kernels or modules,
//! every mount and namespace syscall (bubblewrap has finished mounting when the filter is
//! applied), `clone` with namespace flags, `clone3` (its flags cannot be inspected; returns
//! `ENOSYS` so libc falls back to `clone`), `io_uring` (which can open sockets behind the
//! filter's back), `userfaultfd`, `open_by_handle_at`, `ioctl(TIOCSTI/TIOCLINUX)` (typing into
//! the user's terminal), and sockets of families outside the [`SocketRule`].

use libc::sock_filter;

/// Which socket families a sandboxed command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketRule {
    /// Network allowed: every family.
    Any,
    /// No network: `AF_UNIX` only.
    UnixOnly,
    /// Inside bubblewrap's empty network namespace: `AF_UNIX`, `AF_INET` and `AF_INET6`, so a
    /// project's tests can use the namespace's private loopback; nothing leaves the namespace.
    UnixAndInet,
}

const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

const RET_ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
const RET_KILL_PROCESS: u32 = 0x8000_0000; // SECCOMP_RET_KILL_PROCESS
const RET_ERRNO: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO

// Offsets into `struct seccomp_data { int nr; u32 arch; u64 ip; u64 args[6]; }`.
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
#[cfg(target_endian = "little")]
const fn arg_low(index: u32) -> u32 {
    16 + 8 * index
}
#[cfg(target_endian = "big")]
const fn arg_low(index: u32) -> u32 {
    16 + 8 * index + 4
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64

/// x32 syscalls share the x86-64 audit arch and set this bit in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;

/// `CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
/// CLONE_NEWNET | CLONE_NEWTIME`.
const CLONE_NAMESPACE_FLAGS: u32 = 0x0002_0000
    | 0x0200_0000
    | 0x0400_0000
    | 0x0800_0000
    | 0x1000_0000
    | 0x2000_0000
    | 0x4000_0000
    | 0x80;

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn denied_syscalls() -> Vec<libc::c_long> {
    let mut list = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_open_by_handle_at,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
    ];
    #[cfg(target_arch = "x86_64")]
    list.extend([libc::SYS_iopl, libc::SYS_ioperm, libc::SYS_uselib]);
    list
}

/// A compiled filter for the running architecture.
#[derive(Debug, Clone)]
pub(crate) struct SeccompProgram {
    filter: Vec<sock_filter>,
}

const fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

const fn errno(code: i32) -> u32 {
    RET_ERRNO | (code as u32 & 0xffff)
}

/// Syscall numbers are small non-negative values; anything else cannot match a real syscall.
fn nr(value: libc::c_long) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

impl SeccompProgram {
    /// Builds the filter, or `None` on an architecture this crate has no syscall table for.
    pub(crate) fn build(sockets: SocketRule) -> Option<Self> {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            Some(Self {
                filter: build_filter(sockets),
            })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = sockets;
            None
        }
    }

    /// The instructions, for `seccomp(SECCOMP_SET_MODE_FILTER)`.
    pub(crate) fn instructions(&self) -> &[sock_filter] {
        &self.filter
    }

    /// The instructions as the raw bytes `bwrap --seccomp FD` reads.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.filter.len() * 8);
        for insn in &self.filter {
            bytes.extend_from_slice(&insn.code.to_ne_bytes());
            bytes.push(insn.jt);
            bytes.push(insn.jf);
            bytes.extend_from_slice(&insn.k.to_ne_bytes());
        }
        bytes
    }
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn build_filter(sockets: SocketRule) -> Vec<sock_filter> {
    let eperm = errno(libc::EPERM);
    let mut f = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, RET_KILL_PROCESS),
        stmt(LD_W_ABS, OFF_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    f.extend([
        jump(JGE_K, X32_SYSCALL_BIT, 0, 1),
        stmt(RET_K, errno(libc::ENOSYS)),
    ]);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = JGE_K;
    for sys in denied_syscalls() {
        f.extend([jump(JEQ_K, nr(sys), 0, 1), stmt(RET_K, eperm)]);
    }
    // clone3 hides its flags in memory: make libc fall back to clone, whose flags we can see.
    f.extend([
        jump(JEQ_K, nr(libc::SYS_clone3), 0, 1),
        stmt(RET_K, errno(libc::ENOSYS)),
    ]);
    f.extend([
        jump(JEQ_K, nr(libc::SYS_clone), 0, 4),
        stmt(LD_W_ABS, arg_low(0)),
        jump(JSET_K, CLONE_NAMESPACE_FLAGS, 0, 1),
        stmt(RET_K, eperm),
        stmt(RET_K, RET_ALLOW),
    ]);
    f.extend([
        jump(JEQ_K, nr(libc::SYS_ioctl), 0, 5),
        stmt(LD_W_ABS, arg_low(1)),
        jump(JEQ_K, TIOCSTI, 2, 0),
        jump(JEQ_K, TIOCLINUX, 1, 0),
        stmt(RET_K, RET_ALLOW),
        stmt(RET_K, eperm),
    ]);
    let families: &[i32] = match sockets {
        SocketRule::Any => &[],
        SocketRule::UnixOnly => &[libc::AF_UNIX],
        SocketRule::UnixAndInet => &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6],
    };
    if sockets != SocketRule::Any {
        let m = families.len();
        // ld + one jeq per family + deny + allow; `m` is at most 3, so the casts cannot wrap.
        f.push(jump(JEQ_K, nr(libc::SYS_socket), 0, (m + 3) as u8));
        f.push(stmt(LD_W_ABS, arg_low(0)));
        for (i, family) in families.iter().enumerate() {
            f.push(jump(JEQ_K, *family as u32, (m - i) as u8, 0));
        }
        f.push(stmt(RET_K, errno(libc::EACCES)));
        f.push(stmt(RET_K, RET_ALLOW));
    }
    f.push(stmt(RET_K, RET_ALLOW));
    f
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::*;

    /// Runs the subset of classic BPF the filter uses against one syscall.
    fn run(filter: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = Vec::with_capacity(64);
        data.extend_from_slice(&nr.to_ne_bytes());
        data.extend_from_slice(&arch.to_ne_bytes());
        data.extend_from_slice(&0u64.to_ne_bytes());
        for arg in args {
            data.extend_from_slice(&arg.to_ne_bytes());
        }
        let load = |off: u32| {
            let off = off as usize;
            u32::from_ne_bytes([data[off], data[off + 1], data[off + 2], data[off + 3]])
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let insn = filter[pc];
            pc += 1;
            let taken = match insn.code {
                LD_W_ABS => {
                    acc = load(insn.k);
                    continue;
                }
                RET_K => return insn.k,
                JEQ_K => acc == insn.k,
                JGE_K => acc >= insn.k,
                JSET_K => acc & insn.k != 0,
                other => unreachable!("opcode {other:#x}"),
            };
            pc += usize::from(if taken { insn.jt } else { insn.jf });
        }
    }

    fn call(filter: &[sock_filter], sys: libc::c_long, args: [u64; 6]) -> u32 {
        run(filter, AUDIT_ARCH, nr(sys), args)
    }

    #[test]
    fn sockets_follow_the_rule() {
        let unix_only = build_filter(SocketRule::UnixOnly);
        let inet = build_filter(SocketRule::UnixAndInet);
        let any = build_filter(SocketRule::Any);
        let socket = |f: &[sock_filter], family: i32| {
            call(f, libc::SYS_socket, [family as u64, 1, 0, 0, 0, 0])
        };
        assert_eq!(socket(&unix_only, libc::AF_UNIX), RET_ALLOW);
        assert_eq!(socket(&unix_only, libc::AF_INET), errno(libc::EACCES));
        assert_eq!(socket(&unix_only, libc::AF_INET6), errno(libc::EACCES));
        assert_eq!(socket(&unix_only, libc::AF_PACKET), errno(libc::EACCES));
        assert_eq!(socket(&unix_only, libc::AF_NETLINK), errno(libc::EACCES));
        // High bits are ignored by the kernel for an int argument, and by the filter too.
        let sneaky = (1u64 << 32) | libc::AF_INET as u64;
        assert_eq!(
            call(&unix_only, libc::SYS_socket, [sneaky, 1, 0, 0, 0, 0]),
            errno(libc::EACCES)
        );
        assert_eq!(socket(&inet, libc::AF_INET), RET_ALLOW);
        assert_eq!(socket(&inet, libc::AF_INET6), RET_ALLOW);
        assert_eq!(socket(&inet, libc::AF_PACKET), errno(libc::EACCES));
        assert_eq!(socket(&any, libc::AF_PACKET), RET_ALLOW);
    }

    #[test]
    fn dangerous_syscalls_are_denied_and_ordinary_ones_allowed() {
        let f = build_filter(SocketRule::Any);
        for sys in [
            libc::SYS_ptrace,
            libc::SYS_mount,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_bpf,
            libc::SYS_keyctl,
            libc::SYS_io_uring_setup,
        ] {
            assert_eq!(call(&f, sys, [0; 6]), errno(libc::EPERM), "syscall {sys}");
        }
        for sys in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_execve,
            libc::SYS_openat,
            libc::SYS_exit_group,
        ] {
            assert_eq!(call(&f, sys, [0; 6]), RET_ALLOW, "syscall {sys}");
        }
        assert_eq!(call(&f, libc::SYS_clone3, [0; 6]), errno(libc::ENOSYS));
        let fork_flags = libc::SIGCHLD as u64 | libc::CLONE_CHILD_SETTID as u64;
        assert_eq!(
            call(&f, libc::SYS_clone, [fork_flags, 0, 0, 0, 0, 0]),
            RET_ALLOW
        );
        let userns = fork_flags | libc::CLONE_NEWUSER as u64;
        assert_eq!(
            call(&f, libc::SYS_clone, [userns, 0, 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            call(&f, libc::SYS_ioctl, [0, u64::from(TIOCSTI), 0, 0, 0, 0]),
            errno(libc::EPERM)
        );
        assert_eq!(
            call(&f, libc::SYS_ioctl, [0, 0x5401, 0, 0, 0, 0]),
            RET_ALLOW
        ); // TCGETS
        assert_eq!(
            run(&f, 0x4000_0003, nr(libc::SYS_read), [0; 6]),
            RET_KILL_PROCESS
        ); // i386
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_syscalls_are_refused() {
        let f = build_filter(SocketRule::Any);
        let x32_ptrace = X32_SYSCALL_BIT | nr(libc::SYS_ptrace);
        assert_eq!(run(&f, AUDIT_ARCH, x32_ptrace, [0; 6]), errno(libc::ENOSYS));
    }

    #[test]
    fn bytes_are_eight_per_instruction() {
        let program = SeccompProgram::build(SocketRule::UnixOnly);
        let program = program
            .as_ref()
            .map(|p| (p.instructions().len(), p.to_bytes().len()));
        let Some((insns, bytes)) = program else {
            unreachable!("supported architecture");
        };
        assert_eq!(bytes, insns * 8);
    }
}
