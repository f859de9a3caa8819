//! Host UNIX sockets under bubblewrap: refused unless allowed.
//!
//! Connecting to a UNIX socket needs only its path, and a read-only mount does not stop it,
//! so a Docker socket in `$HOME` would be a way out of the sandbox. `/run`, `/var/run` and
//! `/tmp` are private to the sandbox already; every other listening socket of the host
//! (`/proc/net/unix`, read before each command) is made unreachable by mounting an empty,
//! read-only directory over the directory that holds it and binding back every other entry
//! of that directory. Sockets the policy allows are bound back too (also under `/run`).
//!
//! Not covered: sockets inside a writable root (the project's own), abstract sockets when the
//! network is allowed (without network they live in the sandbox's own network namespace),
//! and sockets bound with a relative path or directly in `/`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::policy::ResolvedPolicy;

/// Directories the bubblewrap sandbox replaces with private ones: nothing of the host's is
/// reachable there.
pub(crate) const PRIVATE_DIRS: &[&str] = &["/tmp", "/run", "/var/run", "/dev", "/proc"];

/// The paths of listening (bound, pathname) UNIX sockets in `/proc/net/unix`, as bound.
pub(crate) fn listening_paths(table: &str) -> Vec<PathBuf> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            // Num RefCount Protocol Flags Type St Inode Path: the path is what follows the
            // seventh field (it may contain spaces).
            let mut rest = line.trim_start();
            for _ in 0..7 {
                let end = rest.find(char::is_whitespace)?;
                rest = rest[end..].trim_start();
            }
            let path = rest.trim_end_matches('\n');
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// Whether `path` lies in one of the sandbox's private directories.
fn in_private_dir(path: &Path) -> bool {
    PRIVATE_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// The bubblewrap arguments that hide the host's listening sockets outside what `policy`
/// allows (see the module docs), given the socket table text.
pub(crate) fn mask_args(table: &str, policy: &ResolvedPolicy) -> Vec<OsString> {
    let mut masked: Vec<PathBuf> = Vec::new();
    for raw in listening_paths(table) {
        if in_private_dir(&raw) {
            continue; // cheap first test: most sockets live in /run
        }
        let Ok(socket) = std::fs::canonicalize(&raw) else {
            continue; // gone (a listener that unlinked its path)
        };
        let Some(parent) = socket.parent() else {
            continue;
        };
        let allowed = policy.sockets.contains(&socket)
            || policy.in_writable(&socket)
            || policy.hidden.iter().any(|h| socket.starts_with(h));
        if allowed || in_private_dir(&socket) || parent == Path::new("/") {
            continue;
        }
        if !masked.contains(&socket) {
            masked.push(socket);
        }
    }
    if masked.is_empty() {
        return Vec::new();
    }
    let mut dirs: Vec<PathBuf> = masked
        .iter()
        .filter_map(|s| s.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort_by_key(|d| d.components().count());
    dirs.dedup();
    let mut args = Vec::new();
    let arg = |args: &mut Vec<OsString>, items: &[&OsStr]| {
        args.extend(items.iter().map(|s| s.to_os_string()));
    };
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        arg(&mut args, &[OsStr::new("--tmpfs"), dir.as_os_str()]);
        for entry in entries.flatten() {
            let path = entry.path();
            if masked.contains(&path) {
                continue;
            }
            match entry.file_type() {
                Ok(t) if t.is_symlink() => {
                    if let Ok(target) = std::fs::read_link(&path) {
                        arg(
                            &mut args,
                            &[
                                OsStr::new("--symlink"),
                                target.as_os_str(),
                                path.as_os_str(),
                            ],
                        );
                    }
                }
                Ok(_) => arg(
                    &mut args,
                    &[OsStr::new("--ro-bind"), path.as_os_str(), path.as_os_str()],
                ),
                Err(_) => {}
            }
        }
        arg(&mut args, &[OsStr::new("--remount-ro"), dir.as_os_str()]);
    }
    args
}

/// The host's socket table, or an empty one when it cannot be read.
pub(crate) fn host_table() -> String {
    std::fs::read_to_string("/proc/net/unix").unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_paths_keep_spaces_and_skip_abstract_and_unbound_sockets() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            00000000ec486051: 00000003 00000000 00000000 0001 03  1612\n\
            00000000bb298a10: 00000002 00000000 00010000 0001 01 107575 /var/tmp/a b/s.sock\n\
            00000000bb298a11: 00000002 00000000 00010000 0001 01 107576 @/tmp/.X11-unix/X0\n\
            00000000bb298a12: 00000002 00000000 00010000 0001 01 107577 /run/docker.sock\n";
        assert_eq!(
            listening_paths(table),
            vec![
                PathBuf::from("/var/tmp/a b/s.sock"),
                PathBuf::from("/run/docker.sock")
            ]
        );
    }
}
