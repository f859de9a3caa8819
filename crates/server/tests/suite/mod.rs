//! The test modules, one per former test binary.

mod oauth_panel;
mod panel_edits;
mod panel_http;
mod panel_pages;
mod panel_prompts;
mod panel_saves;
