//! The loopback server that receives the browser's redirect (`GET /auth/callback?code=…`):
//! one request at a time, each answered with a small page, `Connection: close`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head read from the browser.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long a connected browser may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The query of a redirect to the callback path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Callback {
    /// The callback parameters of a URL's query.
    pub(crate) fn from_query(url: &url::Url) -> Callback {
        let mut callback = Callback::default();
        for (name, value) in url.query_pairs() {
            let value = Some(value.into_owned());
            match name.as_ref() {
                "code" => callback.code = value,
                "state" => callback.state = value,
                "error" => callback.error = value,
                "error_description" => callback.error_description = value,
                _ => {}
            }
        }
        callback
    }
}

/// Binds `127.0.0.1:<port>`.
pub(crate) async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port)).await
}

/// Reads one request from `stream`; a GET of `path` gives its [`Callback`] (the caller then
/// answers with [`respond`]); anything else is answered 404 here and gives `None`.
pub(crate) async fn read_callback(stream: &mut TcpStream, path: &str) -> Option<Callback> {
    let Ok(Some(head)) = tokio::time::timeout(READ_TIMEOUT, read_head(stream)).await else {
        return None;
    };
    let mut parts = head.lines().next().unwrap_or_default().split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let parsed = url::Url::parse("http://127.0.0.1")
        .and_then(|base| base.join(target))
        .ok()
        .filter(|url| method == "GET" && url.path() == path);
    match parsed {
        Some(url) => Some(Callback::from_query(&url)),
        None => {
            respond(
                stream,
                404,
                "Not found",
                "This is the Braincode login callback.",
            )
            .await;
            None
        }
    }
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
        if buffer.windows(4).any(|w| w == b"\r\n\r\n") || buffer.len() >= MAX_REQUEST_BYTES {
            break;
        }
    }
    Some(String::from_utf8_lossy(&buffer).into_owned())
}

/// Answers with a small HTML page and closes the connection.
pub(crate) async fn respond(stream: &mut TcpStream, status: u16, title: &str, message: &str) {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title></head><body><h1>{title}</h1><p>{}</p></body></html>",
        html_escape(message)
    );
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let reply = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
