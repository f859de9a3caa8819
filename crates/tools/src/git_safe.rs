//! Braincode's own git calls, hardened against the repository they run in.
//!
//! A repository's `.git/config` can name programs that git runs on ordinary read queries:
//! `core.fsmonitor` (on `status`/`diff`), filter drivers (`filter.<x>.clean`/`process`, run
//! on stat-dirty files), `diff.<x>.textconv`/`command`, `diff.external`, pagers, credential
//! helpers, transports. A read-only run must not execute any of them, so every git process
//! Braincode starts on its own goes through [`git_command`]: those settings are overridden on
//! the command line (which beats repository config and is passed down to git's own child
//! processes), optional locks are off, and nothing can prompt.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Settings forced on every git call: repository-controlled executables off.
pub const GIT_SAFETY_CONFIG: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.editor=false",
    "core.alternateRefsCommand=",
    "sequence.editor=false",
    "diff.external=",
    "credential.helper=",
    "gpg.program=false",
    "protocol.allow=never",
    "core.quotepath=off",
];

/// Driver settings that name a program (`filter.<x>.clean`, `diff.<x>.textconv`, …): each one
/// the repository defines is overridden with an empty value, which switches it off.
const DRIVER_KEY_PATTERN: &str =
    r"^(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)$";

/// How long listing the repository's driver settings may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// A `git` command for `root` with every repository-controlled executable disabled; add the
/// subcommand and its arguments. Use `tokio::process::Command::from` for async callers.
pub fn git_command(root: &Path) -> Command {
    let mut command = Command::new("git");
    command.current_dir(root).arg("--no-pager");
    for setting in GIT_SAFETY_CONFIG {
        command.arg("-c").arg(setting);
    }
    for key in driver_keys(root) {
        command.arg("-c").arg(format!("{key}="));
        // A filter marked required would turn the switched-off driver into an error.
        if let Some(driver) = key
            .strip_prefix("filter.")
            .and_then(|rest| rest.rsplit_once('.'))
            .map(|(driver, _)| driver)
        {
            command
                .arg("-c")
                .arg(format!("filter.{driver}.required=false"));
        }
    }
    command
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_PAGER", "cat")
        .env("PAGER", "cat")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_ASKPASS")
        .env_remove("SSH_ASKPASS")
        .env_remove("GIT_SSH")
        .env_remove("GIT_SSH_COMMAND")
        .env_remove("GIT_PROXY_COMMAND")
        .stdin(Stdio::null());
    command
}

/// The driver keys the repository's configuration defines (reading configuration runs
/// nothing). A listing that fails or hangs yields none; the fixed settings still apply.
fn driver_keys(root: &Path) -> Vec<String> {
    let mut command = Command::new("git");
    command
        .current_dir(root)
        .args([
            "-c",
            "core.fsmonitor=false",
            "config",
            "--null",
            "--name-only",
        ])
        .args(["--get-regexp", DRIVER_KEY_PATTERN])
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(mut child) = command.spawn() else {
        return Vec::new();
    };
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < LIST_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let mut stdout = Vec::new();
    if let Some(mut pipe) = child.stdout.take() {
        let _ = std::io::Read::read_to_end(&mut pipe, &mut stdout);
    }
    stdout
        .split(|byte| *byte == 0)
        .filter_map(|key| std::str::from_utf8(key).ok())
        .map(|key| key.trim().to_string())
        // A key is passed back as one argument: refuse anything that could not be one.
        .filter(|key| !key.is_empty() && !key.contains(['=', '\n']))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(root)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn lists_driver_keys_and_overrides_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        git(root, &["config", "filter.evil.clean", "touch x"]);
        git(root, &["config", "diff.evil.textconv", "touch y"]);
        git(root, &["config", "user.name", "n"]);
        let mut keys = driver_keys(root);
        keys.sort();
        assert_eq!(keys, ["diff.evil.textconv", "filter.evil.clean"]);
        let command = git_command(root);
        let args: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"filter.evil.clean=".to_string()), "{args:?}");
        assert!(args.contains(&"core.fsmonitor=false".to_string()));
    }

    #[test]
    fn not_a_repository_has_no_driver_keys() {
        let dir = tempfile::tempdir().unwrap();
        assert!(driver_keys(dir.path()).is_empty());
    }
}
