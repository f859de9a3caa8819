//! Shared fixtures for the attack tests: a fake project, home and Braincode home with marker
//! secrets, and helpers to run a script in a sandbox and to find processes by a marker.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use braincode_sandbox::{Sandbox, SandboxKind, SandboxPolicy};

/// The name libtest gives the test `function` of the module at `module_path` (pass
/// `module_path!()`; its first segment is the test binary, which test names leave out), for
/// a test that re-runs one test of this binary in a child process with `--exact`.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}

/// A value unique to this call, to name markers and files.
pub fn unique() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}x{}x{}",
        std::process::id(),
        nanos % 1_000_000_000,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// A scratch directory outside `/tmp` (so bubblewrap's private `/tmp` does not hide it by
/// accident: the sandbox must hide it on purpose): `/var/tmp`, else Cargo's target directory
/// (which is under `/tmp` itself when the checkout is).
pub fn scratch() -> tempfile::TempDir {
    let builder = || {
        let mut builder = tempfile::Builder::new();
        builder.prefix("sbx-");
        builder
    };
    builder()
        .tempdir_in("/var/tmp")
        .or_else(|_| builder().tempdir_in(env!("CARGO_TARGET_TMPDIR")))
        .expect("scratch dir in /var/tmp or CARGO_TARGET_TMPDIR")
}

/// A project with `.git`, `.env` and sources; a home with `~/.ssh/id_rsa`; a Braincode home
/// with `auth.json`; and an unrelated directory outside all of them. Every secret holds
/// `marker`.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub project: PathBuf,
    pub home: PathBuf,
    pub bc_home: PathBuf,
    pub outside: PathBuf,
    pub marker: String,
    pub git_config: String,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = scratch();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let marker = format!("SECRET-{}", unique());
        let project = base.join("project");
        let home = base.join("home");
        let bc_home = home.join(".braincode");
        let outside = base.join("outside");
        for d in [
            project.join(".git/hooks"),
            project.join("src"),
            home.join(".ssh"),
            bc_home.clone(),
            outside.clone(),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let git_config = "[core]\n\tbare = false\n".to_string();
        std::fs::write(project.join(".git/config"), &git_config).unwrap();
        std::fs::write(project.join(".env"), format!("API_KEY={marker}-dotenv\n")).unwrap();
        std::fs::write(project.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), format!("{marker}-ssh\n")).unwrap();
        std::fs::write(
            bc_home.join("auth.json"),
            format!("{{\"key\":\"{marker}-auth\"}}\n"),
        )
        .unwrap();
        Self {
            _dir: dir,
            project,
            home,
            bc_home,
            outside,
            marker,
            git_config,
        }
    }

    pub fn policy(&self, network: bool) -> SandboxPolicy {
        let mut policy = SandboxPolicy::for_project(&self.project, Some(&self.home), &self.bc_home);
        policy.network = network;
        policy
    }

    pub fn sandbox(&self, kind: SandboxKind, network: bool) -> Sandbox {
        sandbox(kind, self.policy(network))
    }
}

/// A sandbox of `kind`; fails the test when that backend does not work on this machine, unless
/// `BRAINCODE_SANDBOX_TEST_ALLOW_MISSING=1` (for machines known to lack it).
pub fn sandbox(kind: SandboxKind, policy: SandboxPolicy) -> Sandbox {
    match Sandbox::with_kind(policy, kind) {
        Ok(sandbox) => {
            assert_eq!(sandbox.kind(), kind);
            sandbox
        }
        Err(e) => panic!("the {kind} backend must work on this machine: {e}"),
    }
}

/// Whether `kind` should be skipped (only when explicitly allowed to be missing).
pub fn skip(kind: SandboxKind) -> bool {
    std::env::var_os("BRAINCODE_SANDBOX_TEST_ALLOW_MISSING").is_some()
        && Sandbox::with_kind(
            SandboxPolicy::for_project(Path::new("/tmp"), None, Path::new("/nonexistent")),
            kind,
        )
        .is_err()
}

/// Runs `bash -c script` in the sandbox with cwd = project; returns stdout + stderr as text.
pub fn run(sandbox: &Sandbox, script: &str) -> (Output, String) {
    let args = [OsString::from("-c"), OsString::from(script)];
    let mut command = sandbox.command(OsStr::new("bash"), &args, &sandbox.policy().project_root);
    command.stdin(Stdio::null());
    let output = command.output().expect("spawn the sandboxed command");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output, text)
}

/// Pids of processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Zombies have an empty cmdline; only live processes count.
        if cmdline.contains(marker) && !cmdline.contains("--exact") {
            pids.push(pid);
        }
    }
    pids
}

/// Polls until `check` holds or `limit` passes; returns whether it held.
pub fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    check()
}

/// Kills leftover test processes by pid (only ones this test started, found by marker).
pub fn kill_pids(pids: &[u32]) {
    for pid in pids {
        let _ = std::process::Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status();
    }
}

/// A `sleep` duration that doubles as a unique marker on its command line.
pub fn sleep_marker() -> String {
    let n: u64 = unique()
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    format!("{}.{:06}", 900_000 + n % 90_000, n % 1_000_000)
}
