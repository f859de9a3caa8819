//! The test modules, one per former test binary.

mod panel_edits;
mod panel_http;
mod panel_pages;
mod panel_prompts;
mod panel_saves;
