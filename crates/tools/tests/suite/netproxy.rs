//! The network allowlist proxy, attacked over its real UNIX socket with raw HTTP: a host not on
//! the list, an IP literal and a redirect to another host are refused (the 127.0.0.1 servers
//! standing in for them see no connection), the allowed host is reached, and every decision is
//! reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use braincode_tools::exec::netproxy::{Allowlist, NetDecision, NetProxy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UnixStream};

/// A 127.0.0.1 server that answers every request with `response` and counts connections.
async fn server(response: String) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let response = response.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (port, hits)
}

/// Sends `request` through the proxy; the whole answer.
async fn through(proxy: &NetProxy, request: &str) -> String {
    let mut stream = UnixStream::connect(proxy.socket()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        stream.read_to_end(&mut answer),
    )
    .await;
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_listed_host_names_get_through() {
    let (allowed_port, allowed_hits) =
        server("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello".into())
            .await;
    let (target_port, target_hits) =
        server("HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nsecret".into())
            .await;
    let (redirect_port, _) = server(format!(
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{target_port}/loot\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ))
    .await;
    let decisions: Arc<Mutex<Vec<NetDecision>>> = Arc::default();
    let seen = decisions.clone();
    let proxy = NetProxy::start(
        Allowlist::new(["localhost"]),
        Arc::new(move |d| seen.lock().unwrap().push(d)),
    )
    .unwrap();

    // The allowed name, plain HTTP (absolute form) and tunnelled (CONNECT).
    let answer = through(
        &proxy,
        &format!("GET http://localhost:{allowed_port}/ HTTP/1.1\r\nHost: localhost\r\nProxy-Connection: keep-alive\r\n\r\n"),
    )
    .await;
    assert!(answer.ends_with("hello"), "{answer}");
    let answer = through(
        &proxy,
        &format!("CONNECT localhost:{allowed_port} HTTP/1.1\r\nHost: localhost\r\n\r\nGET / HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    )
    .await;
    assert!(
        answer.starts_with("HTTP/1.1 200 Connection established"),
        "{answer}"
    );
    assert!(answer.ends_with("hello"), "{answer}");
    assert_eq!(allowed_hits.load(Ordering::SeqCst), 2);

    // An IP literal, even of the same machine, and a name not on the list.
    for request in [
        format!("CONNECT 127.0.0.1:{target_port} HTTP/1.1\r\n\r\n"),
        format!("GET http://127.0.0.1:{target_port}/ HTTP/1.1\r\n\r\n"),
        format!("CONNECT [::1]:{target_port} HTTP/1.1\r\n\r\n"),
        format!("GET http://vm.invalid:{target_port}/ HTTP/1.1\r\n\r\n"),
        format!("GET http://user@127.0.0.1:{target_port}/ HTTP/1.1\r\n\r\n"),
    ] {
        let answer = through(&proxy, &request).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{request}: {answer}");
    }
    // A redirect from the allowed host to another one: the client's next request is judged
    // again, and refused.
    let answer = through(
        &proxy,
        &format!("GET http://localhost:{redirect_port}/ HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 302"), "{answer}");
    let location = answer
        .lines()
        .find_map(|l| l.strip_prefix("Location: "))
        .unwrap()
        .trim()
        .to_string();
    let answer = through(&proxy, &format!("GET {location} HTTP/1.1\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("IP address"), "{answer}");
    // Not a proxy request at all.
    let answer = through(&proxy, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");

    assert_eq!(
        target_hits.load(Ordering::SeqCst),
        0,
        "a refused host was reached"
    );
    let decisions = decisions.lock().unwrap().clone();
    let refused = decisions.iter().filter(|d| !d.allowed).count();
    let allowed = decisions.iter().filter(|d| d.allowed).count();
    assert_eq!((allowed, refused), (3, 6), "{decisions:#?}");
}

/// An allowed host that does not answer: the client gets a 502 that says why, and the decision
/// (allowed, then failed) is reported; a request that is not HTTP at all is a 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_host_that_does_not_answer_is_a_502_that_says_why() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let decisions: Arc<Mutex<Vec<NetDecision>>> = Arc::default();
    let seen = decisions.clone();
    let proxy = NetProxy::start(
        Allowlist::new(["localhost"]),
        Arc::new(move |d| seen.lock().unwrap().push(d)),
    )
    .unwrap();
    let answer = through(
        &proxy,
        &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 502"), "{answer}");
    assert!(
        answer.contains(&format!("cannot connect to localhost:{port}")),
        "{answer}"
    );
    let decisions = decisions.lock().unwrap().clone();
    assert_eq!(decisions.len(), 1);
    assert!(
        decisions[0].allowed && decisions[0].reason.is_some(),
        "{decisions:#?}"
    );
    let answer = through(&proxy, "\u{1}\u{2}garbage\r\n\r\n").await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
}
