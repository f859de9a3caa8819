//! The integration tests of `braincode-cli` as one binary (one link instead of one per file):
//! the modules of `suite/` were separate test files; `run_harness/` is what they share.
//! `local_server.rs` stays a binary of its own: while its stand-in Ollama listens on the
//! machine-wide port 127.0.0.1:11434, any run without a key would use it, so no other test
//! may run then (Cargo runs test binaries one at a time).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod run_harness;
mod suite;
