//! The sandbox's end of the network allowlist. A sandboxed command has no network of its own
//! (a private network namespace with only a loopback); the allowlist proxy runs outside and
//! listens on a UNIX socket bound into the sandbox. This bridge runs inside, as the command's
//! parent: it listens on the private loopback, forwards every connection to that socket, starts
//! the command with `HTTP(S)_PROXY` pointing at itself and exits with the command's status.
//!
//! It is the `braincode` binary itself (`braincode __net-bridge <socket> -- <program> <args…>`),
//! so nothing has to be installed for it; it uses threads and blocking I/O only.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The hidden subcommand that runs the bridge.
pub const BRIDGE_COMMAND: &str = "__net-bridge";

/// Where a command reaches the allowlist proxy from inside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRoute {
    /// The proxy's UNIX socket (also listed in the sandbox policy's allowed sockets).
    pub socket: PathBuf,
    /// The program that runs the bridge (the `braincode` binary).
    pub bridge: PathBuf,
}

impl NetRoute {
    /// `program args…` wrapped so it runs under the bridge: the program and arguments to give
    /// the sandbox instead.
    pub fn wrap(&self, program: &OsStr, args: &[OsString]) -> (OsString, Vec<OsString>) {
        let mut wrapped = vec![
            OsString::from(BRIDGE_COMMAND),
            self.socket.clone().into_os_string(),
            OsString::from("--"),
            program.to_os_string(),
        ];
        wrapped.extend(args.iter().cloned());
        (self.bridge.clone().into_os_string(), wrapped)
    }
}

/// Runs the bridge: `args` are what follows [`BRIDGE_COMMAND`] (`<socket> -- <program>
/// <args…>`). Returns the command's exit code, or why the bridge could not run it.
pub fn bridge_main(args: &[OsString]) -> Result<i32, String> {
    let [socket, dashes, program, rest @ ..] = args else {
        return Err("usage: __net-bridge <socket> -- <program> [args…]".into());
    };
    if dashes != "--" {
        return Err("usage: __net-bridge <socket> -- <program> [args…]".into());
    }
    let socket = PathBuf::from(socket);
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .map_err(|err| format!("cannot listen on the sandbox's loopback: {err}"))?;
    let port = listener.local_addr().map_err(|err| err.to_string())?.port();
    std::thread::spawn(move || accept(listener, &socket));
    let proxy = format!("http://127.0.0.1:{port}");
    let mut command = Command::new(program);
    command.args(rest);
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        command.env(name, &proxy);
    }
    // Names the sandbox's own loopback reaches directly.
    command.env("NO_PROXY", "localhost,127.0.0.1");
    command.env("no_proxy", "localhost,127.0.0.1");
    let status = command
        .status()
        .map_err(|err| format!("cannot run {}: {err}", program.to_string_lossy()))?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

fn accept(listener: TcpListener, socket: &Path) {
    for client in listener.incoming().flatten() {
        let socket = socket.to_path_buf();
        std::thread::spawn(move || {
            if let Ok(upstream) = UnixStream::connect(&socket) {
                relay(client, upstream);
            }
        });
    }
}

/// Copies both ways until each side is done.
fn relay(client: TcpStream, upstream: UnixStream) {
    let (Ok(mut client_read), Ok(mut upstream_write)) = (client.try_clone(), upstream.try_clone())
    else {
        return;
    };
    let up = std::thread::spawn(move || {
        let _ = copy(&mut client_read, &mut upstream_write);
        let _ = upstream_write.shutdown(Shutdown::Write);
    });
    let (mut upstream_read, mut client_write) = (upstream, client);
    let _ = copy(&mut upstream_read, &mut client_write);
    let _ = client_write.shutdown(Shutdown::Write);
    let _ = up.join();
}

fn copy(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<u64> {
    std::io::copy(from, to)
}
