//! The integration tests of `braincode-runtime` as one binary (one link instead of one per file):
//! the modules of `suite/` were separate test files; `support/` is what they share.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
mod support;
