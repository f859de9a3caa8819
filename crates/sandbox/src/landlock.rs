//! The Landlock + seccomp backend, for machines without a working bubblewrap.
//!
//! The ruleset is built once in the parent; each child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)`, `landlock_restrict_self` and `seccomp` (see [`crate::sys`]).
//!
//! Landlock is an allow-list of path hierarchies, so a hidden path is carved out by granting
//! read access to the *siblings* along the path to it instead of to its parent (the
//! directories on that path can then be walked through but not listed). Rules cannot take a
//! right away from a sub-path, which limits what this backend enforces:
//! - paths inside a writable root (the project's `.git`, `.env`, …) stay writable and readable
//!   (changes to protected paths are undone after each command by
//!   [`crate::Sandbox::check_protected`]; a read cannot be undone);
//! - refusing host UNIX sockets by path (`docker.sock`, agents) needs Landlock ABI 9, which
//!   grants `ResolveUnix` only in the writable roots, the private temp dir and the allowed
//!   sockets;
//! - there is no pid namespace: only the direct child gets the death signal, so background
//!   processes survive Braincode's death unless the caller kills the process group;
//! - host `/tmp` stays readable; the private temp dir is a fresh directory under it;
//! - directories on the path to a hidden path cannot be listed (`ls ~` fails while `~/.ssh` is
//!   hidden) and entries created in them later are unreadable; `/dev/shm` is not writable;
//! - with the network off there is no loopback at all (seccomp refuses `AF_INET` sockets), so a
//!   project's tests cannot start a local server.
//!
//! What it does enforce: writes only in the project, extra writable roots and a private temp
//! dir (plus `/dev/null`, ttys); hidden paths unreadable; no TCP and, through seccomp, no
//! `AF_INET`/`AF_INET6`/raw sockets when the network is off; abstract UNIX sockets and signals
//! scoped to the sandbox (ABI 6); `/proc/<pid>/environ`, `maps`, `mem`, `fd` of outside
//! processes unreadable (Landlock's ptrace rules), so Braincode's environment cannot be read
//! there. When Braincode runs as root the child first sheds every capability (bounding set
//! included, so executed programs get none back): `CAP_SYS_ADMIN`/`CAP_PERFMON` would let it
//! read `/proc/<pid>/environ` despite Landlock (kernel ≥ 6.12 `mm_access`).

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use crate::SandboxError;
use crate::bwrap::wait_bounded;
use crate::policy::ResolvedPolicy;
use crate::seccomp::{SeccompProgram, SocketRule};
use crate::sys::{self, ChildSetup};

/// The newest ABI whose rights this backend asks for; older kernels get what they support.
const TARGET_ABI: ABI = ABI::V9;

/// Device files a command may write (and use ioctls on): discards, terminals.
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// A Landlock that passed the probe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LandlockInfo {
    /// The kernel's Landlock ABI version.
    pub abi: i32,
}

/// Checks that Landlock and seccomp both work by running `true` confined.
pub(crate) fn probe() -> Result<LandlockInfo, String> {
    let abi = sys::landlock_abi();
    if abi == -libc::EOPNOTSUPP {
        return Err("Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)".into());
    }
    if abi < 1 {
        return Err("Landlock is not supported by this kernel (needs Linux 5.13 or newer)".into());
    }
    let info = LandlockInfo { abi };
    // The directory lives until the probe has run in it.
    let (_dir, project) = crate::probe::probe_dir("braincode-landlock-probe-")?;
    let policy = crate::probe::probe_policy(&project);
    let backend = LandlockBackend::new(info, &policy).map_err(|e| e.to_string())?;
    let mut command = backend.command(OsStr::new("true"), &[], &project);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command.spawn().map_err(|e| {
        format!("Landlock ABI {abi} or seccomp could not confine a test process: {e}")
    })?;
    let output = wait_bounded(child, Duration::from_secs(10))
        .map_err(|e| format!("the Landlock probe failed: {e}"))?;
    if output.status.success() {
        Ok(info)
    } else {
        Err(format!(
            "a process confined by Landlock ABI {abi} + seccomp failed to run `true` ({}: {})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A prepared Landlock sandbox for one policy.
#[derive(Debug)]
pub(crate) struct LandlockBackend {
    ruleset: Arc<OwnedFd>,
    filter: Arc<[libc::sock_filter]>,
    tmp: Arc<tempfile::TempDir>,
    tmp_path: PathBuf,
    drop_capabilities: bool,
    summary: String,
    gaps: Vec<String>,
}

/// What Landlock cannot enforce on a kernel with Landlock ABI `abi` (see the module docs).
fn gaps(abi: i32) -> Vec<String> {
    let mut gaps = vec![
        "secret files inside the project (.env, keys) are readable by commands".to_string(),
        "protected paths inside the project (.git, .vscode, …) are writable: a change is undone after each command, not prevented".to_string(),
    ];
    if abi < 9 {
        gaps.push(format!(
            "host UNIX sockets (e.g. a Docker socket) can be connected to (needs Landlock ABI 9; this kernel has {abi})"
        ));
    }
    gaps.push("processes a command leaves in the background may outlive Braincode".to_string());
    gaps
}

fn ruleset_error(what: &str) -> impl FnOnce(landlock::RulesetError) -> SandboxError {
    let what = what.to_string();
    move |e| SandboxError::Setup {
        what,
        source: std::io::Error::other(e.to_string()),
    }
}

impl LandlockBackend {
    pub(crate) fn new(info: LandlockInfo, policy: &ResolvedPolicy) -> Result<Self, SandboxError> {
        let tmp = tempfile::Builder::new()
            .prefix(&crate::state_dir_prefix(crate::PRIVATE_TMP_PREFIX))
            .tempdir()
            .map_err(|source| SandboxError::Setup {
                what: "creating the private temp dir in the system temp dir".into(),
                source,
            })?;
        let tmp_path = std::fs::canonicalize(tmp.path()).map_err(|source| SandboxError::Setup {
            what: "resolving the private temp dir".into(),
            source,
        })?;
        let all = AccessFs::from_all(TARGET_ABI);
        let read = AccessFs::from_read(TARGET_ABI);
        let device =
            AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;

        let mut ruleset = Ruleset::default()
            .handle_access(all)
            .map_err(ruleset_error("declaring the filesystem rights"))?;
        if !policy.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(TARGET_ABI))
                .map_err(ruleset_error("declaring the network rights"))?;
        }
        let mut created = ruleset
            .scope(Scope::from_all(TARGET_ABI))
            .map_err(ruleset_error("declaring the scopes"))?
            .create()
            .map_err(ruleset_error("creating the Landlock ruleset"))?;

        // Hidden paths inside writable roots cannot be carved out (see the module docs).
        let carved: Vec<PathBuf> = policy
            .hidden
            .iter()
            .filter(|h| !policy.in_writable(h))
            .cloned()
            .collect();
        let mut rules = Vec::new();
        read_cover(Path::new("/"), &carved, &mut rules);
        let rules = rules.into_iter().map(|p| (p, read));
        let writes = policy
            .writable
            .iter()
            .chain([&tmp_path])
            .map(|p| (p.clone(), all));
        let devices = WRITABLE_DEVICES.iter().map(|d| (PathBuf::from(d), device));
        // ABI 9 refuses connecting to a UNIX socket outside the paths granted `ResolveUnix`;
        // older kernels do not know the right (the summary says so).
        let sockets = policy
            .sockets
            .iter()
            .filter(|_| info.abi >= 9)
            .map(|p| (p.clone(), AccessFs::ResolveUnix.into()));
        for (path, access) in rules.chain(writes).chain(devices).chain(sockets) {
            let Ok(fd) = PathFd::new(&path) else {
                continue; // vanished or unreadable: nothing granted, which is the safe side
            };
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(TARGET_ABI)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(ruleset_error(&format!(
                    "adding the Landlock rule for {}",
                    path.display()
                )))?;
        }
        let fd: Option<OwnedFd> = created.into();
        let ruleset = fd.ok_or_else(|| SandboxError::Unavailable {
            reason: "the Landlock ruleset could not be created on this kernel".into(),
        })?;
        let rule = if policy.network {
            SocketRule::Any
        } else {
            SocketRule::UnixOnly
        };
        let program = SeccompProgram::build(rule).ok_or_else(|| SandboxError::Unavailable {
            reason: "no seccomp filter for this CPU architecture, so Landlock cannot keep the network off".into(),
        })?;

        let partial = gaps(info.abi);
        let summary = format!(
            "landlock ABI {} + seccomp (partial: {}); writes: {}private temp dir; hidden: {}; network: {}",
            info.abi,
            partial.join("; "),
            match (
                policy.read_only_project.is_none(),
                policy.writable.len() - usize::from(policy.read_only_project.is_none()),
            ) {
                (true, 0) => "project, ".to_string(),
                (true, n) => format!("project, {n} extra roots, "),
                (false, 0) => String::new(),
                (false, n) => format!("{n} extra roots, "),
            },
            crate::count(carved.len(), "path"),
            if policy.network { "on" } else { "off" },
        );
        Ok(Self {
            ruleset: Arc::new(ruleset),
            filter: Arc::from(program.instructions()),
            tmp: Arc::new(tmp),
            tmp_path,
            drop_capabilities: sys::running_as_root(),
            summary,
            gaps: partial,
        })
    }

    /// What this backend does not enforce, one sentence each.
    pub(crate) fn gaps(&self) -> &[String] {
        &self.gaps
    }

    /// One line for reports.
    pub(crate) fn describe(&self) -> String {
        self.summary.clone()
    }

    pub(crate) fn command(&self, program: &OsStr, args: &[OsString], cwd: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .current_dir(cwd)
            .env("TMPDIR", &self.tmp_path);
        let mut setup = ChildSetup::new();
        setup.landlock = Some(Arc::clone(&self.ruleset));
        setup.seccomp = Some(Arc::clone(&self.filter));
        setup.drop_capabilities = self.drop_capabilities;
        setup.keep_alive = Some(Arc::clone(&self.tmp) as Arc<dyn std::any::Any + Send + Sync>);
        sys::install(&mut command, setup);
        command
    }
}

/// The paths to grant read access to so that everything under `dir` is readable except the
/// `hidden` paths: `dir` itself when nothing hidden lies below it, otherwise the cover of each
/// of its entries. Symlinks are skipped: Landlock checks the resolved path, which is covered
/// (or hidden) on its own.
fn read_cover(dir: &Path, hidden: &[PathBuf], out: &mut Vec<PathBuf>) {
    if hidden.iter().any(|h| h == dir) {
        return;
    }
    if !hidden.iter().any(|h| h.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return; // cannot list it: grant nothing below it
    };
    let mut children: Vec<_> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        read_cover(&child, hidden, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_cover_grants_siblings_along_the_path_to_a_hidden_path() -> std::io::Result<()> {
        let tmp = tempfile::tempdir()?;
        let root = std::fs::canonicalize(tmp.path())?;
        for dir in ["home/.ssh", "home/code", "etc"] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        std::fs::write(root.join("home/.bashrc"), "x")?;
        let mut out = Vec::new();
        read_cover(&root, &[root.join("home/.ssh")], &mut out);
        assert_eq!(
            out,
            vec![
                root.join("etc"),
                root.join("home/.bashrc"),
                root.join("home/code")
            ]
        );

        let mut out = Vec::new();
        read_cover(&root, &[], &mut out);
        assert_eq!(out.len(), 1);
        Ok(())
    }
}
