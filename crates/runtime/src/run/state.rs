//! What every step of one run shares.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use braincode_brain::BrainModel;
use braincode_brain::role_system_prompt;
use braincode_config::Settings;
use braincode_llm::Candidate;
use braincode_llm::ContentPart;
use braincode_protocol::{
    AgentRef, ContextRef, Mode, Phase, ProjectSupportSummary, Role, ThinkingLevel, ToolCallOrigin,
};
use braincode_tools::{EvidenceCache, EvidenceCacheConfig, ExecSessions, ToolContext, ToolsConfig};
use tokio_util::sync::CancellationToken;

use crate::agent::compact::CompactionPolicy;
use crate::agent::{AgentServices, AgentSetup, DEFAULT_TOOL_TIMEOUT, ToolStats};
use crate::approval::{PermissionMode, PolicyGate};
use crate::fold::LiveState;
use crate::hooks::{HookCommand, HookEnvironment, HookEvent, HookResult, run_hooks};
use crate::models::ModelFactory;
use crate::run::prompts::SharedSections;
use crate::sink::RunSink;
use crate::tape::Tape;

/// What a run has from its configuration and services, before it reads the request: built
/// once, complete, by `setup::build_base`.
pub(crate) struct RunBase {
    /// Braincode's home (the dependency step keeps its markers there).
    pub home: braincode_config::Home,
    pub sink: RunSink,
    pub cancel: CancellationToken,
    pub project_root: PathBuf,
    pub brain_id: String,
    pub brain: BrainModel,
    pub mode: Mode,
    pub permission: PermissionMode,
    pub settings: Settings,
    pub factory: ModelFactory,
    pub gate: Arc<PolicyGate>,
    pub stats: Arc<ToolStats>,
    pub exec_sessions: Arc<ExecSessions>,
    pub tools_config: ToolsConfig,
    /// What an untrusted project had ignored, and a trust store that could not be read (the
    /// project then counts as untrusted): from the run's one trust verdict, said once.
    pub trust_notices: Vec<String>,
    /// The checks configuration (tools.json and a trusted project's checks.json).
    pub checks: crate::config::LoadedChecks,
    pub hooks: Vec<HookCommand>,
    pub hook_env: HookEnvironment,
    /// AGENTS.md, skills and MCP names, for prompts.
    pub support_section: String,
    pub support_refs: Vec<ContextRef>,
    pub support_summary: ProjectSupportSummary,
    /// The OS sandbox commands run in, or why none could be set up.
    pub sandbox: Result<Arc<braincode_sandbox::Sandbox>, super::setup::NoSandbox>,
    /// The person's editor's files (over ACP), for the tools of the project itself.
    pub editor: Option<Arc<dyn braincode_tools::EditorFiles>>,
    /// The fold of this run's records so far (the report's only state).
    pub live: Arc<LiveState>,
    /// The run's context ids.
    pub ids: ContextIds,
    /// Journaled results served instead of calls (replay, resume).
    pub tape: Option<Arc<Tape>>,
    /// What the run's writes changed, journaled and kept for `braincode undo`.
    pub ledger: Option<Arc<crate::ledger::PatchLedger>>,
    /// The run's MCP servers.
    pub mcp: Arc<crate::mcp::McpRuntime>,
    /// Checks the protected paths after commands (none without a sandbox).
    pub protected: Option<Arc<crate::protect::ProtectedWatch>>,
    /// The network allowlist proxy of `--allow-network=registries`: held for the run (it stops
    /// when dropped), never read.
    pub _net_proxy: Option<Arc<braincode_tools::exec::netproxy::NetProxy>>,
}

/// The request as agents see it, made by the run's first stage.
pub(crate) struct PreparedRequest {
    /// Environment lines (working directory, git state, platform).
    pub environment: String,
    /// The patch baseline taken with the environment's git probe (none when a hook ran, or
    /// in a replay).
    pub baseline: Option<crate::git::PatchBaseline>,
    /// Whether the request is a conversational reply (no repository look before it).
    pub conversational: bool,
    /// The request with hook context, references and continuity applied.
    pub text: String,
    /// The request's own words (no inlined files, no continuity block), for the heuristic.
    pub routing_text: String,
    /// Whether the request continues earlier runs of the session (a continuity block leads it).
    pub continued: bool,
    /// Images attached to the request.
    pub images: Vec<ContentPart>,
}

impl PreparedRequest {
    /// A request taken as typed (no hooks, references or continuity: `--dry-run`).
    pub fn plain(prompt: &str) -> Self {
        Self {
            environment: String::new(),
            baseline: None,
            conversational: false,
            text: prompt.to_string(),
            routing_text: prompt.to_string(),
            continued: false,
            images: Vec::new(),
        }
    }
}

/// Shared, read-only state of one run: its base and its prepared request.
pub(crate) struct RunShared {
    base: RunBase,
    pub sections: SharedSections,
    /// The request as agents see it (hook context, references and continuity applied).
    pub request: String,
    /// The request's own words (no inlined files, no continuity block), for the heuristic.
    pub routing_text: String,
    /// Whether the request continues earlier runs of the session (a continuity block leads it).
    pub continued: bool,
    /// Images attached to the request.
    pub images: Vec<ContentPart>,
    /// The patch baseline taken while the request was prepared, if any.
    pub baseline: Option<crate::git::PatchBaseline>,
    /// Whether the request was taken for a conversational reply while it was prepared.
    pub conversational: bool,
}

impl RunShared {
    /// The run's shared state, once its request is prepared.
    pub fn new(base: RunBase, prepared: PreparedRequest) -> Self {
        Self {
            sections: SharedSections {
                environment: prepared.environment,
                support: base.support_section.clone(),
            },
            base,
            request: prepared.text,
            routing_text: prepared.routing_text,
            continued: prepared.continued,
            images: prepared.images,
            baseline: prepared.baseline,
            conversational: prepared.conversational,
        }
    }
}

impl std::ops::Deref for RunShared {
    type Target = RunBase;

    fn deref(&self) -> &RunBase {
        &self.base
    }
}

/// The task context ids of one run: `<run id>-<n>` in the order the run creates them, so a
/// replay or a resume of the run (same run id, same decisions) gives every worker the id it
/// had. Ids made by concurrent callers (dispatches in one turn) are derived from what they
/// are for instead of from their order.
#[derive(Debug, Default)]
pub(crate) struct ContextIds {
    run_id: String,
    next: AtomicU32,
    derived: Mutex<BTreeMap<String, u32>>,
}

impl ContextIds {
    /// Ids for run `run_id`.
    pub fn new(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_string(),
            ..Self::default()
        }
    }

    /// The run's id (the seed of its context ids).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The next id in creation order.
    pub fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        format!("{}-{n:02}", self.run_id)
    }

    /// An id derived from `purpose` (the same purpose twice gets a numbered second id).
    pub fn derived(&self, purpose: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(purpose.as_bytes());
        let digest = hasher.finalize();
        let short = braincode_protocol::lower_hex(&digest[..4]);
        let mut seen = match self.derived.lock() {
            Ok(seen) => seen,
            Err(poisoned) => poisoned.into_inner(),
        };
        let count = seen.entry(short.clone()).or_insert(0);
        *count += 1;
        match *count {
            1 => format!("{}-{short}", self.run_id),
            n => format!("{}-{short}-{n}", self.run_id),
        }
    }
}

impl RunBase {
    /// Runs the hooks of `event` (or serves their journaled result: replay, resume) and
    /// journals them when any matched. `matcher` is what the record names (the source, the
    /// role); `match_value` what handlers' matchers are tested against.
    pub async fn hook(
        &self,
        event: HookEvent,
        match_value: &str,
        matcher: Option<&str>,
        payload: serde_json::Value,
    ) -> HookResult {
        let served = self
            .tape
            .as_deref()
            .map(|tape| (tape.hook(event.name(), matcher), tape.is_strict()));
        let (result, journal) = match served {
            Some((Some((record, own)), _)) => (HookResult::from_record(&record), own),
            Some((None, true)) => (HookResult::default(), false),
            Some((None, false)) | None => (
                run_hooks(
                    &self.hooks,
                    event,
                    match_value,
                    &self.hook_env,
                    payload,
                    &self.cancel,
                )
                .await,
                true,
            ),
        };
        if journal && !result.is_empty() {
            self.sink
                .record(event.record(result.to_record(event, matcher)));
        }
        result
    }

    /// Services for an agent running `client`.
    pub fn services(&self, client: Arc<dyn braincode_llm::ModelClient>) -> AgentServices {
        AgentServices {
            client,
            gate: self.gate.clone(),
            // Each agent has its own evidence cache: a worker's tool output never depends on
            // what an isolated sibling read (or when).
            cache: Some(Arc::new(EvidenceCache::new(EvidenceCacheConfig::default()))),
            sink: self.sink.clone(),
            tape: self.tape.clone(),
            ledger: self.ledger.clone(),
            hooks: Some(Arc::new(crate::hooks::AgentHooks::new(
                &self.hooks,
                &self.hook_env,
                self.tape.clone(),
                &self.sink,
                &self.cancel,
            ))),
            tool_context: ToolContext {
                project_root: self.project_root.clone(),
                cancel: self.cancel.clone(),
                sandbox: self.sandbox.as_ref().ok().cloned(),
                editor: self.editor.clone(),
                lazy: None,
            },
            stats: self.stats.clone(),
            protected: self.protected.clone(),
        }
    }

    /// Services for a parallel writer running `client` in its worktree: tools rooted there,
    /// its own sandbox and gate; no ledger (its change reaches the project by the merge, which
    /// the ledger records) and no protected-path watch (the project is not in its sandbox);
    /// no tape for a resumed writer that works again from its start.
    pub fn services_in(
        &self,
        client: Arc<dyn braincode_llm::ModelClient>,
        place: &crate::writers::WriterPlace,
    ) -> AgentServices {
        AgentServices {
            gate: place.gate.clone(),
            ledger: None,
            protected: None,
            tool_context: ToolContext {
                project_root: place.root.clone(),
                cancel: self.cancel.clone(),
                sandbox: place.sandbox.clone(),
                editor: None,
                lazy: Some(place.lazy.clone() as Arc<dyn braincode_tools::LazyFiles>),
            },
            tape: (!place.from_start).then(|| self.tape.clone()).flatten(),
            ..self.services(client)
        }
    }

    /// Checks the protected paths before Braincode reads the project itself (git, a review
    /// diff) or ends the run: a change undoes itself and stops the run.
    pub async fn check_protected(&self, before: &str) -> Result<(), super::RunError> {
        match &self.protected {
            Some(watch) => watch
                .check(before)
                .await
                .map_err(|_| super::RunError::Cancelled),
            None => Ok(()),
        }
    }

    /// The setup every agent of this run starts from: who it is (for events and records),
    /// its model and its role's system prompt. Callers add tools, limits and output shape.
    pub fn agent_setup(&self, who: AgentIdentity<'_>, candidate: &Candidate) -> AgentSetup {
        let model_id = candidate.definition.id.clone();
        AgentSetup {
            agent: AgentRef {
                role: who.role,
                phase: who.phase,
                context_id: who.task_id.unwrap_or_default().to_string(),
                model: Some(model_id.clone()),
            },
            origin: ToolCallOrigin {
                phase: Some(who.phase),
                role: Some(who.role),
                agent_session_id: Some(who.agent_session_id),
                task_id: who.task_id.map(str::to_string),
                parent_id: who.parent_id.map(str::to_string),
                attempt: Some(who.attempt),
                ..self.origin()
            },
            model_id,
            provider: candidate.definition.provider.clone(),
            pricing: candidate.definition.pricing,
            system_prompt: role_system_prompt(who.role, &self.brain),
            tools: Vec::new(),
            max_turns: 0,
            thinking: ThinkingLevel::Off,
            max_tokens: None,
            temperature: None,
            response_schema: None,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            stream_text: false,
            vision: candidate.definition.supports_vision,
            resolver: None,
            compaction: self.compaction_policy(u64::from(candidate.definition.context_window)),
            cache_key: Some(crate::agent::prompt_cache_key(&self.project_root, who.role)),
        }
    }

    /// When an agent on a model with `window` tokens of context compacts: at
    /// `settings.context.compactAtPercent` of the window (capped by the brain's
    /// `maxInputTokens`), 70% of that in `aggressive` mode, never in `manual`.
    pub fn compaction_policy(&self, window: u64) -> Option<CompactionPolicy> {
        let percent = f64::from(self.settings.context.compact_at_percent) / 100.0;
        let context = &self.brain.context;
        let share = match context.compaction {
            braincode_brain::Compaction::Manual => return None,
            braincode_brain::Compaction::Auto => percent,
            braincode_brain::Compaction::Aggressive => percent * 0.7,
        };
        Some(CompactionPolicy::for_window(
            window,
            context.max_input_tokens,
            share,
        ))
    }

    /// Base origin fields for records.
    pub fn origin(&self) -> ToolCallOrigin {
        ToolCallOrigin {
            brain_id: Some(self.brain_id.clone()),
            ..ToolCallOrigin::default()
        }
    }
}

/// Who an agent is, for [`RunShared::agent_setup`].
pub(crate) struct AgentIdentity<'a> {
    pub role: Role,
    pub phase: Phase,
    /// Its task context (none for the router).
    pub task_id: Option<&'a str>,
    /// The Brain context it reports to.
    pub parent_id: Option<&'a str>,
    pub agent_session_id: String,
    pub attempt: u32,
}
