//! Planning: the routeBrain model with a structured-output schema, the conversational fast
//! path, and the deterministic heuristic — whose use instead of the router is always
//! recorded with its reason and shown to the user.

use braincode_brain::{
    PlanInput, RouterPromptInput, RoutingPlan, RuntimePlan, build_router_prompt,
    build_runtime_plan, heuristic_route, is_fast_path_eligible, normalize_router_decision,
    parse_router_reply, router_decision_schema, routing_limits,
};
use braincode_llm::{Candidate, ChatMessage, ContentPart, ErrorKind, ModelError, ResponseSchema};
use braincode_protocol::{Phase, Role, RoutingSource};

use crate::agent::{AgentError, AgentSetup, run_agent};
use crate::run::fallback::{Fallback, StopRule, each_candidate};
use crate::run::state::{AgentIdentity, RunShared};

/// How the plan should be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RoutingChoice {
    /// Ask the routeBrain model (fast path and heuristic fallback apply).
    #[default]
    Auto,
    /// Use the deterministic heuristic only (diagnostics, `--heuristic`).
    HeuristicOnly,
    /// Every routed role answers independently (`/team-test`, `--team-test`): the router is
    /// skipped.
    TeamTest,
}

impl RoutingChoice {
    /// The name journaled in `run_start`.
    pub fn as_str(self) -> &'static str {
        match self {
            RoutingChoice::Auto => "auto",
            RoutingChoice::HeuristicOnly => "heuristic",
            RoutingChoice::TeamTest => "team-test",
        }
    }

    /// Parses a journaled name.
    pub fn from_name(name: &str) -> Option<RoutingChoice> {
        match name {
            "auto" => Some(RoutingChoice::Auto),
            "heuristic" => Some(RoutingChoice::HeuristicOnly),
            "team-test" => Some(RoutingChoice::TeamTest),
            _ => None,
        }
    }
}

/// Output cap of the router's reply.
const ROUTER_MAX_TOKENS: u32 = 900;

/// Why planning could not produce a plan at all.
#[derive(Debug)]
pub(crate) enum PlanFailure {
    /// Cancelled.
    Cancelled,
    /// Image prompts need the router; it failed.
    ImageRouting(String),
}

/// Makes the run's plan.
/// A plan and the router model that made it (none when the router was not used).
pub(crate) struct Planned {
    pub plan: RuntimePlan,
    pub router_model: Option<String>,
}

/// Makes the run's plan. The router model sees the whole request (references, continuity);
/// the heuristic, the fast path and the plan's goal read only the request's own words, so words
/// inside a referenced file or an earlier turn cannot pick roles. A continued conversation is
/// never vague: its clarification gate is off, and it never takes the fast path.
pub(crate) async fn make_plan(
    shared: &RunShared,
    choice: RoutingChoice,
    new_id: &mut (dyn FnMut() -> String + Send),
) -> Result<Planned, PlanFailure> {
    let brain = &shared.brain;
    let prompt = shared.request.as_str();
    let own_words = shared.routing_text.as_str();
    let mut heuristic = heuristic_route(own_words, brain, shared.mode);
    if shared.continued {
        heuristic.clarification = Default::default();
    }
    let image_count = shared.images.len();
    let mut router_model = None;
    let mut conversational = false;
    let (routing, source, fallback_reason) = match choice {
        RoutingChoice::HeuristicOnly => {
            let mut plan = heuristic;
            plan.reason = "heuristic diagnostic; router brain not requested".into();
            (plan, RoutingSource::Heuristic, None)
        }
        RoutingChoice::TeamTest => (
            braincode_brain::team_routing(),
            RoutingSource::Heuristic,
            None,
        ),
        RoutingChoice::Auto
            if image_count == 0
                && !shared.continued
                && is_fast_path_eligible(own_words, &heuristic, image_count) =>
        {
            let mut plan = heuristic;
            plan.reason = braincode_brain::FAST_PATH_REASON.into();
            conversational = true;
            (plan, RoutingSource::Heuristic, None)
        }
        // A planner that is only the embedded model (135M parameters) echoes its template or
        // plans worse than the heuristic, and its call costs seconds on a laptop: skipped.
        RoutingChoice::Auto
            if image_count == 0
                && brain.router_policy().chain() == [braincode_brain::LOCAL_MODEL_ID] =>
        {
            let mut plan = heuristic;
            plan.reason = "deterministic heuristic plan (the planner is the embedded model)".into();
            let reason = format!(
                "the planner is the embedded model ({}), too small to plan better than the heuristic; a key or a local model server gets the router brain",
                braincode_brain::LOCAL_MODEL_ID
            );
            (plan, RoutingSource::Heuristic, Some(reason))
        }
        RoutingChoice::Auto => match route_with_brain(shared, prompt, &heuristic).await {
            Ok((plan, model)) => {
                router_model = Some(model);
                (plan, RoutingSource::RouterBrain, None)
            }
            Err(RouterFailure::Cancelled) => return Err(PlanFailure::Cancelled),
            Err(RouterFailure::Failed(reason)) => {
                if image_count > 0 {
                    return Err(PlanFailure::ImageRouting(format!(
                        "image routing failed ({reason}); prompts with images need the router brain, so there is deliberately no heuristic fallback"
                    )));
                }
                let mut plan = heuristic;
                plan.reason = "deterministic heuristic plan (router brain unavailable)".into();
                shared.sink.warning(format!(
                    "router brain not used: {reason}; planned with the heuristic"
                ));
                (plan, RoutingSource::Heuristic, Some(reason))
            }
        },
    };
    let mut plan = build_runtime_plan(PlanInput {
        brain_id: &shared.brain_id,
        brain,
        mode: shared.mode,
        goal: own_words,
        routing,
        source,
        fallback_reason,
        new_id,
    });
    plan.conversational = conversational;
    Ok(Planned { plan, router_model })
}

enum RouterFailure {
    Cancelled,
    Failed(String),
}

async fn route_with_brain(
    shared: &RunShared,
    prompt: &str,
    heuristic: &RoutingPlan,
) -> Result<(RoutingPlan, String), RouterFailure> {
    let brain = &shared.brain;
    let policy = brain.router_policy();
    let limits = routing_limits(&brain.routing, shared.mode);
    let selection = shared
        .factory
        .candidates(&policy.chain(), !shared.images.is_empty());
    if selection.is_empty() {
        return Err(RouterFailure::Failed(selection.error_message("routeBrain")));
    }
    let router_prompt = build_router_prompt(&RouterPromptInput {
        prompt,
        mode: shared.mode,
        limits,
        image_count: shared.images.len(),
        brain,
        models: shared.factory.catalog(),
    });
    let mut reasons = Vec::new();
    let input = RouterAttempt {
        shared,
        prompt: &router_prompt,
        heuristic,
        limits: &limits,
    };
    let outcome = each_candidate(
        &selection.usable,
        StopRule::Run,
        |candidate, attempt| input.attempt(candidate, attempt),
        |failure| {
            let reason = match &failure.error {
                AgentError::Model(err) if err.message.starts_with(UNUSABLE_PLAN) => {
                    err.message.clone()
                }
                other => other.to_string(),
            };
            reasons.push(format!("{}: {reason}", failure.model));
        },
    )
    .await;
    match outcome {
        Fallback::Done(done) => Ok(done),
        Fallback::Cancelled => Err(RouterFailure::Cancelled),
        Fallback::Exhausted(_) => Err(RouterFailure::Failed(reasons.join("; "))),
    }
}

/// How a router reply that is not a plan is described.
const UNUSABLE_PLAN: &str = "the reply was not a usable plan";

/// What every router attempt shares.
struct RouterAttempt<'a> {
    shared: &'a RunShared,
    prompt: &'a str,
    heuristic: &'a RoutingPlan,
    limits: &'a braincode_brain::RoutingLimits,
}

impl RouterAttempt<'_> {
    /// One router attempt on one model: a reply that is not a usable plan is a failure.
    async fn attempt(
        &self,
        candidate: Candidate,
        attempt: u32,
    ) -> Result<(RoutingPlan, String), AgentError> {
        let shared = self.shared;
        let brain = &shared.brain;
        let model_id = candidate.definition.id.clone();
        shared
            .sink
            .status(format!("routing with routeBrain on {model_id}"));
        let client = shared
            .factory
            .client(&candidate)
            .await
            .map_err(AgentError::Model)?;
        let identity = AgentIdentity {
            role: Role::RouteBrain,
            phase: Phase::Router,
            task_id: None,
            parent_id: None,
            agent_session_id: format!("router-{attempt}"),
            attempt,
        };
        let setup = AgentSetup {
            thinking: brain.router_policy().thinking_level,
            max_tokens: Some(ROUTER_MAX_TOKENS),
            response_schema: Some(ResponseSchema {
                name: "router_decision".into(),
                schema: router_decision_schema(self.limits),
            }),
            ..shared.agent_setup(identity, &candidate)
        };
        let mut content = vec![ContentPart::Text {
            text: self.prompt.to_string(),
        }];
        content.extend(shared.images.iter().cloned());
        let outcome = run_agent(
            &setup,
            &shared.services(client),
            vec![ChatMessage::User { content }],
        )
        .await?;
        match parse_router_reply(&outcome.text) {
            Ok(raw) => {
                let plan = normalize_router_decision(&raw, self.heuristic, self.limits, brain);
                Ok((plan, model_id))
            }
            Err(err) => Err(AgentError::Model(
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!("{UNUSABLE_PLAN} ({err})"),
                )
                .with_model(model_id),
            )),
        }
    }
}
