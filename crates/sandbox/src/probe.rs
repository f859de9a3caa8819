//! Which backend confines commands on this machine: probed once per process.

use std::sync::OnceLock;

use super::{SANDBOX_ENV, SandboxKind, SandboxStatus};
#[cfg(target_os = "linux")]
use super::{bwrap, landlock};

#[cfg(target_os = "linux")]
/// A fresh directory for a probe run, and its canonical path (the probe's project).
pub(crate) fn probe_dir(prefix: &str) -> Result<(tempfile::TempDir, std::path::PathBuf), String> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .map_err(|e| format!("could not create a probe directory in the system temp dir: {e}"))?;
    let path = std::fs::canonicalize(dir.path())
        .map_err(|e| format!("could not resolve the probe directory: {e}"))?;
    Ok((dir, path))
}

/// What a probe's command may do: write its directory, nothing else (no network, no sockets).
pub(crate) fn probe_policy(project: &std::path::Path) -> crate::policy::ResolvedPolicy {
    crate::policy::ResolvedPolicy {
        writable: vec![project.to_path_buf()],
        read_only_project: None,
        read_only: Vec::new(),
        hidden: Vec::new(),
        network: false,
        sockets: Vec::new(),
    }
}

pub(crate) fn bwrap_probe() -> &'static Result<bwrap::BwrapInfo, String> {
    static PROBE: OnceLock<Result<bwrap::BwrapInfo, String>> = OnceLock::new();
    PROBE.get_or_init(bwrap::probe)
}

#[cfg(target_os = "linux")]
pub(crate) fn landlock_probe() -> &'static Result<landlock::LandlockInfo, String> {
    static PROBE: OnceLock<Result<landlock::LandlockInfo, String>> = OnceLock::new();
    PROBE.get_or_init(landlock::probe)
}

/// The status of one backend on this machine (probed once, then cached).
pub(crate) fn probe_kind(kind: SandboxKind) -> SandboxStatus {
    let unavailable = |detail: String| SandboxStatus {
        kind: SandboxKind::Unavailable,
        detail,
    };
    match kind {
        #[cfg(target_os = "linux")]
        SandboxKind::Bubblewrap => match bwrap_probe() {
            Ok(info) => SandboxStatus {
                kind,
                detail: format!(
                    "{}{}",
                    info.version,
                    if info.seccomp {
                        " + seccomp"
                    } else {
                        " (no seccomp for this CPU architecture)"
                    }
                ),
            },
            Err(reason) => unavailable(reason.clone()),
        },
        #[cfg(target_os = "linux")]
        SandboxKind::Landlock => match landlock_probe() {
            Ok(info) => SandboxStatus {
                kind,
                detail: format!("landlock ABI {} + seccomp", info.abi),
            },
            Err(reason) => unavailable(reason.clone()),
        },
        #[cfg(target_os = "macos")]
        SandboxKind::Seatbelt => {
            if Path::new("/usr/bin/sandbox-exec").is_file() {
                SandboxStatus {
                    kind,
                    detail: "sandbox-exec (Seatbelt; untested)".into(),
                }
            } else {
                unavailable("/usr/bin/sandbox-exec not found".into())
            }
        }
        SandboxKind::Unavailable => unavailable("no sandbox requested".into()),
        #[allow(unreachable_patterns)]
        other => unavailable(format!(
            "the {other} backend does not exist on this operating system"
        )),
    }
}

fn auto_status() -> SandboxStatus {
    #[cfg(target_os = "linux")]
    {
        let bwrap = probe_kind(SandboxKind::Bubblewrap);
        if bwrap.kind != SandboxKind::Unavailable {
            return bwrap;
        }
        let landlock = probe_kind(SandboxKind::Landlock);
        if landlock.kind != SandboxKind::Unavailable {
            return SandboxStatus {
                kind: landlock.kind,
                detail: format!(
                    "{} (bubblewrap unusable: {})",
                    landlock.detail, bwrap.detail
                ),
            };
        }
        SandboxStatus {
            kind: SandboxKind::Unavailable,
            detail: format!("{}, and {}", bwrap.detail, landlock.detail),
        }
    }
    #[cfg(target_os = "macos")]
    {
        probe_kind(SandboxKind::Seatbelt)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        SandboxStatus {
            kind: SandboxKind::Unavailable,
            detail: "no sandbox backend exists for this operating system".into(),
        }
    }
}

fn compute_status() -> SandboxStatus {
    let requested = std::env::var(SANDBOX_ENV).unwrap_or_default();
    match requested.trim().to_ascii_lowercase().as_str() {
        "" | "auto" => auto_status(),
        "off" => SandboxStatus {
            kind: SandboxKind::Unavailable,
            detail: format!("disabled by {SANDBOX_ENV}=off"),
        },
        "bwrap" | "bubblewrap" => probe_kind(SandboxKind::Bubblewrap),
        "landlock" => probe_kind(SandboxKind::Landlock),
        "seatbelt" => probe_kind(SandboxKind::Seatbelt),
        _ => SandboxStatus {
            kind: SandboxKind::Unavailable,
            detail: format!(
                "{SANDBOX_ENV}={requested:?} is not one of off, bwrap, landlock, auto; fix or unset it"
            ),
        },
    }
}

/// The backend this process uses. Probed once per process (the first call runs a tiny
/// sandboxed `true`, a few milliseconds), cheap afterwards. Honours [`SANDBOX_ENV`].
pub fn status() -> &'static SandboxStatus {
    static STATUS: OnceLock<SandboxStatus> = OnceLock::new();
    STATUS.get_or_init(compute_status)
}
