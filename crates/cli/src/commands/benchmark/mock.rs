//! The execution benchmark's scripted model (`--mode mock`): no network, the same answers
//! every time. Workers report, the reviewer approves, and the primary makes the fixture's
//! edits with `edit_file` on its first turn, then answers. The checks the edits select run
//! for real.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use braincode_llm::{
    ChatMessage, ChatRequest, ModelClient, ModelError, ModelEvent, ModelStream, StopReason,
    ToolCall,
};
use braincode_protocol::{ModelDefinition, Usage};
use braincode_runtime::ClientOverride;
use futures::stream;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::commands::bench::overhead::{Asker, asker_of, instant_reply, reply_for};

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

/// The scripted model for one fixture.
pub struct MockModel {
    script: MockScript,
    calls: AtomicU64,
}

impl MockModel {
    pub fn new(script: MockScript) -> Arc<Self> {
        Arc::new(Self {
            script,
            calls: AtomicU64::new(0),
        })
    }
}

#[async_trait]
impl ModelClient for MockModel {
    async fn stream(
        &self,
        request: ChatRequest,
        _cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let call = self.calls.fetch_add(1, Ordering::Relaxed);
        let asker = asker_of(&request);
        if asker != Asker::Primary {
            return Ok(instant_reply(reply_for(asker)));
        }
        let edited = request
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { .. }));
        if edited || self.script.edits.is_empty() {
            let answer = if self.script.answer.is_empty() {
                "Done.".to_string()
            } else {
                self.script.answer.clone()
            };
            return Ok(instant_reply(answer));
        }
        let mut events: Vec<Result<ModelEvent, ModelError>> = self
            .script
            .edits
            .iter()
            .enumerate()
            .map(|(i, edit)| {
                let arguments = serde_json::json!({"path": edit.path, "content": edit.content});
                Ok(ModelEvent::ToolCall {
                    call: ToolCall::from_raw(
                        format!("mock-{call}-{i}"),
                        "edit_file",
                        arguments.to_string(),
                    ),
                })
            })
            .collect();
        events.push(Ok(ModelEvent::Usage {
            usage: Usage::new(400, 120, 0, 0),
        }));
        events.push(Ok(ModelEvent::Stop {
            reason: StopReason::ToolUse,
        }));
        Ok(Box::pin(stream::iter(events)))
    }
}

/// Every model of the catalogue answers with the fixture's script (so a brain's prices still
/// apply to the tokens it reports).
pub struct MockClients(pub Arc<MockModel>);

impl ClientOverride for MockClients {
    fn client(&self, _definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(self.0.clone())
    }

    fn supplies(&self, _definition: &ModelDefinition) -> bool {
        true
    }
}
