//! [`Matcher`]: decides whether a script rule applies to a request.

use std::sync::Arc;

use braincode_protocol::Role;

use crate::asker::CallKind;
use crate::summary::RequestSummary;

type Test = Arc<dyn Fn(&RequestSummary) -> bool + Send + Sync>;

/// A named predicate of a test's own (see [`Matcher::predicate`]).
#[derive(Clone)]
pub struct Predicate {
    name: String,
    test: Test,
}

impl std::fmt::Debug for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Predicate").field(&self.name).finish()
    }
}

impl PartialEq for Predicate {
    /// The same closure under the same name.
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.test, &other.test)
    }
}

/// Decides whether a rule applies to a request. Its [`Matcher::name`] is what the hit
/// counters of an unnamed rule count by.
#[derive(Debug, Clone, PartialEq)]
pub enum Matcher {
    /// Every request.
    Any,
    /// The requested model name equals this.
    Model(String),
    /// The system prompt contains this.
    SystemContains(String),
    /// The last user message contains this.
    LastUserContains(String),
    /// Some message (system included) contains this.
    AnyMessageContains(String),
    /// Whether tools were offered.
    ToolsOffered(bool),
    /// A tool with this name was offered.
    ToolOffered(String),
    /// The part of the orchestrator asking.
    Kind(CallKind),
    /// The role whose built-in system prompt the request carries.
    Role(Role),
    /// All of these.
    All(Vec<Matcher>),
    /// At least one of these.
    AnyOf(Vec<Matcher>),
    /// Not this.
    Not(Box<Matcher>),
    /// This matcher under another name.
    Named(String, Box<Matcher>),
    /// A test's own predicate.
    Predicate(Predicate),
}

impl Matcher {
    /// [`Matcher::Any`].
    pub fn any() -> Self {
        Self::Any
    }
    /// [`Matcher::Model`].
    pub fn model(name: impl Into<String>) -> Self {
        Self::Model(name.into())
    }
    /// [`Matcher::SystemContains`].
    pub fn system_contains(text: impl Into<String>) -> Self {
        Self::SystemContains(text.into())
    }
    /// [`Matcher::LastUserContains`].
    pub fn last_user_contains(text: impl Into<String>) -> Self {
        Self::LastUserContains(text.into())
    }
    /// [`Matcher::AnyMessageContains`].
    pub fn any_message_contains(text: impl Into<String>) -> Self {
        Self::AnyMessageContains(text.into())
    }
    /// Tools were offered.
    pub fn has_tools() -> Self {
        Self::ToolsOffered(true)
    }
    /// No tool was offered.
    pub fn no_tools() -> Self {
        Self::ToolsOffered(false)
    }
    /// [`Matcher::ToolOffered`].
    pub fn tool_offered(name: impl Into<String>) -> Self {
        Self::ToolOffered(name.into())
    }
    /// Requests from one part of the orchestrator (named `router`, `support`, `review` or
    /// `primary`).
    pub fn kind(kind: CallKind) -> Self {
        Self::Kind(kind)
    }
    /// The router.
    pub fn router() -> Self {
        Self::Kind(CallKind::Router)
    }
    /// The primary agent.
    pub fn primary() -> Self {
        Self::Kind(CallKind::Primary)
    }
    /// The reviewer.
    pub fn review() -> Self {
        Self::Kind(CallKind::Review)
    }
    /// Any support worker.
    pub fn any_support() -> Self {
        Self::Kind(CallKind::Support)
    }
    /// The support worker of `role` (named `support:<role>`).
    pub fn support(role: Role) -> Self {
        Self::Kind(CallKind::Support)
            .and(Self::Role(role))
            .named(format!("support:{role}"))
    }
    /// Any request whose system prompt is `role`'s (support, primary or review).
    pub fn role(role: Role) -> Self {
        Self::Role(role)
    }
    /// A predicate of the test's own, named `name`.
    pub fn predicate(
        name: impl Into<String>,
        test: impl Fn(&RequestSummary) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self::Predicate(Predicate {
            name: name.into(),
            test: Arc::new(test),
        })
    }
    /// This and `other`.
    pub fn and(self, other: Matcher) -> Self {
        match self {
            Self::All(mut all) => {
                all.push(other);
                Self::All(all)
            }
            first => Self::All(vec![first, other]),
        }
    }
    /// Not this.
    pub fn negate(self) -> Self {
        Self::Not(Box::new(self))
    }
    /// This matcher under `name`.
    pub fn named(self, name: impl Into<String>) -> Self {
        Self::Named(name.into(), Box::new(self))
    }

    /// The name: `any`, `model:<name>`, `router`, `role:<role>`, `a&b`, … or the one given.
    pub fn name(&self) -> String {
        let join = |all: &[Matcher], separator: &str| {
            all.iter()
                .map(Matcher::name)
                .collect::<Vec<_>>()
                .join(separator)
        };
        match self {
            Self::Any => "any".to_string(),
            Self::Model(name) => format!("model:{name}"),
            Self::SystemContains(text) => format!("system~{text}"),
            Self::LastUserContains(text) => format!("last_user~{text}"),
            Self::AnyMessageContains(text) => format!("message~{text}"),
            Self::ToolsOffered(true) => "tools".to_string(),
            Self::ToolsOffered(false) => "no_tools".to_string(),
            Self::ToolOffered(name) => format!("tool:{name}"),
            Self::Kind(kind) => kind.name().to_string(),
            Self::Role(role) => format!("role:{role}"),
            Self::All(all) => join(all, "&"),
            Self::AnyOf(any) => join(any, "|"),
            Self::Not(inner) => format!("!{}", inner.name()),
            Self::Named(name, _) => name.clone(),
            Self::Predicate(predicate) => predicate.name.clone(),
        }
    }

    /// Whether the request matches.
    pub fn matches(&self, request: &RequestSummary) -> bool {
        match self {
            Self::Any => true,
            Self::Model(name) => request.model.as_deref() == Some(name.as_str()),
            Self::SystemContains(text) => request.system.contains(text.as_str()),
            Self::LastUserContains(text) => request.last_user.contains(text.as_str()),
            Self::AnyMessageContains(text) => request.all_text.contains(text.as_str()),
            Self::ToolsOffered(wanted) => request.tools.is_empty() != *wanted,
            Self::ToolOffered(name) => request.tools.iter().any(|t| t == name),
            Self::Kind(kind) => request.kind() == *kind,
            Self::Role(role) => request.role() == Some(*role),
            Self::All(all) => all.iter().all(|m| m.matches(request)),
            Self::AnyOf(any) => any.iter().any(|m| m.matches(request)),
            Self::Not(inner) => !inner.matches(request),
            Self::Named(_, inner) => inner.matches(request),
            Self::Predicate(predicate) => (predicate.test)(request),
        }
    }

    /// The model names this matcher asks for (listed by the server's `GET …/models`).
    pub(crate) fn model_names(&self, out: &mut Vec<String>) {
        match self {
            Self::Model(name) if !out.contains(name) => out.push(name.clone()),
            Self::All(all) | Self::AnyOf(all) => all.iter().for_each(|m| m.model_names(out)),
            Self::Named(_, inner) => inner.model_names(out),
            Self::Any
            | Self::Model(_)
            | Self::SystemContains(_)
            | Self::LastUserContains(_)
            | Self::AnyMessageContains(_)
            | Self::ToolsOffered(_)
            | Self::ToolOffered(_)
            | Self::Kind(_)
            | Self::Role(_)
            | Self::Not(_)
            | Self::Predicate(_) => {}
        }
    }
}
