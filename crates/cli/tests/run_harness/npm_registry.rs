//! A Node package whose one dependency is served by a 127.0.0.1 stand-in registry, reached by
//! a name of this machine (not `localhost`, which sandboxed commands reach on their own
//! loopback): what `--fetch-deps` tests fetch through the network allowlist.
#![allow(clippy::print_stderr)] // a skipped test says why

use braincode_test_support::TempRepo;

/// A name of this machine that resolves to 127.0.0.1 and is not `localhost` (which sandboxed
/// commands reach on their own loopback, never through the proxy).
pub fn loopback_name() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/etc/hostname")
        .ok()?
        .trim()
        .to_string();
    let resolved = (name.as_str(), 80)
        .to_socket_addrs()
        .ok()?
        .collect::<Vec<_>>();
    (!name.is_empty() && resolved.iter().any(|a| a.ip().is_loopback())).then_some(name)
}

/// The host name the stand-in registry is reached by, when this machine can run the npm
/// tests (its name resolves to 127.0.0.1 and npm is installed); otherwise why not, printed.
pub fn usable_host() -> Option<String> {
    let Some(host) = loopback_name() else {
        eprintln!("skipped: this machine's name does not resolve to 127.0.0.1");
        return None;
    };
    if std::process::Command::new("npm")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: npm is not installed (scripts/setup.sh --tests installs it)");
        return None;
    }
    Some(host)
}

/// A 127.0.0.1 "registry" that serves one tarball and counts the requests for it.
pub async fn tarball_registry(
    tarball: Vec<u8>,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (tarball, counted) = (tarball.clone(), counted.clone());
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let found = String::from_utf8_lossy(&head).contains(".tgz");
                let (status, body) = if found {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    ("200 OK", tarball)
                } else {
                    ("404 Not Found", b"{}".to_vec())
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
            });
        }
    });
    (port, hits)
}

/// The project (committed) and the registry's port and tarball request count.
pub async fn project_needing_a_package(
    host: &str,
) -> (
    TempRepo,
    u16,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    // The package, packed as npm packs it.
    let work = tempfile::tempdir().unwrap();
    let package = work.path().join("package");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name": "padfixture", "version": "1.0.0", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        package.join("index.js"),
        "module.exports = (s, n) => ' '.repeat(Math.max(0, n - s.length)) + s;\n",
    )
    .unwrap();
    let tgz = work.path().join("padfixture-1.0.0.tgz");
    let packed = std::process::Command::new("tar")
        .args([
            "-czf",
            tgz.to_str().unwrap(),
            "-C",
            work.path().to_str().unwrap(),
            "package",
        ])
        .status()
        .unwrap();
    assert!(packed.success());
    let tarball = std::fs::read(&tgz).unwrap();
    let integrity = std::process::Command::new("python3")
        .args([
            "-c",
            "import base64,hashlib,sys;print('sha512-'+base64.b64encode(hashlib.sha512(open(sys.argv[1],'rb').read()).digest()).decode())",
            tgz.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let integrity = String::from_utf8(integrity.stdout)
        .unwrap()
        .trim()
        .to_string();
    let (port, hits) = tarball_registry(tarball).await;

    let repo = TempRepo::new();
    repo.write(
        "package.json",
        r#"{"name": "app", "version": "1.0.0", "scripts": {"test": "node test.js"}, "dependencies": {"padfixture": "1.0.0"}}"#,
    );
    let resolved = format!("http://{host}:{port}/padfixture/-/padfixture-1.0.0.tgz");
    repo.write(
        "package-lock.json",
        &serde_json::json!({
            "name": "app", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
            "packages": {
                "": {"name": "app", "version": "1.0.0", "dependencies": {"padfixture": "1.0.0"}},
                "node_modules/padfixture": {"version": "1.0.0", "resolved": resolved, "integrity": integrity}
            }
        })
        .to_string(),
    );
    repo.write(
        "test.js",
        "const pad = require('padfixture');\nif (pad('a', 3) !== '  a') { console.error('bad pad'); process.exit(1); }\nconsole.log('ok');\n",
    );
    repo.write(".gitignore", "node_modules/\n");
    repo.commit("app");
    (repo, port, hits)
}
