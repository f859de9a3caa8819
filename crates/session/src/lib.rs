//! A session's reading side: what a journal says, without the orchestrator that wrote it.
//!
//! [`fold::RunState`] is the run's state as a pure fold of its records; [`report`] derives the
//! final status and metrics from it. The live run keeps one fold current as it records
//! ([`fold::LiveState`]); `braincode sessions`, the TUI's reopened sessions, the web panel and
//! the replay build the same state from a journal file. Replay and crash-resume, which run the
//! orchestrator again, stay in `braincode-runtime`.

pub mod fold;
pub mod report;
