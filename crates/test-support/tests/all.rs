//! The integration tests of `braincode-test-support` as one binary, laid out like every
//! crate's (`tests/all.rs`, the modules in `suite/`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
