//! The integration tests of `braincode-tui` as one binary (one link instead of one per file):
//! the modules of `suite/` were separate test files; `common/` and `script/` are what they
//! share. Their insta snapshots are in `suite/snapshots/`, named by module path
//! (`all__suite__<file>__<name>.snap`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod script;
mod suite;
