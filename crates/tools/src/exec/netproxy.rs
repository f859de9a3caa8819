//! The network allowlist for sandboxed commands: an HTTP(S) proxy outside the sandbox, the only
//! route out of its network namespace, that lets through only the hosts a list allows.
//!
//! - `CONNECT host:port` (HTTPS, and anything tunnelled) and absolute-form `GET http://host/…`
//!   (plain HTTP) are judged by the **host name** the client asked for; an IP literal is
//!   refused (an allowlist of names would otherwise be bypassed by any address), and so is any
//!   name not on the list. A redirect to another host is a new request, judged again.
//! - Every decision, allowed or refused, goes to the caller's `on_decision` (the run journals
//!   it).
//! - The proxy listens on a UNIX socket that the sandbox binds in; inside, a small bridge
//!   (`braincode __net-bridge`) listens on the sandbox's private loopback and forwards there,
//!   and the command gets `HTTP(S)_PROXY` pointing at it.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener};

/// The hosts of the package registries, per ecosystem: what `registries` allows.
pub const REGISTRY_HOSTS: &[(&str, &[&str])] = &[
    (
        "rust",
        &[
            "index.crates.io",
            "static.crates.io",
            "crates.io",
            "static.rust-lang.org",
        ],
    ),
    ("python", &["pypi.org", "files.pythonhosted.org"]),
    ("node", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    (
        "go",
        &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
    ),
];

/// The longest request head the proxy reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Host names a sandboxed command may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    /// Exact names, or `*.suffix` for every name under `suffix`.
    hosts: Vec<String>,
}

impl Allowlist {
    /// The list of `hosts` (`*.example.org` allows every name under `example.org`).
    pub fn new<I, S>(hosts: I) -> Allowlist
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut hosts: Vec<String> = hosts
            .into_iter()
            .map(|h| h.as_ref().trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        hosts.sort();
        hosts.dedup();
        Allowlist { hosts }
    }

    /// Every registry of every ecosystem.
    pub fn registries() -> Allowlist {
        Allowlist::new(REGISTRY_HOSTS.iter().flat_map(|(_, hosts)| hosts.iter()))
    }

    /// This list with `more` added.
    pub fn with<I, S>(&self, more: I) -> Allowlist
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut hosts = self.hosts.clone();
        hosts.extend(more.into_iter().map(|h| h.as_ref().to_string()));
        Allowlist::new(hosts)
    }

    /// The names, sorted.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Whether `host` may be reached; `Err` says why not.
    pub fn check(&self, host: &str) -> Result<(), String> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if bare.parse::<IpAddr>().is_ok() {
            return Err(format!(
                "{host} is an IP address: only host names on the allowlist are reached"
            ));
        }
        let listed = self
            .hosts
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(suffix) => host.ends_with(&format!(".{suffix}")),
                None => *allowed == host,
            });
        if listed {
            Ok(())
        } else {
            Err(format!("{host} is not on the network allowlist"))
        }
    }
}

/// One connection the proxy was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetDecision {
    /// The host name (or address) asked for.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Whether it was let through.
    pub allowed: bool,
    /// Why it was refused, or why the allowed connection failed.
    pub reason: Option<String>,
}

/// Told of every decision.
pub type DecisionSink = Arc<dyn Fn(NetDecision) + Send + Sync>;

/// A running proxy on a UNIX socket; stops when dropped.
pub struct NetProxy {
    dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl NetProxy {
    /// Starts a proxy for `allow` on a fresh UNIX socket in a private directory of the system
    /// temp dir.
    pub fn start(allow: Allowlist, on_decision: DecisionSink) -> std::io::Result<NetProxy> {
        let dir = tempfile::Builder::new()
            .prefix("braincode-net-")
            .tempdir()?;
        let listener = UnixListener::bind(dir.path().join("proxy.sock"))?;
        let allow = Arc::new(allow);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (allow, on_decision) = (allow.clone(), on_decision.clone());
                tokio::spawn(async move {
                    let _ = serve(stream, &allow, &on_decision).await;
                });
            }
        });
        Ok(NetProxy { dir, task })
    }

    /// The socket the sandbox binds in.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("proxy.sock")
    }

    /// The directory holding the socket.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for NetProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves one client connection (a UNIX socket from the bridge, or any stream in tests).
pub async fn serve<S>(
    mut client: S,
    allow: &Allowlist,
    on_decision: &DecisionSink,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(end) = find(&head, b"\r\n\r\n") {
            break end + 4;
        }
        if head.len() > MAX_HEAD_BYTES {
            return refuse(&mut client, 431, "the request head is too large").await;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&chunk[..n]);
    };
    let (head, early_body) = head.split_at(end);
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (method, target, version) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let (host, port, path) = if method.eq_ignore_ascii_case("CONNECT") {
        match split_host_port(target, 443) {
            Some((host, port)) => (host, port, None),
            None => return refuse(&mut client, 400, "CONNECT needs host:port").await,
        }
    } else if let Some(rest) = target.strip_prefix("http://") {
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        match split_host_port(authority, 80) {
            Some((host, port)) => (host, port, Some(path.to_string())),
            None => return refuse(&mut client, 400, "no host in the request").await,
        }
    } else {
        return refuse(
            &mut client,
            400,
            "only CONNECT and absolute http:// requests go through this proxy",
        )
        .await;
    };
    if let Err(reason) = allow.check(&host) {
        on_decision(NetDecision {
            host,
            port,
            allowed: false,
            reason: Some(reason.clone()),
        });
        return refuse(&mut client, 403, &format!("braincode: {reason}")).await;
    }
    let upstream = match TcpStream::connect((host.as_str(), port)).await {
        Ok(upstream) => upstream,
        Err(err) => {
            let reason = format!("cannot connect to {host}:{port}: {err}");
            on_decision(NetDecision {
                host,
                port,
                allowed: true,
                reason: Some(reason.clone()),
            });
            return refuse(&mut client, 502, &reason).await;
        }
    };
    on_decision(NetDecision {
        host: host.clone(),
        port,
        allowed: true,
        reason: None,
    });
    let mut upstream = upstream;
    match path {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            if !early_body.is_empty() {
                upstream.write_all(early_body).await?;
            }
        }
        Some(path) => {
            // Origin-form to the server; the proxy's own headers stay here; one request per
            // connection, so every request is judged.
            let mut forward = format!("{method} {path} {version}\r\n");
            for line in lines.filter(|l| !l.is_empty()) {
                let name = line
                    .split(':')
                    .next()
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                    continue;
                }
                forward.push_str(line);
                forward.push_str("\r\n");
            }
            forward.push_str("Connection: close\r\n\r\n");
            upstream.write_all(forward.as_bytes()).await?;
            upstream.write_all(early_body).await?;
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
    Ok(())
}

async fn refuse<S: AsyncWrite + Unpin>(
    client: &mut S,
    status: u16,
    reason: &str,
) -> std::io::Result<()> {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("{reason}\n");
    let response = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// `host[:port]` or `[v6]:port`.
fn split_host_port(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => port.parse().ok()?,
            None => default_port,
        };
        return Some((format!("[{host}]"), port));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => (host, port.parse().ok()?),
        None => (authority, default_port),
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_on_the_list_pass_and_addresses_never_do() {
        let allow = Allowlist::new(["pypi.org", "*.crates.io", "localhost"]);
        assert!(allow.check("pypi.org").is_ok());
        assert!(allow.check("PyPI.org.").is_ok());
        assert!(allow.check("static.crates.io").is_ok());
        assert!(allow.check("crates.io").is_err());
        assert!(allow.check("evilpypi.org").is_err());
        assert!(allow.check("pypi.org.evil.com").is_err());
        for address in ["127.0.0.1", "[::1]", "::1", "10.0.0.1"] {
            let refused = allow.check(address).unwrap_err();
            assert!(refused.contains("IP address"), "{refused}");
        }
        assert!(Allowlist::registries().check("registry.npmjs.org").is_ok());
        assert_eq!(
            split_host_port("[::1]:8080", 80),
            Some(("[::1]".into(), 8080))
        );
        assert_eq!(split_host_port("a.b", 443), Some(("a.b".into(), 443)));
        assert_eq!(split_host_port("user@a.b:81", 80), Some(("a.b".into(), 81)));
        assert_eq!(split_host_port("a.b:x", 80), None);
    }
}
