//! What every step of one run shares.

use std::path::PathBuf;
use std::sync::Arc;

use braincode_brain::BrainModel;
use braincode_config::Settings;
use braincode_llm::ContentPart;
use braincode_protocol::{ContextRef, Mode, ProjectSupportSummary, SessionId, ToolCallOrigin};
use braincode_tools::{EvidenceCache, ExecSessions, ToolContext, ToolsConfig};
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentServices, ToolStats};
use crate::approval::{PermissionMode, PolicyGate};
use crate::hooks::{HookCommand, HookEnvironment};
use crate::models::ModelFactory;
use crate::run::prompts::SharedSections;
use crate::sink::RunSink;

/// Shared, read-mostly state of one run.
pub(crate) struct RunShared {
    pub sink: RunSink,
    pub cancel: CancellationToken,
    pub session_id: SessionId,
    pub project_root: PathBuf,
    pub brain_id: String,
    pub brain: BrainModel,
    pub mode: Mode,
    pub permission: PermissionMode,
    pub settings: Settings,
    pub factory: ModelFactory,
    pub gate: Arc<PolicyGate>,
    pub cache: Arc<EvidenceCache>,
    pub stats: Arc<ToolStats>,
    pub exec_sessions: Arc<ExecSessions>,
    pub tools_config: ToolsConfig,
    pub hooks: Vec<HookCommand>,
    pub hook_env: HookEnvironment,
    pub sections: SharedSections,
    pub support_refs: Vec<ContextRef>,
    pub support_summary: ProjectSupportSummary,
    /// The request as agents see it (hook context, references and continuity applied).
    pub request: String,
    /// The request's own words (no inlined files, no continuity block), for the heuristic.
    pub routing_text: String,
    /// Whether the request continues earlier runs of the session (a continuity block leads it).
    pub continued: bool,
    /// Images attached to the request.
    pub images: Vec<ContentPart>,
}

impl RunShared {
    /// Services for an agent running `client`.
    pub fn services(&self, client: Arc<dyn braincode_llm::ModelClient>) -> AgentServices {
        AgentServices {
            client,
            gate: self.gate.clone(),
            cache: Some(self.cache.clone()),
            sink: self.sink.clone(),
            tool_context: ToolContext {
                project_root: self.project_root.clone(),
                cancel: self.cancel.clone(),
            },
            stats: self.stats.clone(),
        }
    }

    /// Base origin fields for records.
    pub fn origin(&self) -> ToolCallOrigin {
        ToolCallOrigin {
            brain_id: Some(self.brain_id.clone()),
            ..ToolCallOrigin::default()
        }
    }
}
