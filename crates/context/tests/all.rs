//! The integration tests of `braincode-context` as one binary (one link instead of one per
//! file): the modules of `suite/` were separate test files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod suite;
