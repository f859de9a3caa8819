//! The test modules, one per former test binary.

mod approval_approver;
mod approval_snapshots;
mod image_attach;
mod input_completion;
mod input_editing;
mod input_history;
mod input_snapshots;
mod mcp_listing;
mod pet_panel;
mod screens;
mod skill_commands;
