//! The test modules, one per former test binary.

mod evidence_cache;
mod exec_tools;
mod fs_tools;
mod lazy_files;
mod netproxy;
mod policy_bypass;
mod registry;
