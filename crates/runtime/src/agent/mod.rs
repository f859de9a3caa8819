//! The agent loop: system prompt + messages → model stream → tool calls → gate → execute →
//! tool results → loop, until a final answer or the turn limit.
//!
//! Read tools run in parallel; writing and executing tools run one at a time, in the order the
//! model asked for them. Every tool call gets exactly one answer with its call id — a tool
//! failure, a refusal, a timeout or even a panicking tool becomes the tool's error output, so
//! the model can adapt. Only cancellation and model failures end the loop early.

pub mod compact;
mod compacting;
mod execute;
mod gate;
mod model_call;
mod stats;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use braincode_llm::{ChatMessage, ChatRequest, ModelClient, ModelError, ResponseSchema, ToolSpec};
use braincode_protocol::{AgentRef, ThinkingLevel, ToolCallOrigin, Usage};
use braincode_tools::{EvidenceCache, SharedTool, ToolContext};

pub use gate::{GateHooks, GateOutcome, GateRequest, OpenGate, ToolGate};
pub use stats::ToolStats;

use crate::sink::RunSink;
use crate::tape::Tape;
pub(crate) use execute::execute_calls;
use model_call::{guard_request_size, next_completion};

/// Largest request (system prompt + messages, in bytes of JSON) sent to a provider: 88% of a
/// 2 MiB provider limit, leaving room for tool definitions and framing.
pub const CONTEXT_GUARD_BYTES: usize = 1_845_493;

/// Default wall-clock limit for one tool call, enforced by the loop on top of the tool's own
/// timeouts (a tool that hangs is cancelled and the model is told).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Everything that defines one agent.
#[derive(Clone)]
pub struct AgentSetup {
    /// Who the agent is (role, phase, context, model) — for events.
    pub agent: AgentRef,
    /// Ids for journal records.
    pub origin: ToolCallOrigin,
    /// Catalogue id of the model.
    pub model_id: String,
    /// Provider of the model.
    pub provider: String,
    /// The model's prices (the `token_usage` records' cost), when the catalogue has them.
    pub pricing: Option<braincode_protocol::ModelPricing>,
    /// System prompt.
    pub system_prompt: String,
    /// Tools offered (already filtered by mode and by the model's tool support).
    pub tools: Vec<SharedTool>,
    /// Maximum model turns that may call tools.
    pub max_turns: u32,
    /// Reasoning effort.
    pub thinking: ThinkingLevel,
    /// Output cap per model call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Structured output for the final answer.
    pub response_schema: Option<ResponseSchema>,
    /// Wall-clock limit per tool call.
    pub tool_timeout: Duration,
    /// Whether answer text is streamed to subscribers as it arrives.
    pub stream_text: bool,
    /// Whether the model reads images (images tools return are shown to it).
    pub vision: bool,
    /// Tools the agent may call by name without being offered them up front (MCP tools found
    /// with `mcp_search`); also unwraps [`MCP_CALL_TOOL`] calls.
    pub resolver: Option<Arc<dyn ToolResolver>>,
    /// When to compact the conversation (`None`: never, the byte guard still applies).
    pub compaction: Option<compact::CompactionPolicy>,
    /// The provider prompt-cache key of this agent's requests (one per role and project:
    /// every worker of a role starts with the same bytes, see [`prompt_cache_key`]).
    pub cache_key: Option<String>,
}

/// The prompt-cache key of `role`'s requests in the project at `project_root`:
/// `braincode-<role>-<16 hex digits of the root's SHA-256>`. Stable across runs and
/// processes, so a second run of the same role hits the provider's cache; nothing in it
/// changes per call.
pub fn prompt_cache_key(project_root: &std::path::Path, role: braincode_protocol::Role) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(project_root.as_os_str().as_encoded_bytes());
    let hex = braincode_protocol::lower_hex(&digest[..8]);
    format!("braincode-{}-{hex}", role.as_str())
}

/// The tool that calls another tool by name: `{"name": …, "arguments": {…}}`. The loop
/// unwraps it, so the gate, the journal and the events see the named tool.
pub const MCP_CALL_TOOL: &str = "mcp_call";

/// Finds tools an agent was not offered up front but may call by name.
#[async_trait::async_trait]
pub trait ToolResolver: Send + Sync {
    /// The tool called `name`, or why there is none (the message goes to the model); `None`
    /// when `name` is not one this resolver knows of (the loop's own "unknown tool" answer).
    async fn resolve(&self, name: &str) -> Option<Result<SharedTool, String>>;
}

/// Shared services an agent uses.
#[derive(Clone)]
pub struct AgentServices {
    /// The model.
    pub client: Arc<dyn ModelClient>,
    /// Permission + approval gate.
    pub gate: Arc<dyn ToolGate>,
    /// Per-run evidence cache, if enabled.
    pub cache: Option<Arc<EvidenceCache>>,
    /// Event sink.
    pub sink: RunSink,
    /// Project root and cancellation for tools.
    pub tool_context: ToolContext,
    /// Tool-call counters shared by the run.
    pub stats: Arc<ToolStats>,
    /// Journaled replies and tool results to serve instead of calling (replay, resume).
    pub tape: Option<Arc<Tape>>,
    /// The run's patch ledger: what Write tools change is journaled and kept for undo
    /// (`None`: not recorded, as in agent tests).
    pub ledger: Option<Arc<crate::ledger::PatchLedger>>,
    /// The run's tool and compaction hooks (`None`: none fire, as in agent tests).
    pub hooks: Option<Arc<crate::hooks::AgentHooks>>,
    /// Checks the protected paths around every call that may write (`None`: not checked, as
    /// when no sandbox confines the run's commands).
    pub protected: Option<Arc<crate::protect::ProtectedWatch>>,
}

/// How an agent finished.
#[derive(Debug, Clone, Default)]
pub struct AgentOutcome {
    /// Final answer text.
    pub text: String,
    /// The whole conversation (stays with this agent; never forwarded to another one).
    pub messages: Vec<ChatMessage>,
    /// Tokens spent, summed over every model call.
    pub usage: Usage,
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls made.
    pub tool_calls: u32,
    /// Tool calls that failed.
    pub failed_tool_calls: u32,
    /// Whether the turn limit forced the answer.
    pub hit_turn_limit: bool,
}

/// Why an agent stopped without an answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AgentError {
    /// The model call failed.
    #[error("{0}")]
    Model(ModelError),
    /// The run was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The conversation outgrew what a provider accepts; a handoff is needed.
    #[error(
        "the conversation is {estimated} bytes, over the {limit}-byte request limit; continue in a new session with a handoff"
    )]
    ContextTooLarge {
        /// Estimated request size.
        estimated: usize,
        /// The guard's limit.
        limit: usize,
    },
}

impl AgentError {
    /// Whether trying the next model candidate makes sense.
    pub fn allows_fallback(&self) -> bool {
        match self {
            AgentError::Model(err) => err.kind.allows_fallback(),
            AgentError::Cancelled | AgentError::ContextTooLarge { .. } => false,
        }
    }
}

/// Most images of one turn's tool results shown to a model, and the largest (base64 bytes).
const MAX_TOOL_IMAGES: usize = 4;
const MAX_TOOL_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// The text leading the message that carries the images of one turn's tool results.
pub(crate) const TOOL_IMAGES_TEXT: &str = "Images returned by the tool calls above:";

/// The images tools returned in one turn, as a user message after the tool results (every
/// wire API takes images there; not all take them inside a tool result).
fn image_message(images: Vec<braincode_tools::ToolImage>) -> Option<ChatMessage> {
    let mut content = vec![braincode_llm::ContentPart::Text {
        text: TOOL_IMAGES_TEXT.into(),
    }];
    content.extend(
        images
            .into_iter()
            .filter(|image| {
                matches!(
                    image.mime_type.as_str(),
                    "image/png" | "image/jpeg" | "image/gif" | "image/webp"
                ) && image.data.len() <= MAX_TOOL_IMAGE_BYTES
            })
            .take(MAX_TOOL_IMAGES)
            .map(|image| braincode_llm::ContentPart::Image {
                mime_type: image.mime_type,
                data: image.data,
            }),
    );
    (content.len() > 1).then_some(ChatMessage::User { content })
}

/// Runs one agent to its final answer.
pub async fn run_agent(
    setup: &AgentSetup,
    services: &AgentServices,
    mut messages: Vec<ChatMessage>,
) -> Result<AgentOutcome, AgentError> {
    let cancel = services.tool_context.cancel.clone();
    let tools_by_name: BTreeMap<&str, &SharedTool> = setup
        .tools
        .iter()
        .map(|t| (t.definition().name.as_str(), t))
        .collect();
    let tool_specs: Vec<ToolSpec> = setup
        .tools
        .iter()
        .map(|t| {
            let d = t.definition();
            ToolSpec {
                name: d.name.clone(),
                description: d.description.clone(),
                parameters: d.parameters.clone(),
            }
        })
        .collect();

    let mut outcome = AgentOutcome::default();
    let mut turn: u32 = 0;
    // Compacted turns live in a summary block after the role's system prompt.
    let mut compacting = compacting::Compacting::default();
    loop {
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        let out_of_turns = turn >= setup.max_turns;
        if out_of_turns && !tool_specs.is_empty() {
            outcome.hit_turn_limit = true;
            messages.push(ChatMessage::user_text(
                "You have used every tool turn available for this task. Do not call tools. \
                 Answer now with what you have found, and say what is left undone.",
            ));
        }
        let offer_tools = !out_of_turns && !tool_specs.is_empty();
        compacting
            .before_call(setup, services, &mut messages, outcome.model_calls)
            .await;
        let request = ChatRequest {
            system: Some(compacting.system(setup)),
            messages: messages.clone(),
            tools: if offer_tools {
                tool_specs.clone()
            } else {
                Vec::new()
            },
            thinking: setup.thinking,
            max_tokens: setup.max_tokens,
            temperature: setup.temperature,
            // Structured output only constrains the final answer, never a tool-calling turn.
            response_schema: if offer_tools {
                None
            } else {
                setup.response_schema.clone()
            },
            cache_key: setup.cache_key.clone(),
        };
        guard_request_size(&request)?;

        let completion = match next_completion(
            setup,
            services,
            request,
            (outcome.model_calls, messages.len()),
            &cancel,
        )
        .await
        {
            Err(AgentError::Model(error))
                if error.kind == braincode_llm::ErrorKind::ContextTooLong =>
            {
                // The provider counts differently from the estimate: compact harder, once,
                // and ask again (the failed call keeps its own index in the journal).
                outcome.model_calls += 1;
                if compacting
                    .after_overflow(setup, services, &mut messages, outcome.model_calls)
                    .await
                {
                    continue;
                }
                return Err(AgentError::Model(error));
            }
            other => other?,
        };
        outcome.model_calls += 1;
        if let Some(usage) = completion.usage {
            outcome.usage.add(&usage);
        }
        let tool_calls = if offer_tools {
            completion.tool_calls
        } else {
            Vec::new()
        };
        messages.push(ChatMessage::Assistant {
            text: completion.text.clone(),
            tool_calls: tool_calls.clone(),
        });
        if tool_calls.is_empty() {
            outcome.text = completion.text;
            outcome.messages = messages;
            return Ok(outcome);
        }
        turn += 1;
        let results = execute_calls(setup, services, &tools_by_name, &tool_calls, &cancel).await?;
        let mut images = Vec::new();
        for (call, mut output) in tool_calls.iter().zip(results) {
            outcome.tool_calls += 1;
            if output.is_error {
                outcome.failed_tool_calls += 1;
            }
            if !output.images.is_empty() {
                if setup.vision {
                    output
                        .content
                        .push_str("\n[its images follow this turn's tool results]");
                    images.append(&mut output.images);
                } else {
                    output
                        .content
                        .push_str("\n[the model in use does not read images; they are not shown]");
                }
            }
            messages.push(ChatMessage::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: output.content,
                is_error: output.is_error,
            });
        }
        if let Some(message) = image_message(images) {
            messages.push(message);
        }
    }
}
