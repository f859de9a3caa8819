//! Every model of a run answered, in process, from one shared [`Script`].
//!
//! [`ScriptedModels`] is the `ClientOverride` the run gets: for every model of the catalogue
//! a handle of one [`ScriptedModel`] named by the model's catalogue id (so no credentials are
//! needed and [`braincode_test_support::Matcher::model`] sees which model was asked). Like a
//! raw wire client it has no retry layer: a scripted failure reaches the runtime at once,
//! which falls back to the next model of the chain.

use std::sync::Arc;

use braincode_llm::ModelClient;
use braincode_protocol::ModelDefinition;
use braincode_runtime::ClientOverride;
use braincode_test_support::{Matcher, Reply, Script, ScriptedModel};
use serde_json::Value;

use super::call::RequestLog;

/// The `ClientOverride` of a test run: one scripted model, a handle per model id.
#[derive(Clone)]
pub struct ScriptedModels {
    model: ScriptedModel,
}

impl ScriptedModels {
    /// Models answering from `script`.
    pub fn new(script: Script) -> Self {
        Self {
            model: ScriptedModel::new(script),
        }
    }

    /// A snapshot of the request log.
    pub fn log(&self) -> RequestLog {
        RequestLog::of(self.model.calls())
    }
}

impl ClientOverride for ScriptedModels {
    fn client(&self, definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(self.model.named(definition.id.clone()).client())
    }

    fn supplies(&self, _definition: &ModelDefinition) -> bool {
        true
    }
}

/// A plan with a backend primary and no workers, whose primary makes `calls` tool calls in
/// turn, then answers with every tool result it saw, joined by `separator`.
pub fn primary_calling(calls: Vec<(&'static str, Value)>, separator: &'static str) -> Script {
    Script::new()
        .always(
            Matcher::router(),
            Reply::json(&super::router_decision_json(
                braincode_protocol::Role::Backend,
                &[],
            )),
        )
        .when_fn(Matcher::primary(), move |call| {
            let seen = call.tool_results();
            match calls.get(seen.len()) {
                Some((name, args)) => Reply::tool_call(*name, args.clone()),
                None => Reply::text(seen.join(separator)),
            }
        })
}
