//! The integration tests of `braincode-sandbox` as one binary (one link instead of one per
//! file): the modules of `suite/` were separate test files; `common/` is what they share.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod suite;
