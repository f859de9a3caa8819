//! The BrainPet's optional model (spec 1.13): a one-shot completion on the brain's `pet`
//! role that turns a small snapshot of the running session into a status and two short
//! lines. Anything that goes wrong (no pet model, a timeout, a reply that is not the JSON
//! asked for) is an error the caller answers with its deterministic status.
//!
//! Unlike the reference, the pet's tokens are not free: every reply with usage is journaled
//! as a `token_usage` record (role and phase `pet`, with its cost) in the session it watched,
//! so `braincode usage` and the run's fold count it.

use std::sync::Arc;
use std::time::Duration;

use braincode_brain::BrainModel;
use braincode_config::{Home, JournalWriter};
use braincode_llm::{
    Candidate, ChatMessage, ChatRequest, ClientOptions, ErrorKind, ModelError, collect_stream,
};
use braincode_protocol::{Phase, Record, Role, SessionId, ThinkingLevel, TokenUsage, Usage};
use tokio_util::sync::CancellationToken;

use crate::agent::AgentError;
use crate::config::{load_brain_presets, load_models, load_settings, select_brain};
use crate::models::{ClientOverride, ModelFactory};
use crate::run::fallback::{Fallback, StopRule, each_candidate};

/// How often a watcher asks the pet model while a run is going.
pub const PET_POLL: Duration = Duration::from_secs(8);
/// How long one pet call may take before the deterministic status is used.
pub const PET_TIMEOUT: Duration = Duration::from_secs(12);
/// The pet's output cap.
pub const PET_MAX_TOKENS: u32 = 160;
/// The pet's temperature (a status line, not a creative text).
pub const PET_TEMPERATURE: f32 = 0.2;
/// How many transcript items a snapshot carries, newest last.
pub const SNAPSHOT_ITEMS: usize = 6;
/// How many characters each snapshot item keeps.
pub const SNAPSHOT_ITEM_CHARS: usize = 140;
/// Longest status the pet may show, in characters.
const STATUS_CHARS: usize = 24;
/// Longest line the pet may show, in characters.
const LINE_CHARS: usize = 28;
/// Most lines the pet may show.
const MAX_LINES: usize = 2;

/// What the pet is told about the session: a few recent transcript items and the live state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PetSnapshot {
    /// Recent transcript items, oldest first (clipped to [`SNAPSHOT_ITEMS`] ×
    /// [`SNAPSHOT_ITEM_CHARS`] by [`pet_prompt`]).
    pub items: Vec<String>,
    /// The agents' state in a few words (`routing`, `running tools`, `drafting reply`).
    pub state: String,
    /// Prompts waiting for the running request.
    pub queued: usize,
    /// Tools running now.
    pub active_tools: Vec<String>,
    /// Workers running now (`backend: fix the login`).
    pub active_workers: Vec<String>,
}

/// What the pet model said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PetReply {
    /// The status (at most 24 characters).
    pub status: String,
    /// At most two lines (at most 28 characters each).
    pub lines: Vec<String>,
}

/// Clips `text` to `max` characters on one line (whitespace runs become one space).
fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut clipped: String = line.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// The user message of one pet call.
pub fn pet_prompt(snapshot: &PetSnapshot) -> String {
    let mut out = String::from("Session snapshot.\nRecent transcript (oldest first):\n");
    let skip = snapshot.items.len().saturating_sub(SNAPSHOT_ITEMS);
    if snapshot.items.is_empty() {
        out.push_str("- (nothing yet)\n");
    }
    for item in &snapshot.items[skip..] {
        out.push_str("- ");
        out.push_str(&one_line(item, SNAPSHOT_ITEM_CHARS));
        out.push('\n');
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_string()
        } else {
            items
                .iter()
                .map(|i| one_line(i, SNAPSHOT_ITEM_CHARS))
                .collect::<Vec<_>>()
                .join("; ")
        }
    };
    out.push_str(&format!(
        "Agent state: {}\nQueued prompts: {}\nActive tools: {}\nActive workers: {}\n",
        one_line(&snapshot.state, SNAPSHOT_ITEM_CHARS),
        snapshot.queued,
        list(&snapshot.active_tools),
        list(&snapshot.active_workers),
    ));
    out.push_str("Reply with the JSON object only.");
    out
}

/// Reads `{status, lines}` from a reply: bare JSON, a fenced block, or the first `{…}` in
/// prose (the extraction every structured reply uses). Anything else is an error that says why.
pub fn parse_pet_reply(text: &str) -> Result<PetReply, String> {
    let value = braincode_context::extract_json_object(text)
        .map(serde_json::Value::Object)
        .map_err(|err| {
            format!(
                "the pet reply is not JSON ({err}): {}",
                one_line(text.trim(), 80)
            )
        })?;
    let status = value
        .get("status")
        .and_then(|s| s.as_str())
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or("the pet reply has no `status` string")?;
    let lines = match value.get("lines") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(lines)) => lines
            .iter()
            .map(|l| l.as_str().ok_or("`lines` must hold strings"))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(MAX_LINES)
            .map(|l| one_line(l, LINE_CHARS))
            .collect(),
        Some(_) => return Err("`lines` must be an array of strings".into()),
    };
    Ok(PetReply {
        status: one_line(status, STATUS_CHARS),
        lines,
    })
}

/// The pet role's model for one session: the usable remote models of the brain's `pet`
/// chain, tried in order on each call.
pub struct PetModel {
    home: Home,
    brain_id: String,
    thinking: ThinkingLevel,
    candidates: Vec<Candidate>,
    factory: ModelFactory,
    timeout: Duration,
}

impl std::fmt::Debug for PetModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PetModel")
            .field("brain_id", &self.brain_id)
            .field(
                "models",
                &self
                    .candidates
                    .iter()
                    .map(|c| c.definition.id.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Why a session has no pet model (shown once, never an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoPetModel(pub String);

impl PetModel {
    /// The pet model of `brain` (the configured default when `None`). `Err` says why there
    /// is none: the configuration does not load, the brain sets no usable pet model, or its
    /// pet chain has only the embedded model, which serves the run itself (a status call
    /// would stall the run on a small machine).
    pub fn load(
        home: &Home,
        brain: Option<&str>,
        client_override: Option<Arc<dyn ClientOverride>>,
    ) -> Result<PetModel, NoPetModel> {
        let fail = |what: &dyn std::fmt::Display| NoPetModel(what.to_string());
        let settings = load_settings(home).map_err(|e| fail(&e))?;
        let presets = load_brain_presets(home).map_err(|e| fail(&e))?;
        let models = load_models(home).map_err(|e| fail(&e))?;
        let selected = select_brain(home, &presets, &settings, brain).map_err(|e| fail(&e))?;
        let options = ClientOptions::default().with_settings(&settings.models);
        let factory = ModelFactory::new(home.clone(), models, options, client_override)
            .with_oauth(settings.auth.oauth.clone());
        Self::for_brain(home, selected.id, &selected.brain, factory)
    }

    fn for_brain(
        home: &Home,
        brain_id: String,
        brain: &BrainModel,
        factory: ModelFactory,
    ) -> Result<PetModel, NoPetModel> {
        let policy = brain.policy(Role::Pet);
        let selection = factory.candidates(&policy.chain(), false);
        let candidates: Vec<Candidate> = selection
            .usable
            .into_iter()
            .filter(|c| !c.definition.is_local())
            .collect();
        if candidates.is_empty() {
            return Err(NoPetModel(format!(
                "brain {brain_id} has no usable remote pet model (roles.pet); the pet shows the run's own events"
            )));
        }
        Ok(PetModel {
            home: home.clone(),
            brain_id,
            thinking: policy.thinking_level,
            candidates,
            factory,
            timeout: PET_TIMEOUT,
        })
    }

    /// The same model with another call timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The model ids tried, in order.
    pub fn model_ids(&self) -> Vec<&str> {
        self.candidates
            .iter()
            .map(|c| c.definition.id.as_str())
            .collect()
    }

    /// Asks the pet about `snapshot`. The whole call (fallbacks included) is bounded by the
    /// timeout; usage of every call that reported it is journaled in `session`.
    pub async fn ask(
        &self,
        snapshot: &PetSnapshot,
        session: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<PetReply, String> {
        // A call that runs out of time is stopped, not left streaming in the background.
        let call_cancel = cancel.child_token();
        let call = self.ask_chain(snapshot, session, &call_cancel);
        match tokio::time::timeout(self.timeout, call).await {
            Ok(result) => result,
            Err(_) => {
                call_cancel.cancel();
                Err(format!(
                    "the pet model did not answer within {} s",
                    self.timeout.as_secs_f32()
                ))
            }
        }
    }

    async fn ask_chain(
        &self,
        snapshot: &PetSnapshot,
        session: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<PetReply, String> {
        let request = ChatRequest {
            system: Some(braincode_brain::PET_PROMPT.to_string()),
            messages: vec![ChatMessage::user_text(pet_prompt(snapshot))],
            thinking: self.thinking,
            max_tokens: Some(PET_MAX_TOKENS),
            temperature: Some(PET_TEMPERATURE),
            ..ChatRequest::default()
        };
        let mut reasons = Vec::new();
        let outcome = each_candidate(
            &self.candidates,
            StopRule::SideCall,
            |candidate, attempt| {
                let request = request.clone();
                async move {
                    let (text, usage) = match self.call(&candidate, request, cancel).await {
                        Ok(reply) => reply,
                        Err(err) if err.kind == ErrorKind::Cancelled => {
                            return Err(AgentError::Cancelled);
                        }
                        Err(err) => return Err(AgentError::Model(err)),
                    };
                    if let Some(usage) = usage {
                        self.record_usage(session, &candidate, usage, attempt as usize - 1);
                    }
                    Ok((candidate.definition.id, text))
                }
            },
            |failure| reasons.push(failure.brief()),
        )
        .await;
        match outcome {
            Fallback::Done((id, text)) => parse_pet_reply(&text).map_err(|e| format!("{id}: {e}")),
            Fallback::Cancelled => Err(ModelError::cancelled().message),
            Fallback::Exhausted(_) => Err(reasons.join("; ")),
        }
    }

    async fn call(
        &self,
        candidate: &Candidate,
        request: ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<(String, Option<Usage>), ModelError> {
        let client = self.factory.client(candidate).await?;
        let stream = client.stream(request, cancel.clone()).await?;
        let completion = collect_stream(stream, |_| {}).await?;
        Ok((completion.text, completion.usage))
    }

    /// Journals one call's usage in the watched session (appends are atomic, so this never
    /// tears the run's own records).
    fn record_usage(&self, session: &SessionId, candidate: &Candidate, usage: Usage, call: usize) {
        let definition = &candidate.definition;
        let cost = definition
            .pricing
            .as_ref()
            .map(|price| price.cost_micro_usd(&usage));
        let agent_session = format!("pet-{}", braincode_config::journal::now_ms());
        let record = Record::TokenUsage(TokenUsage {
            role: Some(Role::Pet),
            phase: Some(Phase::Pet),
            brain_id: Some(self.brain_id.clone()),
            model_id: Some(definition.id.clone()),
            provider: Some(definition.provider.clone()),
            turn_id: Some(format!("{agent_session}:0:{call}")),
            agent_session_id: Some(agent_session),
            task_id: None,
            parent_id: None,
            attempt: Some(call as u32 + 1),
            usage,
            cost_micro_usd: cost,
            duration_ms: None,
        });
        let written = JournalWriter::open(&self.home, session).and_then(|mut w| w.append(&record));
        if let Err(err) = written {
            tracing::warn!("the pet's token usage was not journaled: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_bare_fenced_and_in_prose() {
        let bare = parse_pet_reply(
            r#"{"status":"reading auth.rs","lines":["two files","so far so good"]}"#,
        )
        .unwrap();
        assert_eq!(bare.status, "reading auth.rs");
        assert_eq!(bare.lines, ["two files", "so far so good"]);
        let fenced =
            parse_pet_reply("```json\n{\"status\": \"idle\", \"lines\": []}\n```").unwrap();
        assert_eq!(fenced.status, "idle");
        assert!(fenced.lines.is_empty());
        let prose = parse_pet_reply("Sure! {\"status\": \"testing\"} hope that helps").unwrap();
        assert_eq!(prose.status, "testing");
    }

    #[test]
    fn replies_are_clipped_to_the_panel() {
        let reply = parse_pet_reply(
            r#"{"status":"reading every single file in the repository","lines":["a","b","c","a very long line that goes on and on"]}"#,
        )
        .unwrap();
        assert_eq!(reply.status.chars().count(), STATUS_CHARS);
        assert!(reply.status.ends_with('…'));
        assert_eq!(reply.lines, ["a", "b"]);
    }

    #[test]
    fn malformed_replies_are_errors_that_say_why() {
        assert!(
            parse_pet_reply("I am reading files")
                .unwrap_err()
                .contains("not JSON")
        );
        assert!(
            parse_pet_reply(r#"{"lines":[]}"#)
                .unwrap_err()
                .contains("status")
        );
        assert!(
            parse_pet_reply(r#"{"status":"x","lines":"y"}"#)
                .unwrap_err()
                .contains("array")
        );
        assert!(
            parse_pet_reply(r#"{"status":"x","lines":[1]}"#)
                .unwrap_err()
                .contains("strings")
        );
    }

    #[test]
    fn the_prompt_keeps_the_newest_items_clipped() {
        let snapshot = PetSnapshot {
            items: (0..9)
                .map(|i| format!("item {i} {}", "x".repeat(300)))
                .collect(),
            state: "running tools".into(),
            queued: 2,
            active_tools: vec!["read_file".into()],
            active_workers: Vec::new(),
        };
        let prompt = pet_prompt(&snapshot);
        assert!(!prompt.contains("item 2 "), "{prompt}");
        assert!(prompt.contains("item 3 ") && prompt.contains("item 8 "));
        assert!(
            prompt
                .lines()
                .all(|l| l.chars().count() <= SNAPSHOT_ITEM_CHARS + 40)
        );
        assert!(prompt.contains("Queued prompts: 2"));
        assert!(prompt.contains("Active tools: read_file"));
        assert!(prompt.contains("Active workers: none"));
    }
}
