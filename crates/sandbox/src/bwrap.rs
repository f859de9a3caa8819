//! The bubblewrap backend: a private mount, pid, ipc and (when the network is off) network
//! namespace, plus the seccomp filter handed to bwrap through an inherited memfd.
//!
//! Layout inside the sandbox: `/` read-only; fresh `/dev`, `/proc`, private `/tmp`,
//! `/dev/shm`, and an empty `/run` (no host sockets such as `docker.sock`, the ssh or gpg
//! agent, D-Bus) except the sockets the policy allows; every other listening host socket
//! hidden (see [`crate::sockets`]); the project and extra writable roots bound read-write;
//! protected paths bound read-only over themselves; hidden files replaced by an empty
//! read-only file and hidden directories by an empty read-only directory. With `--unshare-pid` and `--die-with-parent`,
//! killing bwrap (or Braincode dying, through the death signal armed in `pre_exec`) tears down
//! the whole pid namespace, so nothing started inside survives, not even a `setsid` daemon.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::SandboxError;
use crate::policy::ResolvedPolicy;
use crate::seccomp::{SeccompProgram, SocketRule};
use crate::sys::{self, ChildSetup};

/// A bubblewrap that passed the probe.
#[derive(Debug, Clone)]
pub(crate) struct BwrapInfo {
    /// Absolute path of the binary.
    pub path: PathBuf,
    /// What `bwrap --version` printed, e.g. `bubblewrap 0.8.0`.
    pub version: String,
    /// Whether the seccomp filter could be built for this architecture.
    pub seccomp: bool,
}

/// Finds `name` on `PATH`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// Waits for `child` up to `limit`, killing it when it takes longer.
pub(crate) fn wait_bounded(
    mut child: std::process::Child,
    limit: Duration,
) -> Result<std::process::Output, String> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => {
                return child
                    .wait_with_output()
                    .map_err(|e| format!("could not collect its output: {e}"));
            }
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("it did not finish within {} s", limit.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("could not wait for it: {e}")),
        }
    }
}

/// Checks that bubblewrap exists and can build the sandbox this backend uses.
pub(crate) fn probe() -> Result<BwrapInfo, String> {
    let path = find_on_path("bwrap").ok_or_else(|| "bwrap not found on PATH".to_string())?;
    let version = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "bubblewrap".to_string());
    // The directory lives until the probe has run in it.
    let (_probe_dir, project) = crate::probe::probe_dir("braincode-bwrap-probe-")?;
    let info = BwrapInfo {
        path: path.clone(),
        version,
        seccomp: SeccompProgram::build(SocketRule::UnixAndInet).is_some(),
    };
    let policy = crate::probe::probe_policy(&project);
    let backend = BwrapBackend::new(&info, &policy).map_err(|e| e.to_string())?;
    let mut command = backend.command(OsStr::new("true"), &[], &project);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = command
        .spawn()
        .map_err(|e| format!("{} could not be started: {e}", path.display()))?;
    let output = wait_bounded(child, Duration::from_secs(10))
        .map_err(|e| format!("the bwrap probe failed: {e}"))?;
    if output.status.success() {
        Ok(info)
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(format!(
            "{} cannot build a sandbox here ({}: {}); user namespaces may be disabled",
            info.version,
            output.status,
            stderr.trim()
        ))
    }
}

/// A prepared bubblewrap sandbox for one policy.
#[derive(Debug)]
pub(crate) struct BwrapBackend {
    bwrap: PathBuf,
    /// The arguments before the host-socket masks: the root, `/dev`, `/proc`, private dirs.
    prefix: Vec<OsString>,
    /// The arguments after them: writable roots, protected and hidden paths, namespaces.
    suffix: Vec<OsString>,
    /// The policy, for the socket masks made before each command.
    policy: ResolvedPolicy,
    /// The seccomp program, as bytes for `--seccomp`.
    seccomp: Option<Arc<[u8]>>,
    /// Holds the empty file and directory that hidden paths are replaced with.
    state: Arc<tempfile::TempDir>,
    summary: String,
}

fn push(args: &mut Vec<OsString>, items: &[&OsStr]) {
    args.extend(items.iter().map(|s| s.to_os_string()));
}

impl BwrapBackend {
    pub(crate) fn new(info: &BwrapInfo, policy: &ResolvedPolicy) -> Result<Self, SandboxError> {
        let setup = |what: &str| {
            let what = what.to_string();
            move |source| SandboxError::Setup { what, source }
        };
        let state = tempfile::Builder::new()
            .prefix(&crate::state_dir_prefix(crate::STATE_DIR_PREFIX))
            .tempdir()
            .map_err(setup(
                "creating the sandbox state directory in the system temp dir",
            ))?;
        let empty_file = state.path().join("empty-file");
        let empty_dir = state.path().join("empty-dir");
        std::fs::write(&empty_file, b"").map_err(setup("creating the empty placeholder file"))?;
        std::fs::create_dir(&empty_dir)
            .map_err(setup("creating the empty placeholder directory"))?;

        let mut args = Vec::new();
        let s = OsStr::new;
        push(&mut args, &[s("--ro-bind"), s("/"), s("/")]);
        push(
            &mut args,
            &[s("--dev"), s("/dev"), s("--tmpfs"), s("/dev/shm")],
        );
        push(
            &mut args,
            &[s("--proc"), s("/proc"), s("--tmpfs"), s("/tmp")],
        );
        let mut masked: Vec<&Path> = vec![Path::new("/dev"), Path::new("/proc"), Path::new("/tmp")];
        for run in ["/run", "/var/run"] {
            let run = Path::new(run);
            if std::fs::symlink_metadata(run).is_ok_and(|m| m.is_dir()) {
                push(&mut args, &[s("--tmpfs"), run.as_os_str()]);
                masked.push(run);
            }
        }
        if policy.network {
            // systemd-resolved keeps resolv.conf under /run, which is masked above.
            if let Ok(real) = std::fs::canonicalize("/etc/resolv.conf")
                && masked.iter().any(|m| real.starts_with(m))
            {
                push(
                    &mut args,
                    &[s("--ro-bind"), real.as_os_str(), real.as_os_str()],
                );
            }
        }
        // Allowed host sockets in the private directories: bound back into them.
        for socket in &policy.sockets {
            if masked.iter().any(|m| socket.starts_with(m)) {
                push(
                    &mut args,
                    &[s("--bind"), socket.as_os_str(), socket.as_os_str()],
                );
            }
        }
        let prefix = std::mem::take(&mut args);
        // A read-only project first: a writable root inside it (Braincode's own git writing
        // `.git/objects` for a writers' snapshot) is bound over it, not hidden under it.
        if let Some(project) = &policy.read_only_project {
            push(
                &mut args,
                &[s("--ro-bind"), project.as_os_str(), project.as_os_str()],
            );
        }
        for root in &policy.writable {
            push(
                &mut args,
                &[s("--bind"), root.as_os_str(), root.as_os_str()],
            );
        }
        for path in &policy.read_only {
            push(
                &mut args,
                &[s("--ro-bind"), path.as_os_str(), path.as_os_str()],
            );
        }
        let mut hidden = 0usize;
        for path in &policy.hidden {
            if masked.iter().any(|m| path.starts_with(m)) && !policy.in_writable(path) {
                continue; // already invisible: it lives on a private tmpfs
            }
            let placeholder = if path.is_dir() {
                &empty_dir
            } else {
                &empty_file
            };
            push(
                &mut args,
                &[s("--ro-bind"), placeholder.as_os_str(), path.as_os_str()],
            );
            hidden += 1;
        }
        push(
            &mut args,
            &[
                s("--unshare-pid"),
                s("--unshare-ipc"),
                s("--unshare-uts"),
                s("--unshare-cgroup-try"),
                s("--die-with-parent"),
                s("--cap-drop"),
                s("ALL"),
                s("--setenv"),
                s("TMPDIR"),
                s("/tmp"),
            ],
        );
        if !policy.network {
            push(&mut args, &[s("--unshare-net")]);
        }
        let rule = if policy.network {
            SocketRule::Any
        } else {
            SocketRule::UnixAndInet
        };
        let seccomp = SeccompProgram::build(rule).map(|p| Arc::from(p.to_bytes()));

        let extra = policy.writable.len() - usize::from(policy.read_only_project.is_none());
        let mut writes = Vec::new();
        if policy.read_only_project.is_none() {
            writes.push("project".to_string());
        }
        match extra {
            0 => {}
            1 => writes.push("1 extra root".to_string()),
            n => writes.push(format!("{n} extra roots")),
        }
        writes.push("private /tmp".to_string());
        let summary = format!(
            "bubblewrap{}; writes: {}; read-only: {}; hidden: {}; host UNIX sockets: {}; network: {}",
            if seccomp.is_some() {
                " + seccomp"
            } else {
                " (no seccomp for this CPU architecture)"
            },
            writes.join(", "),
            crate::count(policy.read_only.len(), "protected path"),
            crate::count(hidden, "path"),
            if policy.sockets.is_empty() {
                "none".to_string()
            } else {
                crate::count(policy.sockets.len(), "allowed socket")
            },
            if policy.network {
                "on"
            } else {
                "off (private loopback only)"
            },
        );
        Ok(Self {
            bwrap: info.path.clone(),
            prefix,
            suffix: args,
            policy: policy.clone(),
            seccomp,
            state: Arc::new(state),
            summary,
        })
    }

    /// What this sandbox does not enforce, one sentence each.
    pub(crate) fn gaps(&self) -> Vec<String> {
        let mut gaps = Vec::new();
        if self.seccomp.is_none() {
            gaps.push(
                "no seccomp filter for this CPU architecture: ptrace, keyrings and raw sockets are not refused"
                    .to_string(),
            );
        }
        gaps
    }

    /// One line for reports.
    pub(crate) fn describe(&self) -> String {
        self.summary.clone()
    }

    pub(crate) fn command(&self, program: &OsStr, args: &[OsString], cwd: &Path) -> Command {
        let mut command = Command::new(&self.bwrap);
        command
            .args(&self.prefix)
            .args(crate::sockets::mask_args(
                &crate::sockets::host_table(),
                &self.policy,
            ))
            .args(&self.suffix);
        let mut setup = ChildSetup::new();
        if let Some(bytes) = &self.seccomp {
            match sys::sealed_memfd(c"braincode-seccomp", bytes) {
                Ok(fd) => setup.pass_fd = Some(fd),
                // Fail closed: the spawn reports this error instead of running unfiltered.
                Err(e) => setup.fail = Some(e.raw_os_error().unwrap_or(libc::EMFILE)),
            }
        }
        if let Some(fd) = setup.pass_fd_number() {
            command.arg("--seccomp").arg(fd.to_string());
        }
        command
            .arg("--chdir")
            .arg(cwd)
            .arg("--")
            .arg(program)
            .args(args);
        command.current_dir(cwd);
        command.env("TMPDIR", "/tmp");
        // Keeps the placeholders alive until the command has been spawned.
        setup.keep_alive = Some(Arc::clone(&self.state) as Arc<dyn std::any::Any + Send + Sync>);
        sys::install(&mut command, setup);
        command
    }
}
