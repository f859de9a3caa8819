//! The macOS backend: a Seatbelt profile run with `sandbox-exec -p`.
//!
//! UNTESTED: written against Apple's Seatbelt (SBPL) conventions and compiled on Linux only
//! for the profile text (which the unit tests check); nobody has run it on a Mac yet. In SBPL
//! the last matching rule wins, so the profile first allows reads everywhere, then writes in
//! the writable roots, then denies access to secret files and writes to protected paths, then
//! any access to hidden ones. Unlike Linux, Seatbelt matches paths by regular expression, so
//! the lists of [`crate::lists`] hold at any depth and for files created later by
//! construction: each list becomes one case-insensitive regular expression per writable root.
//! UNIX sockets: only the ones a command binds in a writable root or its temp dir, and the
//! allowed ones (plus `mDNSResponder` for name lookups when the network is on).

use std::fmt::Write as _;
use std::path::Path;

use crate::lists::{PROTECTED_PROJECT_PATHS, SECRET_FILE_EXCEPTIONS, SECRET_FILE_NAMES};
use crate::policy::ResolvedPolicy;

/// The socket macOS resolves names through; needed whenever the network is on.
const MDNS_RESPONDER: &str = "/private/var/run/mDNSResponder";

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
(allow system-socket (socket-domain AF_UNIX))
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

/// `text` with every character a regular expression gives a meaning escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A list pattern (see [`crate::lists`]) as a regular expression: letters match either case,
/// `*` is one or more characters of one path component.
fn pattern_regex(pattern: &str) -> String {
    let mut out = String::new();
    for c in pattern.chars() {
        match c {
            '*' => out.push_str("[^/]+"),
            c if c.is_ascii_alphabetic() => {
                let _ = write!(
                    out,
                    "[{}{}]",
                    c.to_ascii_lowercase(),
                    c.to_ascii_uppercase()
                );
            }
            c => out.push_str(&regex_escape(&c.to_string())),
        }
    }
    out
}

/// `(regex #"^ROOT/(.*/)?(P1|P2|…)TAIL$")` for every writable root whose path can be written
/// in a regex literal (one holding `"` is skipped: the literal lists still cover it).
fn under_roots(policy: &ResolvedPolicy, patterns: &[&str], tail: &str) -> String {
    let names: Vec<String> = patterns.iter().map(|p| pattern_regex(p)).collect();
    let mut out = String::new();
    for root in &policy.writable {
        let root = root.to_string_lossy();
        if root.contains('"') {
            continue;
        }
        let _ = write!(
            out,
            " (regex #\"^{}/(.*/)?({}){tail}$\")",
            regex_escape(&root),
            names.join("|")
        );
    }
    out
}

/// The full profile for `policy`, with `tmp` as the private temp dir.
pub(crate) fn seatbelt_profile(policy: &ResolvedPolicy, tmp: &Path) -> String {
    let mut profile = String::from(SEATBELT_BASE_PROFILE);
    let roots: Vec<&Path> = policy
        .writable
        .iter()
        .map(std::path::PathBuf::as_path)
        .chain([tmp])
        .collect();
    profile.push_str("(allow file-write*");
    for root in &roots {
        let _ = write!(profile, " (subpath {})", literal(root));
    }
    profile.push_str(")\n");
    let secrets = under_roots(policy, SECRET_FILE_NAMES, "");
    if !secrets.is_empty() {
        let _ = writeln!(profile, "(deny file-read* file-write*{secrets})");
        let exceptions = under_roots(policy, SECRET_FILE_EXCEPTIONS, "");
        let _ = writeln!(profile, "(allow file-read* file-write*{exceptions})");
    }
    // After the exceptions, so a template inside a protected directory stays read-only.
    let protected = under_roots(policy, PROTECTED_PROJECT_PATHS, "(/.*)?");
    if !policy.read_only.is_empty() || !protected.is_empty() {
        profile.push_str("(deny file-write*");
        for path in &policy.read_only {
            let _ = write!(profile, " (subpath {})", literal(path));
        }
        profile.push_str(&protected);
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
        // The network rules above allow every UNIX socket too: take the host's back.
        profile.push_str("(deny network-outbound (remote unix-socket (subpath \"/\")))\n");
        let _ = writeln!(
            profile,
            "(allow network-outbound (remote unix-socket (path-literal {})))",
            literal(Path::new(MDNS_RESPONDER))
        );
    }
    // The sandbox's own sockets (a project's test server) and the allowed host ones.
    profile.push_str("(allow network-bind network-outbound");
    for root in &roots {
        let _ = write!(
            profile,
            " (local unix-socket (subpath {r})) (remote unix-socket (subpath {r}))",
            r = literal(root)
        );
    }
    profile.push_str(")\n");
    if !policy.sockets.is_empty() {
        profile.push_str("(allow network-outbound");
        for socket in &policy.sockets {
            let _ = write!(
                profile,
                " (remote unix-socket (path-literal {}))",
                literal(socket)
            );
        }
        profile.push_str(")\n");
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
            read_only_project: None,
            read_only: vec![PathBuf::from("/Users/me/proj/.git")],
            hidden: vec![
                PathBuf::from("/Users/me/.ssh"),
                PathBuf::from("/Users/me/we\"ird"),
            ],
            network: false,
            sockets: vec![PathBuf::from("/Users/me/.docker/run/docker.sock")],
        };
        let profile = seatbelt_profile(&policy, Path::new("/private/tmp/x"));
        assert!(profile.starts_with("(version 1)\n(deny default)"));
        assert!(profile.contains(
            r#"(allow file-write* (subpath "/Users/me/proj") (subpath "/private/tmp/x"))"#
        ));
        assert!(profile.contains(r#"(deny file-write* (subpath "/Users/me/proj/.git")"#));
        assert!(profile.contains(r#"(subpath "/Users/me/.ssh") (subpath "/Users/me/we\"ird")"#));
        assert!(!profile.contains("(allow network-outbound)"));
        // Own sockets and the allowed one, nothing else.
        assert!(profile.contains(
            r#"(allow network-bind network-outbound (local unix-socket (subpath "/Users/me/proj")) (remote unix-socket (subpath "/Users/me/proj"))"#
        ));
        assert!(profile.contains(
            r#"(allow network-outbound (remote unix-socket (path-literal "/Users/me/.docker/run/docker.sock")))"#
        ));
        // Last match wins: secrets, then their templates, then protected paths, then hidden.
        let at = |needle: &str| profile.find(needle).unwrap_or(usize::MAX);
        let secrets = at("(deny file-read* file-write* (regex");
        let templates = at("(allow file-read* file-write* (regex");
        let protected = at("(deny file-write*");
        let hidden = at("(deny file-read* file-write* (subpath");
        assert!(secrets < templates && templates < protected && protected < hidden);
        assert_eq!(profile.matches('(').count(), profile.matches(')').count());

        let open = ResolvedPolicy {
            network: true,
            ..policy
        };
        let open = seatbelt_profile(&open, Path::new("/tmp"));
        let allow = open.find("(allow network-outbound)").unwrap_or(usize::MAX);
        let deny_sockets = open
            .find(r#"(deny network-outbound (remote unix-socket (subpath "/")))"#)
            .unwrap_or(0);
        let mdns = open.find(MDNS_RESPONDER).unwrap_or(0);
        assert!(allow < deny_sockets && deny_sockets < mdns, "{open}");
    }

    /// The regular expressions of a profile, as `regex` reads them (SBPL's `#"…"` literals
    /// pass backslashes through).
    fn regexes(profile: &str, rule: &str) -> Vec<regex::Regex> {
        let line = profile
            .lines()
            .find(|l| l.starts_with(rule))
            .unwrap_or_default();
        line.split("(regex #\"")
            .skip(1)
            .filter_map(|part| part.split("\")").next())
            .map(|text| regex::Regex::new(text).unwrap_or_else(|e| panic!("{text}: {e}")))
            .collect()
    }

    #[test]
    fn profile_regexes_cover_the_lists_at_any_depth() {
        let policy = ResolvedPolicy {
            writable: vec![PathBuf::from("/Users/me/my.proj")],
            read_only_project: None,
            read_only: Vec::new(),
            hidden: Vec::new(),
            network: false,
            sockets: Vec::new(),
        };
        let profile = seatbelt_profile(&policy, Path::new("/private/tmp/x"));
        let matches =
            |rule: &str, path: &str| regexes(&profile, rule).iter().any(|r| r.is_match(path));
        let secret = "(deny file-read* file-write* (regex";
        let template = "(allow file-read* file-write* (regex";
        let protected = "(deny file-write*";
        for path in [
            "/Users/me/my.proj/.env",
            "/Users/me/my.proj/a/b/c/d/e/f/g/h/i/j/k/l/m/.ENV.local",
            "/Users/me/my.proj/node_modules/x/.env",
            "/Users/me/my.proj/config/master.key",
            "/Users/me/my.proj/infra/terraform.tfvars",
            "/Users/me/my.proj/web/.aws/credentials",
        ] {
            assert!(matches(secret, path), "{path}");
        }
        for path in [
            "/Users/me/my.proj/src/env.rs",
            "/Users/me/my.proj/.envrc",
            "/Users/me/myXproj/.env",
            "/Users/me/other/.env",
        ] {
            assert!(!matches(secret, path), "{path}");
        }
        assert!(matches(template, "/Users/me/my.proj/deep/.env.example"));
        for path in [
            "/Users/me/my.proj/.git",
            "/Users/me/my.proj/.git/hooks/pre-commit",
            "/Users/me/my.proj/vendor/x/.git/config",
            "/Users/me/my.proj/web/.npmrc",
            "/Users/me/my.proj/.vscode/tasks.json",
            "/Users/me/my.proj/a/.github/workflows/ci.yml",
            "/Users/me/my.proj/.yarnrc.yml",
        ] {
            assert!(matches(protected, path), "{path}");
        }
        for path in [
            "/Users/me/my.proj/.gitignore",
            "/Users/me/my.proj/.github/CODEOWNERS",
            "/Users/me/my.proj/src/main.rs",
        ] {
            assert!(!matches(protected, path), "{path}");
        }
    }
}
