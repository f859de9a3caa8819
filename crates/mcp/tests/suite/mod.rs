//! The test modules, one per former test binary.

mod connection;
mod http;
mod hub;
