//! The macOS backend: a Seatbelt profile run with `sandbox-exec -p`.
//!
//! UNTESTED: written against Apple's Seatbelt (SBPL) conventions and compiled on Linux only
//! for the profile text (which the unit tests check); nobody has run it on a Mac yet. In SBPL
//! the last matching rule wins, so the profile first allows reads everywhere, then writes in
//! the writable roots, then denies writes to protected paths and any access to hidden ones.

use std::fmt::Write as _;
use std::path::Path;

use crate::policy::ResolvedPolicy;

/// The fixed part of the Seatbelt profile: deny by default, allow running programs, reading
/// files, terminals and the system services ordinary command-line tools need.
pub(crate) const SEATBELT_BASE_PROFILE: &str = r#"(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow file-read*)
(allow file-write-data file-ioctl
    (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (literal "/dev/dtracehelper")
    (regex #"^/dev/ttys[0-9]+$"))
(allow pseudo-tty)
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-sem)
(allow ipc-posix-shm-read* ipc-posix-shm-write-create ipc-posix-shm-write-data)
(allow mach-lookup
    (global-name "com.apple.system.opendirectoryd.libinfo")
    (global-name "com.apple.system.logger")
    (global-name "com.apple.coreservices.launchservicesd")
    (global-name "com.apple.SecurityServer"))
"#;

/// Rules added when the network is allowed.
pub(crate) const SEATBELT_NETWORK_PROFILE: &str = r#"(allow network-outbound)
(allow network-inbound)
(allow network-bind)
(allow system-socket)
(allow mach-lookup
    (global-name "com.apple.dnssd.service")
    (global-name "com.apple.SystemConfiguration.configd")
    (global-name "com.apple.trustd.agent"))
"#;

/// An SBPL string literal for `path`.
fn literal(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The full profile for `policy`, with `tmp` as the private temp dir.
pub(crate) fn seatbelt_profile(policy: &ResolvedPolicy, tmp: &Path) -> String {
    let mut profile = String::from(SEATBELT_BASE_PROFILE);
    profile.push_str("(allow file-write*");
    for root in policy
        .writable
        .iter()
        .map(std::path::PathBuf::as_path)
        .chain([tmp])
    {
        let _ = write!(profile, " (subpath {})", literal(root));
    }
    profile.push_str(")\n");
    if !policy.read_only.is_empty() {
        profile.push_str("(deny file-write*");
        for path in &policy.read_only {
            let _ = write!(profile, " (subpath {})", literal(path));
        }
        profile.push_str(")\n");
    }
    if !policy.hidden.is_empty() {
        profile.push_str("(deny file-read* file-write*");
        for path in &policy.hidden {
            let _ = write!(profile, " (subpath {})", literal(path));
        }
        profile.push_str(")\n");
    }
    if policy.network {
        profile.push_str(SEATBELT_NETWORK_PROFILE);
    }
    profile
}

#[cfg(target_os = "macos")]
pub(crate) use backend::SeatbeltBackend;

#[cfg(target_os = "macos")]
mod backend {
    use std::ffi::{OsStr, OsString};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use super::seatbelt_profile;
    use crate::SandboxError;
    use crate::policy::ResolvedPolicy;

    /// Where macOS ships `sandbox-exec`.
    pub(crate) const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

    /// A prepared Seatbelt sandbox for one policy.
    #[derive(Debug)]
    pub(crate) struct SeatbeltBackend {
        profile: String,
        tmp: std::sync::Arc<tempfile::TempDir>,
        tmp_path: PathBuf,
        summary: String,
    }

    impl SeatbeltBackend {
        pub(crate) fn new(policy: &ResolvedPolicy) -> Result<Self, SandboxError> {
            let tmp = tempfile::Builder::new()
                .prefix("braincode-sandbox-tmp-")
                .tempdir()
                .map_err(|source| SandboxError::Setup {
                    what: "creating the private temp dir in the system temp dir".into(),
                    source,
                })?;
            let tmp_path =
                std::fs::canonicalize(tmp.path()).map_err(|source| SandboxError::Setup {
                    what: "resolving the private temp dir".into(),
                    source,
                })?;
            let summary = format!(
                "seatbelt (untested); writes: project, private temp dir; read-only: {} protected paths; hidden: {} paths; network: {}",
                policy.read_only.len(),
                policy.hidden.len(),
                if policy.network { "on" } else { "off" }
            );
            Ok(Self {
                profile: seatbelt_profile(policy, &tmp_path),
                tmp: std::sync::Arc::new(tmp),
                tmp_path,
                summary,
            })
        }

        pub(crate) fn describe(&self) -> String {
            self.summary.clone()
        }

        pub(crate) fn command(&self, program: &OsStr, args: &[OsString], cwd: &Path) -> Command {
            let _ = &self.tmp;
            let mut command = Command::new(SANDBOX_EXEC);
            command
                .arg("-p")
                .arg(&self.profile)
                .arg("--")
                .arg(program)
                .args(args)
                .current_dir(cwd)
                .env("TMPDIR", &self.tmp_path);
            command
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn profile_lists_roots_protected_and_hidden_paths() {
        let policy = ResolvedPolicy {
            writable: vec![PathBuf::from("/Users/me/proj")],
            read_only: vec![PathBuf::from("/Users/me/proj/.git")],
            hidden: vec![
                PathBuf::from("/Users/me/.ssh"),
                PathBuf::from("/Users/me/we\"ird"),
            ],
            network: false,
        };
        let profile = seatbelt_profile(&policy, Path::new("/private/tmp/x"));
        assert!(profile.starts_with("(version 1)\n(deny default)"));
        assert!(profile.contains(
            r#"(allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp/x"))"#
        ));
        assert!(profile.contains(r#"(deny file-write* (subpath "/Users/me/proj/.git"))"#));
        assert!(profile.contains(r#"(subpath "/Users/me/.ssh") (subpath "/Users/me/we\"ird")"#));
        assert!(!profile.contains("network-outbound"));
        let open = ResolvedPolicy {
            network: true,
            ..policy
        };
        assert!(seatbelt_profile(&open, Path::new("/tmp")).contains("(allow network-outbound)"));
        assert_eq!(profile.matches('(').count(), profile.matches(')').count());
    }
}
