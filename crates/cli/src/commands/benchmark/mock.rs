//! The execution benchmark's scripted model (`--mode mock`): no network, the same answers
//! every time. Workers report, the reviewer approves, and the primary makes the fixture's
//! edits with `edit_file` on its first turn, then answers. The checks the edits select run
//! for real.

use std::sync::Arc;

use braincode_llm::ModelClient;
use braincode_protocol::{ModelDefinition, Usage};
use braincode_runtime::ClientOverride;
use braincode_scripted::{CallKind, Reply, Script, ScriptedModel};
use serde::Deserialize;
use serde_json::json;

use crate::commands::bench::overhead::{instant, reply_for};

/// One edit the scripted primary makes.
#[derive(Debug, Clone, Deserialize)]
pub struct MockEdit {
    /// The file, relative to the project.
    pub path: String,
    /// Its whole new content.
    pub content: String,
}

/// What the scripted primary does for a fixture.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MockScript {
    /// Its edits, made on its first turn.
    #[serde(default)]
    pub edits: Vec<MockEdit>,
    /// Its answer once the edits are made.
    #[serde(default)]
    pub answer: String,
}

/// The scripted model for one fixture: workers and the reviewer answer at once, the primary
/// makes the edits on its first turn (one `edit_file` call each), then answers.
pub fn mock_model(script: MockScript) -> ScriptedModel {
    ScriptedModel::new(Script::from_fn(move |request| {
        let asker = request.kind();
        if asker != CallKind::Primary {
            return instant(reply_for(asker));
        }
        let edited = !request.tool_results().is_empty();
        if edited || script.edits.is_empty() {
            let answer = if script.answer.is_empty() {
                "Done.".to_string()
            } else {
                script.answer.clone()
            };
            return instant(answer);
        }
        let edits = (script.edits.iter()).map(|edit| {
            (
                "edit_file",
                json!({"path": edit.path, "content": edit.content}),
            )
        });
        Reply::tool_calls(edits).with_usage(Usage::new(400, 120, 0, 0))
    }))
}

/// Every model of the catalogue answers with the fixture's script (so a brain's prices still
/// apply to the tokens it reports).
pub struct MockClients(pub ScriptedModel);

impl ClientOverride for MockClients {
    fn client(&self, _definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(self.0.client())
    }

    fn supplies(&self, _definition: &ModelDefinition) -> bool {
        true
    }
}
