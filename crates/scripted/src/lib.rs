//! Scripted models: one [`Script`] of rules `when(matcher) → replies`, answered in process by
//! a [`ScriptedModel`] (a `ModelClient`) or over HTTP by a [`ScriptedServer`] on 127.0.0.1 in
//! the wire format of each request (OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages, Google Gemini) or byte for byte ([`RawReply`]).
//!
//! The `braincode bench` and `braincode benchmark` commands run on these fakes, and the
//! tests reach them through `braincode-test-support`, so a benchmark's model and a test's are
//! one implementation.
//!
//! A [`Matcher`] sees a [`RequestSummary`]: the model asked, the system prompt, the first and
//! last user turns, the tools, the schema, the tool results, and from them who is asking
//! ([`CallKind`]) and which role's prompt it carries.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use braincode_scripted::{Matcher, Reply, Script, ScriptedServer};
//! let script = Script::new()
//!     .always(Matcher::router(), Reply::text("{\"role\":\"backend\"}"))
//!     .when_fn(Matcher::primary(), |request| Reply::text(format!("{} results", request.tool_results().len())));
//! let server = ScriptedServer::bind(script).await?;
//! println!("{}", server.base_url());
//! # Ok(())
//! # }
//! ```

mod asker;
mod matcher;
mod model;
mod raw;
mod render;
mod replies;
mod script;
mod server;
mod summary;

pub use asker::{CallKind, role_of_system};
pub use matcher::{Matcher, Predicate};
pub use model::{ModelCall, ScriptedModel};
pub use raw::{RAW_CHUNK_DELAY, RawReply};
pub use replies::{router_decision_json, worker_result_for, worker_result_json};

pub use script::{HttpFailure, Reply, ReplyEnd, Respond, Rule, Script, ScriptedCall};
pub use server::{Outcome, RecordedRequest, ScriptedServer};
pub use summary::{RequestSummary, Wire};
