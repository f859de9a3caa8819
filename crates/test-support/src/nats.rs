//! A real `nats-server` for tests: JetStream on, 127.0.0.1, free ports, a temporary store;
//! one server or a cluster of three. Stopped (SIGKILL) when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `nats-server` can be started here (`scripts/setup.sh --tests` installs it).
pub fn nats_server_available() -> bool {
    program().is_some()
}

fn program() -> Option<PathBuf> {
    let candidates = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("nats-server"))
        .find(|path| path.is_file())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap_or(0)
}

/// One running server.
pub struct NatsServer {
    child: Option<Child>,
    port: u16,
    args: Vec<String>,
    _store: tempfile::TempDir,
}

impl NatsServer {
    /// A single JetStream server with no authentication.
    pub fn start() -> NatsServer {
        Self::start_with(&[])
    }

    /// A single JetStream server with `extra` arguments (e.g. `--user a --pass b`).
    pub fn start_with(extra: &[&str]) -> NatsServer {
        let store = tempfile::tempdir().unwrap_or_else(|err| panic!("a temp dir: {err}"));
        let port = free_port();
        let mut args: Vec<String> = vec![
            "-js".into(),
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-sd".into(),
            store.path().display().to_string(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_string()));
        let mut server = NatsServer {
            child: None,
            port,
            args,
            _store: store,
        };
        server.restart();
        server
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Stops it at once (SIGKILL), as a crash would. The server's own pid file names the
    /// process to kill: `nats-server` on PATH may be a wrapper (a pyenv shim) whose child is
    /// the server.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = std::fs::read_to_string(self.pid_file())
                .ok()
                .and_then(|text| text.trim().parse::<i32>().ok());
            if let Some(pid) = pid.filter(|pid| *pid > 1) {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(self.pid_file());
        }
    }

    fn pid_file(&self) -> PathBuf {
        self._store.path().join("nats-server.pid")
    }

    /// Starts it again on the same port and store.
    pub fn restart(&mut self) {
        self.kill();
        let program = program().unwrap_or_else(|| {
            panic!("nats-server is not installed: run scripts/setup.sh --tests")
        });
        let child = Command::new(program)
            .args(&self.args)
            .arg("--pid")
            .arg(self.pid_file())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("starting nats-server: {err}"));
        self.child = Some(child);
        wait_for_port(self.port);
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nats-server did not listen on 127.0.0.1:{port} within 20 s");
}

/// Three JetStream servers clustered on loopback.
pub struct NatsCluster {
    /// The servers.
    pub servers: Vec<NatsServer>,
}

impl NatsCluster {
    /// Starts the three servers and waits until each listens.
    pub fn start() -> NatsCluster {
        let routes: Vec<u16> = (0..3).map(|_| free_port()).collect();
        let route_urls: Vec<String> = routes
            .iter()
            .map(|port| format!("nats-route://127.0.0.1:{port}"))
            .collect();
        let servers = (0..3)
            .map(|n| {
                let store = tempfile::tempdir().unwrap_or_else(|err| panic!("a temp dir: {err}"));
                let config = cluster_config(n, routes[n], &route_urls, store.path());
                let extra = ["-c", config.as_str()];
                NatsServer::start_with_store(&extra, store)
            })
            .collect();
        NatsCluster { servers }
    }

    /// Every server's URL, comma-separated (what `--nats` takes for a cluster).
    pub fn urls(&self) -> String {
        self.servers
            .iter()
            .map(NatsServer::url)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl NatsServer {
    fn start_with_store(extra: &[&str], store: tempfile::TempDir) -> NatsServer {
        let port = free_port();
        let mut args: Vec<String> = vec![
            "-a".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
        ];
        args.extend(extra.iter().map(|a| (*a).to_string()));
        let mut server = NatsServer {
            child: None,
            port,
            args,
            _store: store,
        };
        server.restart();
        server
    }
}

/// A config file for node `n` of a 3-node JetStream cluster (written in its store dir).
fn cluster_config(n: usize, route_port: u16, routes: &[String], store: &Path) -> String {
    let text = format!(
        "server_name: n{n}\njetstream {{ store_dir: \"{}\" }}\ncluster {{\n  name: braincode-test\n  listen: 127.0.0.1:{route_port}\n  routes: [{}]\n}}\n",
        store.display(),
        routes.join(", ")
    );
    let path = store.join("server.conf");
    std::fs::write(&path, text).unwrap_or_else(|err| panic!("writing {}: {err}", path.display()));
    path.display().to_string()
}
