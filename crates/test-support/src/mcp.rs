//! The MCP test server (`braincode-mcp-test-server`): where its binary is, and an HTTP
//! instance of it that lives as long as the test holds it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The test server's binary name.
pub const TEST_SERVER_BIN: &str = "braincode-mcp-test-server";

/// The path of `braincode-mcp-test-server`, next to the running test executable
/// (`target/<profile>/`). Cargo does not build a dependency's binaries for another crate's
/// tests, so the first call in a process runs `cargo build -p braincode-test-support --bin
/// braincode-mcp-test-server` in the same target directory and profile: it builds a missing
/// binary and rebuilds a stale one (a no-op, a fraction of a second, when it is up to date).
/// Panics, saying why, when the build fails (or cargo cannot be run and there is no binary).
pub fn test_server_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(find_or_build).clone()
}

fn find_or_build() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    let mut dir = exe
        .parent()
        .expect("the test executable is in a directory")
        .to_path_buf();
    // Test and bench executables live in target/<profile>/deps.
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    let binary = dir.join(TEST_SERVER_BIN);
    build(&dir, binary.is_file());
    assert!(
        binary.is_file(),
        "`{TEST_SERVER_BIN}` was built but is not at {}",
        binary.display()
    );
    binary
}

/// Builds the server for the profile of `profile_dir` (`target/debug`, `target/release`, …).
/// Cargo does nothing when it is up to date, and keeps it up to date when its sources change.
fn build(profile_dir: &Path, exists: bool) {
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_string();
    let target_dir = profile_dir
        .parent()
        .map(Path::to_path_buf)
        .expect("the profile directory is inside a target directory");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--quiet",
            "-p",
            "braincode-test-support",
            "--bin",
            TEST_SERVER_BIN,
        ])
        .env("CARGO_TARGET_DIR", &target_dir);
    match profile.as_str() {
        "debug" => {}
        "release" => {
            command.arg("--release");
        }
        other => {
            command.args(["--profile", other]);
        }
    }
    let status = command.status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "building `{TEST_SERVER_BIN}` failed ({status}); run `cargo build -p \
             braincode-test-support --bin {TEST_SERVER_BIN}` to see why"
        ),
        // No cargo here (a test binary run by hand): the binary we have will do.
        Err(_) if exists => {}
        Err(e) => panic!("could not run cargo to build `{TEST_SERVER_BIN}`: {e}"),
    }
}

/// The test server over streamable HTTP on 127.0.0.1, killed on drop.
pub struct HttpTestServer {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl HttpTestServer {
    /// Starts the server with `env` added to its environment, and waits (up to 20 s) until it
    /// listens.
    pub fn start(env: &[(&str, &str)]) -> HttpTestServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let addr_file = dir.path().join("addr");
        let mut child = Command::new(test_server_binary())
            .arg("--http")
            .arg(&addr_file)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn the MCP test server");
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = loop {
            if let Ok(addr) = std::fs::read_to_string(&addr_file)
                && !addr.trim().is_empty()
            {
                break addr.trim().to_string();
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the MCP test server exited before listening: {status}");
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the MCP test server did not listen within 20 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        HttpTestServer {
            child,
            addr,
            _dir: dir,
        }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for HttpTestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
