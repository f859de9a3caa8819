//! The test kit: scripted fake models (in-process and over HTTP), temporary homes and
//! repositories.
//!
//! - [`Script`], [`Matcher`], [`Reply`], [`ScriptedModel`] and the scripted server are
//!   `braincode-scripted`'s, the same fakes `braincode bench` runs on; [`ScriptedServer`]
//!   here only makes a failure to bind fail the test.
//! - [`mcp`]: the MCP test server binary (`braincode-mcp-test-server`) and an HTTP instance.
//! - [`TempHome`] (a `BRAINCODE_HOME` with helpers for settings/models/brains/auth) and
//!   [`TempRepo`] (a git repository with an initial commit).
//! - [`NatsServer`] and [`NatsCluster`]: real `nats-server`s with JetStream, on loopback.
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
mod nats;
mod oauth;
mod server;

pub use braincode_scripted::{
    CallKind, HttpFailure, Matcher, ModelCall, Outcome, RawReply, RecordedRequest, Reply, ReplyEnd,
    RequestSummary, Rule, Script, ScriptedCall, ScriptedModel, Wire, router_decision_json,
    worker_result_for, worker_result_json,
};
pub use fixtures::{HOME_ENV, TempHome, TempRepo, scripted_model_entry};
pub use hit::HitServer;
pub use nats::{NatsCluster, NatsServer, nats_server_available};
pub use oauth::{DevicePoll, FakeAuthConfig, FakeAuthLog, FakeAuthServer, wait_for_log};
pub use server::ScriptedServer;
