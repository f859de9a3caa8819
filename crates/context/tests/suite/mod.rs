//! The test modules, one per former test binary.

mod handoff_summary_props;
mod packets;
