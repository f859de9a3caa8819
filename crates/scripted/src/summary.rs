//! [`RequestSummary`]: what a scripted model sees of a request, whichever way it came (an
//! in-process [`ChatRequest`] or the JSON body of any wire the product speaks).

use braincode_llm::{ChatMessage, ChatRequest, ContentPart};
use braincode_protocol::Role;
use serde_json::Value;

use crate::asker::{CallKind, role_of_system};

/// The wire format of a model request the scripted server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (`…/chat/completions`).
    Chat,
    /// OpenAI Responses, also on Azure (`…/responses`).
    Responses,
    /// Anthropic Messages (`…/messages`).
    Anthropic,
    /// Google Gemini (`…/models/<model>:streamGenerateContent`).
    Gemini,
}

impl Wire {
    /// The wire a request path belongs to (`None`: not a model request).
    pub fn of_path(path: &str) -> Option<Self> {
        let path = path.trim_end_matches('/');
        if path.ends_with("/chat/completions") {
            Some(Self::Chat)
        } else if path.ends_with("/responses") {
            Some(Self::Responses)
        } else if path.ends_with("/messages") {
            Some(Self::Anthropic)
        } else if path.ends_with(":streamGenerateContent") || path.ends_with(":generateContent") {
            Some(Self::Gemini)
        } else {
            None
        }
    }
}

/// The parts of a request that matchers look at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestSummary {
    /// The requested model (the body's `model`; a Gemini path's model; the name of an
    /// in-process handle).
    pub model: Option<String>,
    /// The system prompt (system/developer messages joined).
    pub system: String,
    /// The first user message's text (where the runtime's prompts say who asks).
    pub first_user: String,
    /// The last user message's text.
    pub last_user: String,
    /// Every message's text and tool-call arguments, joined.
    pub all_text: String,
    /// Names of the tools offered.
    pub tools: Vec<String>,
    /// The structured-output schema name (`router_decision`, …), where the wire carries it.
    pub schema: Option<String>,
    /// The tool results the conversation holds, in order.
    pub tool_results: Vec<String>,
    /// Whether the last message is a tool result (the agent is on a tool turn).
    pub tool_turn: bool,
}

/// Collects a conversation, message by message.
#[derive(Default)]
struct Collect {
    system: Vec<String>,
    first_user: Option<String>,
    last_user: String,
    all: Vec<String>,
    tool_results: Vec<String>,
    tool_turn: bool,
}

impl Collect {
    fn system(&mut self, text: String) {
        self.all.push(text.clone());
        self.system.push(text);
    }
    fn user(&mut self, text: String) {
        self.first_user.get_or_insert_with(|| text.clone());
        self.last_user = text.clone();
        self.all.push(text);
        self.tool_turn = false;
    }
    fn assistant(&mut self, text: String) {
        self.all.push(text);
        self.tool_turn = false;
    }
    fn call(&mut self, arguments: String) {
        self.all.push(arguments);
        self.tool_turn = false;
    }
    fn tool_result(&mut self, content: String) {
        self.all.push(content.clone());
        self.tool_results.push(content);
        self.tool_turn = true;
    }
    fn finish(
        self,
        model: Option<String>,
        tools: Vec<String>,
        schema: Option<String>,
    ) -> RequestSummary {
        RequestSummary {
            model,
            system: self.system.join("\n"),
            first_user: self.first_user.unwrap_or_default(),
            last_user: self.last_user,
            all_text: self.all.join("\n"),
            tools,
            schema,
            tool_results: self.tool_results,
            tool_turn: self.tool_turn,
        }
    }
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn array<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The text of a `content` that is a string or an array of parts with `text`.
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

/// A JSON value as text: a string as is, anything else serialized.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl RequestSummary {
    /// The summary of an in-process request to the model named `model`.
    pub fn from_chat(request: &ChatRequest, model: Option<&str>) -> Self {
        let mut collect = Collect::default();
        if let Some(system) = &request.system {
            collect.system(system.clone());
        }
        for message in &request.messages {
            match message {
                ChatMessage::User { content } => collect.user(
                    content
                        .iter()
                        .filter_map(|p| match p {
                            ContentPart::Text { text } => Some(text.as_str()),
                            ContentPart::Image { .. } => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                ChatMessage::Assistant { text, tool_calls } => {
                    collect.assistant(text.clone());
                    for call in tool_calls {
                        collect.call(call.raw_arguments.clone());
                    }
                }
                ChatMessage::Tool { content, .. } => collect.tool_result(content.clone()),
            }
        }
        collect.finish(
            model.map(str::to_string),
            request.tools.iter().map(|t| t.name.clone()).collect(),
            request.response_schema.as_ref().map(|s| s.name.clone()),
        )
    }

    /// The summary of a Chat Completions JSON body.
    pub fn from_json(body: &Value) -> Self {
        Self::from_wire(Wire::Chat, "", body)
    }

    /// The summary of a `wire` request to `path` with JSON `body`.
    pub fn from_wire(wire: Wire, path: &str, body: &Value) -> Self {
        let mut collect = Collect::default();
        let tool_name = |t: &Value| {
            (t.pointer("/function/name").or_else(|| t.get("name")))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut model = str_at(body, "/model").map(str::to_string);
        let mut schema = None;
        let tools: Vec<String> = match wire {
            Wire::Chat => {
                chat_messages(body, &mut collect);
                schema = str_at(body, "/response_format/json_schema/name").map(str::to_string);
                array(body, "tools").filter_map(tool_name).collect()
            }
            Wire::Responses => {
                responses_input(body, &mut collect);
                schema = str_at(body, "/text/format/name").map(str::to_string);
                array(body, "tools").filter_map(tool_name).collect()
            }
            Wire::Anthropic => {
                anthropic_messages(body, &mut collect);
                array(body, "tools").filter_map(tool_name).collect()
            }
            Wire::Gemini => {
                gemini_contents(body, &mut collect);
                model = path
                    .rsplit_once("/models/")
                    .and_then(|(_, rest)| rest.split_once(':'))
                    .map(|(name, _)| name.to_string());
                array(body, "tools")
                    .flat_map(|t| array(t, "functionDeclarations"))
                    .filter_map(tool_name)
                    .collect()
            }
        };
        collect.finish(model, tools, schema)
    }

    /// Who is asking (from the schema and the way the runtime's prompts begin).
    pub fn kind(&self) -> CallKind {
        CallKind::of(self.schema.as_deref(), &self.system, &self.first_user)
    }

    /// The role whose built-in system prompt this request carries.
    pub fn role(&self) -> Option<Role> {
        role_of_system(&self.system)
    }

    /// The first user message's text.
    pub fn first_user_text(&self) -> &str {
        &self.first_user
    }

    /// The `taskId`/`parentId` the runtime asked a worker or reviewer to echo (from the reply
    /// shape at the end of its handoff prompt); `unknown` for an id it does not name.
    pub fn handoff_ids(&self) -> (String, String) {
        let text = self.first_user_text();
        let field = |name: &str| {
            let key = format!("\"{name}\":\"");
            text.rfind(&key)
                .map(|at| &text[at + key.len()..])
                .and_then(|rest| rest.split('"').next())
                .unwrap_or("unknown")
                .to_string()
        };
        (field("taskId"), field("parentId"))
    }

    /// The last user message's text.
    pub fn last_user_text(&self) -> &str {
        &self.last_user
    }

    /// Whether the last message is a tool result.
    pub fn is_tool_turn(&self) -> bool {
        self.tool_turn
    }

    /// Names of the tools offered.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(String::as_str).collect()
    }

    /// The tool results seen so far, in order.
    pub fn tool_results(&self) -> &[String] {
        &self.tool_results
    }

    /// A one-line description for "no scripted reply matches" errors.
    pub fn describe(&self) -> String {
        format!(
            "model={:?}, kind={:?}, role={:?}, tool_turn={}, system={:?}, first user message={:?}, last user message={:?}, tools={:?}",
            self.model.as_deref().unwrap_or("-"),
            self.kind(),
            self.role(),
            self.tool_turn,
            braincode_protocol::clip_chars_then_ellipsis(&self.system, 80),
            braincode_protocol::clip_chars_then_ellipsis(&self.first_user, 100),
            braincode_protocol::clip_chars_then_ellipsis(&self.last_user, 120),
            self.tools
        )
    }
}

fn chat_messages(body: &Value, collect: &mut Collect) {
    for message in array(body, "messages") {
        let text = content_text(message.get("content"));
        match message.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => collect.system(text),
            Some("user") => collect.user(text),
            Some("tool") => collect.tool_result(text),
            _ => {
                collect.assistant(text);
                for call in array(message, "tool_calls") {
                    if let Some(args) = str_at(call, "/function/arguments") {
                        collect.call(args.to_string());
                    }
                }
            }
        }
    }
}

fn responses_input(body: &Value, collect: &mut Collect) {
    if let Some(instructions) = str_at(body, "/instructions") {
        collect.system(instructions.to_string());
    }
    if let Some(text) = str_at(body, "/input") {
        collect.user(text.to_string());
        return;
    }
    for item in array(body, "input") {
        match (str_at(item, "/type"), str_at(item, "/role")) {
            (Some("function_call"), _) => {
                collect.call(str_at(item, "/arguments").unwrap_or_default().to_string());
            }
            (Some("function_call_output"), _) => {
                collect.tool_result(item.get("output").map(as_text).unwrap_or_default());
            }
            (_, Some("system" | "developer")) => collect.system(content_text(item.get("content"))),
            (_, Some("user")) => collect.user(content_text(item.get("content"))),
            _ => collect.assistant(content_text(item.get("content"))),
        }
    }
}

fn anthropic_messages(body: &Value, collect: &mut Collect) {
    if let Some(system @ (Value::String(_) | Value::Array(_))) = body.get("system") {
        collect.system(content_text(Some(system)));
    }
    for message in array(body, "messages") {
        let user = str_at(message, "/role") == Some("user");
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        let mut texts = Vec::new();
        for block in &blocks {
            match str_at(block, "/type") {
                Some("text") => texts.push(str_at(block, "/text").unwrap_or_default().to_string()),
                Some("tool_use") => {
                    collect.call(block.get("input").map(as_text).unwrap_or_default());
                }
                Some("tool_result") => {
                    collect.tool_result(content_text(block.get("content")));
                }
                _ => {}
            }
        }
        if !texts.is_empty() {
            if user {
                collect.user(texts.join("\n"));
            } else {
                collect.assistant(texts.join("\n"));
            }
        }
    }
}

fn gemini_contents(body: &Value, collect: &mut Collect) {
    let system = body
        .pointer("/systemInstruction/parts")
        .map(|parts| content_text(Some(parts)));
    if let Some(system) = system.filter(|s| !s.is_empty()) {
        collect.system(system);
    }
    for content in array(body, "contents") {
        let user = str_at(content, "/role") != Some("model");
        let mut texts = Vec::new();
        for part in array(content, "parts") {
            if let Some(call) = part.get("functionCall") {
                collect.call(call.get("args").map(as_text).unwrap_or_default());
            } else if let Some(response) = part.pointer("/functionResponse/response") {
                let result = response.get("output").or_else(|| response.get("error"));
                collect.tool_result(result.map(as_text).unwrap_or_default());
            } else if let Some(text) = str_at(part, "/text")
                && part.get("thought").and_then(Value::as_bool) != Some(true)
            {
                texts.push(text.to_string());
            }
        }
        if !texts.is_empty() {
            if user {
                collect.user(texts.join("\n"));
            } else {
                collect.assistant(texts.join("\n"));
            }
        }
    }
}
