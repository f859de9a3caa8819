//! The in-process test kit of the orchestrator: one `braincode_runtime::run`, in this
//! process, against scripted models.
//!
//! It lives here rather than in `braincode-test-support` because it needs the runtime, and
//! the runtime dev-depends on the test-support crate (a cycle otherwise).
//!
//! - [`TestRun`]: a temporary home (typed [`BrainConfig`] → `brains.json`, its models →
//!   `models.json`, `Settings` → `settings.json`), a temporary project (a git repository on
//!   request), the prompt, permission, routing, and a [`Script`]; [`TestRun::run`] gives a
//!   [`TestOutcome`] (the report, the memory journal as a [`JournalView`], every model
//!   request in a [`RequestLog`], the events), [`TestRun::start`] a [`LiveRun`] to wait on
//!   ([`LiveJournal::wait_for`]) and cancel.
//! - [`Script`]: rules `matcher → reply`; a [`Matcher`] sees a [`ModelCall`] (the model id,
//!   the request, who asks: [`CallKind`], which role: [`ModelCall::role`]); a
//!   [`ScriptedReply`] is text, tool calls (`ToolCall::from_raw`), usage, a delay, a stall
//!   or a `ModelError` of any kind.
//! - Reply fixtures: [`worker_result_json`], [`worker_result_for`], [`review_json`],
//!   [`router_decision_json`], [`router_clarification_json`].
//!
//! ```ignore
//! let outcome = TestRun::new("Fix the token check")
//!     .script(Script::new()
//!         .when(Matcher::router(), ScriptedReply::json(&router_decision_json(Role::Backend, &[Role::Security])))
//!         .when_fn(Matcher::any_support(), |call| ScriptedReply::json(&worker_result_for(call, "found it")))
//!         .when(Matcher::primary(), ScriptedReply::text("Fixed.")))
//!     .run()
//!     .await;
//! assert_eq!(outcome.requests.hits("support:security"), 1);
//! ```
#![allow(
    dead_code,
    unreachable_pub,
    unused_imports,
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used
)]

mod call;
mod fixtures;
mod journal;
mod run;
mod script;

pub use call::{CallKind, Matcher, ModelCall, RequestLog};
pub use fixtures::{
    BrainConfig, TEST_BRAIN_ID, handoff_ids, review_json, role_model, router_clarification_json,
    router_decision_json, scripted_model, worker_result_for, worker_result_json,
};
pub use journal::{JournalView, LiveJournal, RecordPayload, WaitTimeout, is};
pub use run::{Fixtures, LiveRun, Project, RUN_GUARD, TestOutcome, TestRun};
pub use script::{Script, ScriptedModels, ScriptedReply, primary_calling};
