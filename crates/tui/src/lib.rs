//! Braincode's interactive terminal session.
//!
//! The TUI is one more subscriber of a run's event stream ([`braincode_protocol::RunEvent`]),
//! exactly like the journal and `--events`: what it shows of a run is the run's own fold
//! ([`braincode_session::fold::RunState`]) plus the live events (tool calls, streamed text),
//! never a second code path. It is also where a person answers approvals
//! ([`braincode_runtime::ApprovalHandler`]).
//!
//! [`app::App`] is the session model and [`view::draw`] draws it; the approval panel and the
//! input box draw into the areas [`view::layout`] leaves for them.

pub mod app;
pub mod approval;
pub mod clipboard;
pub mod image;
pub mod input;
mod intent;
pub mod pet;
pub mod session;
pub mod slash;
pub mod terminal;
pub mod view;
