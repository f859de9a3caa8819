//! What a scripted model sees of a request, and the matchers that select a rule.

use braincode_llm::{ChatMessage, ChatRequest, ContentPart};
use serde_json::Value;

/// What a matcher sees of a request (built from a `ChatRequest` or a wire JSON body).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestSummary {
    /// The requested model name (`None` for in-process models without a name).
    pub model: Option<String>,
    /// The system prompt.
    pub system: String,
    /// Text of the last user message.
    pub last_user: String,
    /// Every message's text (system included), joined with newlines.
    pub all_text: String,
    /// Names of the tools offered.
    pub tools: Vec<String>,
}

impl RequestSummary {
    /// The summary of an in-process request.
    pub fn from_chat(request: &ChatRequest, model: Option<&str>) -> Self {
        let mut all = Vec::new();
        if let Some(system) = &request.system {
            all.push(system.clone());
        }
        let mut last_user = String::new();
        for message in &request.messages {
            match message {
                ChatMessage::User { content } => {
                    let text = content
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::Text { text } => Some(text.as_str()),
                            ContentPart::Image { .. } => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    last_user = text.clone();
                    all.push(text);
                }
                ChatMessage::Assistant { text, tool_calls } => {
                    all.push(text.clone());
                    for call in tool_calls {
                        all.push(call.raw_arguments.clone());
                    }
                }
                ChatMessage::Tool { content, .. } => all.push(content.clone()),
            }
        }
        Self {
            model: model.map(str::to_string),
            system: request.system.clone().unwrap_or_default(),
            last_user,
            all_text: all.join("\n"),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
        }
    }

    /// The summary of a Chat Completions JSON body.
    pub fn from_json(body: &Value) -> Self {
        let mut system = Vec::new();
        let mut all = Vec::new();
        let mut last_user = String::new();
        for message in body
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = content_text(message.get("content"));
            match message.get("role").and_then(Value::as_str) {
                Some("system" | "developer") => system.push(text.clone()),
                Some("user") => last_user = text.clone(),
                _ => {}
            }
            all.push(text);
            for call in message
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                    all.push(args.to_string());
                }
            }
        }
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| {
                t.pointer("/function/name")
                    .or_else(|| t.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect();
        Self {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            system: system.join("\n"),
            last_user,
            all_text: all.join("\n"),
            tools,
        }
    }

    /// A one-line description for "no scripted reply matches" errors.
    pub fn describe(&self) -> String {
        format!(
            "model={:?}, system={:?}, last user message={:?}, tools={:?}",
            self.model.as_deref().unwrap_or("-"),
            clip(&self.system, 80),
            clip(&self.last_user, 120),
            self.tools
        )
    }
}

/// The text of a Chat Completions `content` (a string or an array of parts).
pub(crate) fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn clip(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Decides whether a rule applies to a request.
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
    /// All of these.
    All(Vec<Matcher>),
    /// At least one of these.
    AnyOf(Vec<Matcher>),
    /// Not this.
    Not(Box<Matcher>),
}

impl Matcher {
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
            Self::All(all) => all.iter().all(|m| m.matches(request)),
            Self::AnyOf(any) => any.iter().any(|m| m.matches(request)),
            Self::Not(inner) => !inner.matches(request),
        }
    }
}
