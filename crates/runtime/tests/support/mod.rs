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
//! - [`Script`], [`Matcher`], [`Reply`]: the shared kit's (`braincode_test_support`, from
//!   `braincode-scripted`); a matcher sees who asks ([`CallKind`]: `Matcher::router()`,
//!   `Matcher::support(role)`, …) and which role's prompt the request carries; the run's
//!   [`RequestLog`] holds every [`ModelCall`].
//! - Reply fixtures: [`worker_result_json`], [`worker_result_for`], [`review_json`],
//!   [`router_decision_json`], [`router_clarification_json`].
//!
//! ```ignore
//! let outcome = TestRun::new("Fix the token check")
//!     .script(Script::new()
//!         .always(Matcher::router(), Reply::json(&router_decision_json(Role::Backend, &[Role::Security])))
//!         .when_fn(Matcher::any_support(), |call| Reply::json(&worker_result_for(call, "found it")))
//!         .always(Matcher::primary(), Reply::text("Fixed.")))
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

pub use braincode_test_support::{
    Reply, Script, router_decision_json, worker_result_for, worker_result_json,
};
pub use call::{CallKind, Matcher, ModelCall, RequestLog};
pub use fixtures::{
    BrainConfig, TEST_BRAIN_ID, review_json, role_model, router_clarification_json, scripted_model,
};
pub use journal::{JournalView, LiveJournal, RecordPayload, WaitTimeout, is};
pub use run::{Fixtures, LiveRun, Project, RUN_GUARD, TestOutcome, TestRun};
pub use script::{ScriptedModels, primary_calling};
