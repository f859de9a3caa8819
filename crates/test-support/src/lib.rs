//! The test kit: scripted fake models (in-process and over HTTP/SSE), temporary homes and
//! repositories.
//!
//! - [`Script`]: rules `when(matcher) → replies`, shared by [`ScriptedModel`] (an in-process
//!   `ModelClient`) and [`ScriptedServer`] (a real HTTP server on 127.0.0.1 speaking the
//!   OpenAI Chat Completions streaming format). Both record every request.
//! - [`mcp`]: the MCP test server binary (`braincode-mcp-test-server`) and an HTTP instance.
//! - [`TempHome`] (a `BRAINCODE_HOME` with helpers for settings/models/brains/auth) and
//!   [`TempRepo`] (a git repository with an initial commit).
//!
//! ```no_run
//! # async fn demo() {
//! use braincode_test_support::{Matcher, Reply, Script, ScriptedServer, TempHome, scripted_model_entry};
//! let script = Script::new()
//!     .when(Matcher::system_contains("router"), [Reply::text("{\"mode\":\"solo\"}")])
//!     .always(Matcher::has_tools(), Reply::text("done"));
//! let server = ScriptedServer::start(script).await;
//! let home = TempHome::new();
//! home.write_models(&[scripted_model_entry("scripted/main", &server.base_url())]);
//! # }
//! ```
// A test-only crate: fixtures fail loudly (panic) on setup errors instead of returning them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixtures;
mod hit;
pub mod mcp;
mod request;
mod script;
mod scripted_model;
mod server;

pub use fixtures::{HOME_ENV, TempHome, TempRepo, scripted_model_entry};
pub use hit::HitServer;
pub use script::{
    HttpFailure, Matcher, Reply, ReplyEnd, RequestSummary, Rule, Script, ScriptedCall,
};
pub use scripted_model::ScriptedModel;
pub use server::{RecordedRequest, ScriptedServer, sse_chunks};
