//! What a scripted model sees of a request ([`ModelCall`]: the model asked, the request, who
//! is asking), the named [`Matcher`]s that select a script rule, and the [`RequestLog`] of a
//! run.

use std::collections::BTreeMap;
use std::sync::Arc;

use braincode_llm::{ChatMessage, ChatRequest, ContentPart};
use braincode_protocol::Role;

/// Which part of the orchestrator is asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// The routeBrain planner (structured output `router_decision`).
    Router,
    /// A support (or dispatched) worker: "Run this isolated worker handoff".
    Support,
    /// The independent reviewer: "Review this result independently".
    Review,
    /// The primary agent (anything else).
    Primary,
}

/// The prefix of every routed role's built-in system prompt.
fn role_line(role: Role) -> String {
    format!(
        "You are Braincode's {} agent.",
        braincode_brain::role_profile(role).label
    )
}

/// One request, as the script sees it: which model was asked, and the request itself.
#[derive(Debug, Clone)]
pub struct ModelCall {
    /// Catalogue id of the model asked (e.g. `test/backend`).
    pub model: String,
    /// The request.
    pub request: ChatRequest,
    /// The rule that answered it (`None` before matching, or when none matched).
    pub answered_by: Option<String>,
}

impl ModelCall {
    /// The system prompt (empty when none).
    pub fn system(&self) -> &str {
        self.request.system.as_deref().unwrap_or_default()
    }

    /// The structured-output schema name (`router_decision`, `worker_result`,
    /// `review_result`), if any.
    pub fn schema_name(&self) -> Option<&str> {
        self.request
            .response_schema
            .as_ref()
            .map(|s| s.name.as_str())
    }

    fn user_texts(&self) -> impl Iterator<Item = String> + '_ {
        self.request.messages.iter().filter_map(|m| match m {
            ChatMessage::User { content } => Some(
                content
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text { text } => Some(text.as_str()),
                        ContentPart::Image { .. } => None,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
    }

    /// Text of the first user message (the prompt the runtime built for this agent).
    pub fn first_user_text(&self) -> String {
        self.user_texts().next().unwrap_or_default()
    }

    /// Text of the last user message.
    pub fn last_user_text(&self) -> String {
        self.user_texts().last().unwrap_or_default()
    }

    /// Whether the last message is a tool result (the agent is on a tool turn).
    pub fn is_tool_turn(&self) -> bool {
        matches!(self.request.messages.last(), Some(ChatMessage::Tool { .. }))
    }

    /// The contents of the tool results the agent has seen so far, in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.request
            .messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    }

    /// Names of the tools offered.
    pub fn tool_names(&self) -> Vec<&str> {
        self.request.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// Who is asking, from the schema and the way the runtime's prompts begin.
    pub fn kind(&self) -> CallKind {
        let first = self.first_user_text();
        match self.schema_name() {
            Some("router_decision") => CallKind::Router,
            Some("review_result") => CallKind::Review,
            Some("worker_result") => CallKind::Support,
            _ if first.starts_with("Review this result independently") => CallKind::Review,
            _ if first.starts_with("Run this isolated worker handoff") => CallKind::Support,
            _ if self
                .system()
                .starts_with("You are Braincode's routing brain") =>
            {
                CallKind::Router
            }
            _ => CallKind::Primary,
        }
    }

    /// The role whose built-in system prompt this request carries (`None` for a custom
    /// prompt). The router is [`Role::RouteBrain`].
    pub fn role(&self) -> Option<Role> {
        let system = self.system();
        if system.starts_with("You are Braincode's routing brain") {
            return Some(Role::RouteBrain);
        }
        Role::ALL
            .into_iter()
            .find(|role| system.starts_with(&role_line(*role)))
    }

    /// One line for failure messages.
    pub fn describe(&self) -> String {
        let first: String = self.first_user_text().chars().take(100).collect();
        format!(
            "model={} kind={:?} role={:?} tool_turn={} first user text={first:?}",
            self.model,
            self.kind(),
            self.role(),
            self.is_tool_turn()
        )
    }
}

type Predicate = Arc<dyn Fn(&ModelCall) -> bool + Send + Sync>;

/// A named predicate over a [`ModelCall`]; the name is what [`RequestLog::hits`] counts by.
#[derive(Clone)]
pub struct Matcher {
    name: String,
    test: Predicate,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Matcher").field(&self.name).finish()
    }
}

impl Matcher {
    /// A matcher from any predicate.
    pub fn new(
        name: impl Into<String>,
        test: impl Fn(&ModelCall) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            test: Arc::new(test),
        }
    }
    /// Every request.
    pub fn any() -> Self {
        Self::new("any", |_| true)
    }
    /// Requests from one part of the orchestrator, named `router`, `support`, `review` or
    /// `primary`.
    pub fn kind(kind: CallKind) -> Self {
        Self::new(format!("{kind:?}").to_lowercase(), move |c| {
            c.kind() == kind
        })
    }
    /// The router.
    pub fn router() -> Self {
        Self::kind(CallKind::Router)
    }
    /// The primary agent.
    pub fn primary() -> Self {
        Self::kind(CallKind::Primary)
    }
    /// The reviewer.
    pub fn review() -> Self {
        Self::kind(CallKind::Review)
    }
    /// Any support worker.
    pub fn any_support() -> Self {
        Self::kind(CallKind::Support)
    }
    /// The support worker of `role` (its system prompt is that role's).
    pub fn support(role: Role) -> Self {
        Self::new(format!("support:{role}"), move |c| {
            c.kind() == CallKind::Support && c.role() == Some(role)
        })
    }
    /// Any request whose system prompt is `role`'s (support, primary or review).
    pub fn role(role: Role) -> Self {
        Self::new(format!("role:{role}"), move |c| c.role() == Some(role))
    }
    /// Requests to the model with catalogue id `id`.
    pub fn model(id: &str) -> Self {
        let id = id.to_string();
        Self::new(format!("model:{id}"), move |c| c.model == id)
    }
    /// The system prompt contains `text`.
    pub fn system_contains(text: &str) -> Self {
        let text = text.to_string();
        Self::new(format!("system~{text}"), move |c| {
            c.system().contains(&text)
        })
    }
    /// The last user message contains `text`.
    pub fn last_user_contains(text: &str) -> Self {
        let text = text.to_string();
        Self::new(format!("last_user~{text}"), move |c| {
            c.last_user_text().contains(&text)
        })
    }
    /// This and `other` (named `<this>&<other>`).
    pub fn and(self, other: Matcher) -> Self {
        let name = format!("{}&{}", self.name, other.name);
        Self::new(name, move |c| (self.test)(c) && (other.test)(c))
    }
    /// The same predicate under another name.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether `call` matches.
    pub fn matches(&self, call: &ModelCall) -> bool {
        (self.test)(call)
    }
}

/// Every request the scripted models received, in arrival order.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    calls: Vec<ModelCall>,
    unmatched: usize,
}

impl RequestLog {
    /// Every request.
    pub fn calls(&self) -> &[ModelCall] {
        &self.calls
    }
    /// How many requests there were.
    pub fn total(&self) -> usize {
        self.calls.len()
    }
    /// How many requests the rule whose matcher is named `name` answered.
    pub fn hits(&self, name: &str) -> usize {
        self.calls
            .iter()
            .filter(|c| c.answered_by.as_deref() == Some(name))
            .count()
    }
    /// How many requests `matcher` matches (whichever rule answered them).
    pub fn count(&self, matcher: &Matcher) -> usize {
        self.calls.iter().filter(|c| matcher.matches(c)).count()
    }
    /// How many requests came from `kind`.
    pub fn of_kind(&self, kind: CallKind) -> usize {
        self.calls.iter().filter(|c| c.kind() == kind).count()
    }
    /// How many requests went to model `id`.
    pub fn to_model(&self, id: &str) -> usize {
        self.calls.iter().filter(|c| c.model == id).count()
    }
    /// How many requests no rule answered.
    pub fn unmatched(&self) -> usize {
        self.unmatched
    }
    /// Logs one request (`matched`: a rule answered it).
    pub(super) fn record(&mut self, call: ModelCall, matched: bool) {
        if !matched {
            self.unmatched += 1;
        }
        self.calls.push(call);
    }
    /// Requests per model id.
    pub fn per_model(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for call in &self.calls {
            *counts.entry(call.model.clone()).or_insert(0) += 1;
        }
        counts
    }
}
