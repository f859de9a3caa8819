//! Wire-level tests: a real local HTTP server replays byte-exact provider streams.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod anthropic;
mod azure;
mod chat;
mod common;
mod connection;
mod gemini;
mod glitches;
mod images;
mod limits;
mod resilience;
mod responses;
mod scripted;
