//! [`RawReply`]: a response the scripted server sends byte for byte (a provider's recorded
//! stream, a malformed one, an HTML error page), for tests of the wire clients themselves.

use std::time::Duration;

use axum::body::Bytes;

use crate::script::{Reply, ReplyEnd};

/// One canned HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub struct RawReply {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body chunks, each sent as its own write.
    pub chunks: Vec<Bytes>,
    /// How the body ends ([`ReplyEnd::Hang`]: the headers never come).
    pub end: ReplyEnd,
}

impl RawReply {
    /// A 200 event stream, sent as one chunk per SSE event (split on blank lines).
    pub fn sse(body: &str) -> Self {
        let mut chunks = Vec::new();
        let mut rest = body;
        while let Some(at) = rest.find("\n\n") {
            chunks.push(Bytes::copy_from_slice(&rest.as_bytes()[..at + 2]));
            rest = &rest[at + 2..];
        }
        if !rest.is_empty() {
            chunks.push(Bytes::copy_from_slice(rest.as_bytes()));
        }
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
            end: ReplyEnd::Complete,
        }
    }

    /// The same bytes re-split into chunks of `size` bytes (boundaries land anywhere).
    pub fn rechunked(mut self, size: usize) -> Self {
        let all: Vec<u8> = self.chunks.iter().flat_map(|c| c.to_vec()).collect();
        self.chunks = all
            .chunks(size.max(1))
            .map(Bytes::copy_from_slice)
            .collect();
        self
    }

    /// A JSON response with `status` (an error body, usually).
    pub fn error(status: u16, body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![Bytes::copy_from_slice(body.as_bytes())],
            end: ReplyEnd::Complete,
        }
    }

    /// A 200 `application/json` answer (a server that ignored `stream: true`).
    pub fn json(body: &str) -> Self {
        Self::error(200, body)
    }

    /// A response that never starts: no status line, no headers.
    pub fn hang() -> Self {
        Self::sse("").ending(ReplyEnd::Hang)
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets how the body ends.
    pub fn ending(mut self, end: ReplyEnd) -> Self {
        self.end = end;
        self
    }
}

/// How long the server waits between the chunks of a raw reply, so that each chunk reaches
/// the client as its own read.
pub const RAW_CHUNK_DELAY: Duration = Duration::from_millis(1);

impl From<RawReply> for Reply {
    fn from(raw: RawReply) -> Self {
        Reply {
            chunk_delay: RAW_CHUNK_DELAY,
            raw: Some(raw),
            ..Reply::default()
        }
    }
}
