//! Running a command confined by the OS.
//!
//! Every command the agent runs (shell, exec sessions, scripts, hooks, checks, MCP stdio
//! servers) goes through a [`Sandbox`]. The threat model is a hostile repository steering the
//! model: a sandboxed command must not write outside the project and a private temp dir, write
//! the project's protected paths ([`PROTECTED_PROJECT_PATHS`], at any depth), read hidden
//! paths (secrets), connect to the host's UNIX sockets or reach the network (the host's
//! loopback included) unless allowed, or outlive Braincode.
//!
//! Backends, best first ([`status`] picks one once per process):
//! - **Bubblewrap** (Linux, `bwrap` on `PATH`): mount, pid, ipc and network namespaces plus a
//!   seccomp filter. Enforces the whole policy; protected paths created after it was built are
//!   caught by [`Sandbox::check_protected`].
//! - **Landlock** (Linux ≥ 5.13) + seccomp, when bubblewrap is missing or cannot create
//!   namespaces. Partial: see [`Sandbox::gaps`] and the `landlock` module docs.
//! - **Seatbelt** (macOS, `sandbox-exec`): untested.
//! - **Unavailable**: [`Sandbox::new`] fails and the caller must ask for approval per command.
//!
//! What no backend can forbid is checked after each command: [`Sandbox::check_protected`]
//! undoes changes to protected paths and reports them (see the `guard` module).
//!
//! Secret environment variables are removed from every sandboxed command
//! ([`is_secret_env_name`]).

pub mod beneath;
mod env;
mod group;
mod guard;
mod helper;
mod lists;
pub mod netbridge;
mod policy;
mod probe;
use probe::probe_kind;
#[cfg(target_os = "linux")]
use probe::{bwrap_probe, landlock_probe};
mod walk;

#[cfg(target_os = "linux")]
mod bwrap;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(any(target_os = "macos", test))]
mod macos;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod sockets;
#[cfg(target_os = "linux")]
mod sys;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

pub use env::{is_secret_env_name, scrub_secret_env};
pub use group::{GroupSignal, group_exists, signal_group};
pub use guard::{ChangeKind, ProtectedChange, ProtectedViolation};
pub use helper::helper_sandbox;
pub use lists::{
    HOME_SECRET_PATHS, PROTECTED_PROJECT_PATHS, SECRET_CONTENT_FILES, SECRET_FILE_EXCEPTIONS,
    SECRET_FILE_NAMES, SECRET_SNIFF_BYTES, is_protected_path, is_secret_file, is_secret_file_name,
};
pub use policy::SandboxPolicy;
pub use probe::status;
pub use walk::{WALK_DEPENDENCY_DEPTH, WALK_MAX_DEPTH, WALK_MAX_ENTRIES, WALK_SKIPPED_DIRS};

/// Environment variable that forces a backend: `off` (no sandbox, to test the fail-closed
/// path), `bwrap`, `landlock`, or `auto` (the default). Any other value means no sandbox.
pub const SANDBOX_ENV: &str = "BRAINCODE_SANDBOX";

/// Which mechanism confines commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxKind {
    /// bubblewrap namespaces + seccomp (Linux).
    Bubblewrap,
    /// Landlock + seccomp (Linux), partial enforcement.
    Landlock,
    /// Seatbelt through `sandbox-exec` (macOS), untested.
    Seatbelt,
    /// No working backend: commands cannot be confined.
    Unavailable,
}

impl fmt::Display for SandboxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bubblewrap => "bubblewrap",
            Self::Landlock => "landlock",
            Self::Seatbelt => "seatbelt",
            Self::Unavailable => "unavailable",
        })
    }
}

/// The backend this process uses and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxStatus {
    /// The backend [`Sandbox::new`] will use.
    pub kind: SandboxKind,
    /// e.g. `bubblewrap 0.8.0 + seccomp`, or why no backend works.
    pub detail: String,
}

/// Why a sandbox could not be built. Each message says what failed and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No backend works on this machine (or the requested one does not).
    #[error(
        "no OS sandbox is available: {reason}. Install bubblewrap (e.g. `apt install bubblewrap`) or use a kernel with Landlock enabled; until then each command needs the user's approval"
    )]
    Unavailable {
        /// Why, e.g. "bwrap not found on PATH, and Landlock is not supported by this kernel".
        reason: String,
    },
    /// The policy cannot be enforced as given.
    #[error("the sandbox policy is invalid: {reason}")]
    InvalidPolicy {
        /// What is wrong and how to fix it.
        reason: String,
    },
    /// Preparing the sandbox failed (temp dirs, Landlock rules).
    #[error(
        "could not prepare the sandbox while {what}: {source}; check that the system temp dir is writable and retry"
    )]
    Setup {
        /// The step that failed.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Makes the child of `command` die (SIGKILL) when Braincode dies, for commands that run
/// without a sandbox (a person approved them): Linux `PR_SET_PDEATHSIG`, armed between fork
/// and exec. Like [`Sandbox::command`], the signal is tied to the spawning *thread*: spawn
/// from a long-lived thread. Only the direct child is covered (the kernel does not pass the
/// setting on to its children); kill its process group to reach the rest. A no-op on other
/// operating systems.
pub fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    sys::install_die_with_parent(command);
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// `n thing(s)` for one-line summaries.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn count(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

#[derive(Debug)]
enum Backend {
    #[cfg(target_os = "linux")]
    Bwrap(bwrap::BwrapBackend),
    #[cfg(target_os = "linux")]
    Landlock(landlock::LandlockBackend),
    #[cfg(target_os = "macos")]
    Seatbelt(macos::SeatbeltBackend),
}

/// Prefix of a sandbox's state directory (placeholders) in the system temp dir.
const STATE_DIR_PREFIX: &str = "braincode-sandbox-";
/// Prefix of a Landlock sandbox's private temp dir.
const PRIVATE_TMP_PREFIX: &str = "braincode-sandbox-tmp-";

/// `<prefix><pid>-`: the owner's pid in the name lets a later process tell a directory left
/// behind by a killed Braincode from one in use.
fn state_dir_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

#[cfg(target_os = "linux")]
/// Removes state directories whose owning process is gone (a Braincode killed with SIGKILL
/// cannot clean up after itself). Best effort: errors are ignored.
fn remove_stale_state_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|name| {
            name.strip_prefix(PRIVATE_TMP_PREFIX)
                .or_else(|| name.strip_prefix(STATE_DIR_PREFIX))
        }) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        let ours = entry
            .metadata()
            .ok()
            .is_some_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == current_uid());
        if !alive && ours && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(target_os = "linux")]
/// This process's uid, from `/proc` (no FFI here); `u32::MAX` when unknown, which matches no
/// directory, so nothing is removed.
fn current_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|uid| uid.parse().ok())
        })
        .unwrap_or(u32::MAX)
}

/// A policy bound to a working backend; builds confined commands.
///
/// Building one resolves the policy's paths and prepares the backend (a Landlock ruleset, a
/// private temp dir, placeholder files); keep it for as long as its commands run, and build a
/// new one when the policy changes (e.g. the user allows the network).
#[derive(Debug)]
pub struct Sandbox {
    policy: SandboxPolicy,
    kind: SandboxKind,
    backend: Backend,
    /// The protected-path guard, made before the first command (a sandbox that never runs
    /// one never walks the project for it).
    guard: OnceLock<guard::Guard>,
    /// What the guard is made from: the project, the policy's read-only paths, and those the
    /// backend enforces.
    guard_inputs: (
        std::path::PathBuf,
        Vec<std::path::PathBuf>,
        Vec<std::path::PathBuf>,
    ),
    gaps: Vec<String>,
    /// The network allowlist every command goes through, when set.
    route: Option<netbridge::NetRoute>,
}

impl Sandbox {
    /// A sandbox with the backend chosen by [`status`].
    /// `Err(SandboxError::Unavailable { reason })` when no backend works.
    pub fn new(policy: SandboxPolicy) -> Result<Self, SandboxError> {
        let status = status();
        if status.kind == SandboxKind::Unavailable {
            return Err(SandboxError::Unavailable {
                reason: status.detail.clone(),
            });
        }
        Self::with_kind(policy, status.kind)
    }

    /// A sandbox with a specific backend, ignoring [`SANDBOX_ENV`] (for tests and for callers
    /// that must have one backend). Fails with `Unavailable` when that backend does not work
    /// here.
    pub fn with_kind(policy: SandboxPolicy, kind: SandboxKind) -> Result<Self, SandboxError> {
        #[cfg(target_os = "linux")]
        remove_stale_state_dirs();
        let probed = probe_kind(kind);
        if probed.kind == SandboxKind::Unavailable {
            return Err(SandboxError::Unavailable {
                reason: format!("{kind}: {}", probed.detail),
            });
        }
        let resolved = policy::resolve(&policy)?;
        let project =
            std::fs::canonicalize(&policy.project_root).map_err(|source| SandboxError::Setup {
                what: "resolving the project root".into(),
                source,
            })?;
        // Bubblewrap binds existing protected paths read-only: a change there comes from
        // outside the sandbox. No other backend can say that of a path inside the project.
        let enforced = if kind == SandboxKind::Bubblewrap {
            resolved.read_only.clone()
        } else {
            Vec::new()
        };
        let guard_inputs = (project, resolved.read_only.clone(), enforced);
        let backend = match kind {
            #[cfg(target_os = "linux")]
            SandboxKind::Bubblewrap => match bwrap_probe() {
                Ok(info) => Backend::Bwrap(bwrap::BwrapBackend::new(info, &resolved)?),
                Err(reason) => {
                    return Err(SandboxError::Unavailable {
                        reason: reason.clone(),
                    });
                }
            },
            #[cfg(target_os = "linux")]
            SandboxKind::Landlock => match landlock_probe() {
                Ok(info) => Backend::Landlock(landlock::LandlockBackend::new(*info, &resolved)?),
                Err(reason) => {
                    return Err(SandboxError::Unavailable {
                        reason: reason.clone(),
                    });
                }
            },
            #[cfg(target_os = "macos")]
            SandboxKind::Seatbelt => Backend::Seatbelt(macos::SeatbeltBackend::new(&resolved)?),
            #[allow(unreachable_patterns)]
            _ => {
                return Err(SandboxError::Unavailable {
                    reason: format!("the {kind} backend does not exist on this operating system"),
                });
            }
        };
        let mut gaps = match &backend {
            #[cfg(target_os = "linux")]
            Backend::Bwrap(b) => b.gaps(),
            #[cfg(target_os = "linux")]
            Backend::Landlock(b) => b.gaps().to_vec(),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(_) => {
                vec!["the macOS Seatbelt backend has not been tested on a Mac".to_string()]
            }
        };
        if policy.walk_truncated {
            gaps.push(format!(
                "the project has more than {WALK_MAX_ENTRIES} files and directories: secret files past them are not hidden and protected paths past them not checked"
            ));
        }
        Ok(Self {
            policy,
            kind,
            backend,
            guard: OnceLock::new(),
            guard_inputs,
            gaps,
            route: None,
        })
    }

    /// This sandbox with every command's network going through the allowlist proxy at
    /// `route` (its socket must be among the policy's allowed sockets, and the network off):
    /// each command runs under the bridge, which gives it `HTTP(S)_PROXY`. Only the bubblewrap
    /// backend has a private loopback for the bridge to listen on.
    pub fn with_route(mut self, route: netbridge::NetRoute) -> Result<Sandbox, String> {
        if self.kind != SandboxKind::Bubblewrap {
            return Err(format!(
                "the network allowlist needs the bubblewrap sandbox (this one is {}): install bubblewrap",
                self.kind
            ));
        }
        if self.policy.network {
            return Err("the network allowlist is for a sandbox whose network is off".into());
        }
        self.route = Some(route);
        Ok(self)
    }

    /// The network allowlist's route, when commands go through it.
    pub fn route(&self) -> Option<&netbridge::NetRoute> {
        self.route.as_ref()
    }

    /// A std `Command` that runs `program args…` confined, with cwd set, `TMPDIR` pointing at
    /// the private temp dir and secret variables removed from its environment. The caller then
    /// sets stdio, env (call [`scrub_secret_env`] again after adding variables) and process
    /// group, and converts it with `tokio::process::Command::from`.
    ///
    /// On Linux the child gets `PR_SET_PDEATHSIG(SIGKILL)`: it is killed when the *thread* that
    /// spawned it exits, so spawn from a long-lived thread (a runtime worker, not a
    /// `spawn_blocking` thread, which the runtime retires when idle).
    pub fn command(&self, program: &OsStr, args: &[OsString], cwd: &Path) -> Command {
        // The reference of `check_protected` is the project before its first command (a
        // sandbox whose commands cannot write the project needs none).
        if self.policy.project_writable {
            self.guard();
        }
        let routed = self.route.as_ref().map(|route| route.wrap(program, args));
        let (program, args) = match &routed {
            Some((program, args)) => (program.as_os_str(), args.as_slice()),
            None => (program, args),
        };
        let mut command = match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Bwrap(b) => b.command(program, args, cwd),
            #[cfg(target_os = "linux")]
            Backend::Landlock(b) => b.command(program, args, cwd),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(b) => b.command(program, args, cwd),
        };
        scrub_secret_env(&mut command);
        command
    }

    fn guard(&self) -> &guard::Guard {
        self.guard.get_or_init(|| {
            let (project, extra, enforced) = &self.guard_inputs;
            guard::Guard::new(project, extra, enforced)
        })
    }

    /// The backend in use.
    pub fn kind(&self) -> SandboxKind {
        self.kind
    }

    /// The policy as given.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// What this sandbox cannot enforce of its policy, one sentence each; empty when it
    /// enforces everything. Landlock has gaps (secret files inside the project readable,
    /// protected paths writable, …); a caller that lets commands run without a person (`--yes`,
    /// `--allow-edits`) should use such a sandbox only when the user opted in.
    pub fn gaps(&self) -> &[String] {
        &self.gaps
    }

    /// Checks the project's protected paths (at any depth) against how they were before this
    /// sandbox's first command (or when last checked or accepted): a protected path a
    /// command created is removed, one it changed or removed is restored, and `Err` says what
    /// happened. Call it
    /// after every command ends and before Braincode itself reads the project (git, a review
    /// diff): creating a path cannot be prevented by any backend, and Landlock cannot prevent
    /// changes either. Changes below the paths the backend keeps read-only come from outside
    /// the sandbox (the user's editor) and are accepted silently.
    pub fn check_protected(&self) -> Result<(), ProtectedViolation> {
        if !self.policy.project_writable {
            return Ok(());
        }
        self.guard().check()
    }

    /// Takes the protected paths as they are now as the reference of
    /// [`check_protected`](Self::check_protected): call it after a change a person approved
    /// (an edit of `.vscode/settings.json`), so it is not undone.
    pub fn accept_protected(&self) {
        match self.guard.get() {
            Some(guard) => guard.accept(),
            // Made now, from the project as it is: that is the acceptance.
            None => {
                self.guard();
            }
        }
    }

    /// One line for reports and the TUI, e.g. `bubblewrap + seccomp; writes: project, private
    /// /tmp; read-only: 3 protected paths; hidden: 5 paths; network: off (private loopback
    /// only)`. Says what a partial backend does not enforce.
    pub fn describe(&self) -> String {
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Bwrap(b) => b.describe(),
            #[cfg(target_os = "linux")]
            Backend::Landlock(b) => b.describe(),
            #[cfg(target_os = "macos")]
            Backend::Seatbelt(b) => b.describe(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_can_be_shared_between_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Sandbox>();
        assert_send_sync::<SandboxError>();
    }

    #[test]
    fn kinds_display_in_lower_case() {
        assert_eq!(SandboxKind::Bubblewrap.to_string(), "bubblewrap");
        assert_eq!(SandboxKind::Unavailable.to_string(), "unavailable");
        assert_eq!(count(1, "path"), "1 path");
        assert_eq!(count(3, "path"), "3 paths");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn state_dirs_of_dead_processes_are_removed_and_live_ones_kept() {
        // No process has a pid this large (the kernel's maximum is 4,194,304).
        let dead = std::env::temp_dir().join(format!("{STATE_DIR_PREFIX}999999999-test"));
        let dead_tmp = std::env::temp_dir().join(format!("{PRIVATE_TMP_PREFIX}999999998-test"));
        let live = tempfile::Builder::new()
            .prefix(&state_dir_prefix(STATE_DIR_PREFIX))
            .tempdir()
            .unwrap();
        for dir in [&dead, &dead_tmp] {
            std::fs::create_dir_all(dir.join("empty-dir")).unwrap();
        }
        remove_stale_state_dirs();
        assert!(!dead.exists());
        assert!(!dead_tmp.exists());
        assert!(live.path().exists());
    }
}
