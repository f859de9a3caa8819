//! The test modules, one per former test binary.

mod contained;
mod fuzz;
mod journal;
mod key_env;
mod references;
mod stores;
