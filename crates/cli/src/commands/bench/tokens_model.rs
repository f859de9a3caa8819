//! The scripted model of `braincode bench tokens`: it answers at once, like the other
//! benches' instant model, but every agent with tools first explores the generated repository
//! over a few tool turns (list_files, search_files, read_file), as a real model does, and it
//! keeps every request it receives with the reply it gave.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use braincode_llm::{
    ChatMessage, ChatRequest, ContentPart, ModelClient, ModelError, ModelEvent, ModelStream,
    StopReason, ToolCall,
};
use braincode_protocol::{Role, Usage};
use futures::stream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use braincode_scripted::{CallKind, RequestSummary};

use super::overhead::reply_for;

/// One request the model received and the assistant turn it answered with.
#[derive(Debug, Clone)]
pub(super) struct Captured {
    pub request: ChatRequest,
    pub reply: ChatMessage,
}

/// The scripted model; see the module docs.
#[derive(Default)]
pub(super) struct TokensModel {
    /// Tool-call ids are unique across the run, as a provider's are.
    next_call: AtomicU64,
    pub captured: Mutex<Vec<Captured>>,
}

/// Characters of what a request puts before the model: system prompt, messages (text, tool
/// calls and tool outputs) and the tool and reply schemas. Input tokens are this / 4.
pub(super) fn request_chars(request: &ChatRequest) -> usize {
    let system = request.system.as_deref().map_or(0, |s| s.chars().count());
    let messages: usize = request.messages.iter().map(message_chars).sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| {
            t.name.chars().count()
                + t.description.chars().count()
                + t.parameters.to_string().chars().count()
        })
        .sum();
    let schema = request
        .response_schema
        .as_ref()
        .map_or(0, |s| s.name.len() + s.schema.to_string().chars().count());
    system + messages + tools + schema
}

fn message_chars(message: &ChatMessage) -> usize {
    match message {
        ChatMessage::User { content } => content
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => text.chars().count(),
                ContentPart::Image { .. } => 0,
            })
            .sum(),
        ChatMessage::Assistant { text, tool_calls } => {
            text.chars().count()
                + tool_calls
                    .iter()
                    .map(|c| c.name.chars().count() + c.raw_arguments.chars().count())
                    .sum::<usize>()
        }
        ChatMessage::Tool { name, content, .. } => name.chars().count() + content.chars().count(),
    }
}

/// Estimated tokens of `chars` characters (chars / 4, rounded up).
pub(super) fn tokens_of(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Who asks `request`, and the role whose built-in system prompt it carries.
pub(super) fn asker_and_role(request: &ChatRequest) -> (CallKind, Option<Role>) {
    let summary = RequestSummary::from_chat(request, None);
    (summary.kind(), summary.role())
}

fn read(path: &str) -> (&'static str, Value) {
    ("read_file", json!({ "path": path }))
}

fn search(query: &str) -> (&'static str, Value) {
    ("search_files", json!({ "query": query, "mode": "content" }))
}

fn list(directory: &str) -> (&'static str, Value) {
    ("list_files", json!({ "directory": directory }))
}

/// The tool turns of `role` before it answers: each turn is one or more calls.
fn tool_turns(role: Option<Role>) -> Vec<Vec<(&'static str, Value)>> {
    match role {
        Some(Role::Librarian) => vec![
            vec![list("src"), search("fn validate_")],
            vec![read("src/auth/token.rs"), read("src/auth/session.rs")],
            vec![read("src/http/middleware.rs")],
        ],
        Some(Role::Security) => vec![
            vec![search("revoked|signature")],
            vec![read("src/auth/keys.rs"), read("src/auth/claims.rs")],
            vec![read("src/config/secrets.rs")],
        ],
        Some(Role::Qa) => vec![
            vec![list("tests")],
            vec![
                read("tests/token_validation.rs"),
                read("tests/session_flow.rs"),
            ],
            vec![search("fn an_empty_")],
        ],
        Some(Role::Review) => vec![
            vec![read("src/auth/token.rs")],
            vec![read("tests/token_validation.rs"), search("is_empty")],
        ],
        Some(Role::Dba) => vec![
            vec![read("src/db/session_store.rs")],
            vec![read("src/db/migrations.rs")],
        ],
        // The primary.
        _ => vec![
            vec![search("parse_token|validate_token")],
            vec![read("src/auth/token.rs"), read("src/http/extract.rs")],
            vec![read("src/http/handlers.rs")],
        ],
    }
}

/// The router decision: librarian → security → dba and librarian → qa → backend (primary),
/// then review.
pub(super) fn router_decision() -> String {
    json!({
        "role": "backend",
        "workers": [
            {"role": "librarian", "goal": "Map where session tokens are parsed and validated", "reason": "orientation"},
            {"role": "security", "goal": "Assess how empty, revoked and expired tokens are checked", "reason": "auth"},
            {"role": "qa", "goal": "Plan a regression test for empty tokens", "reason": "tests"},
            {"role": "dba", "goal": "Check how sessions are stored and swept", "reason": "storage"},
            {"role": "backend", "goal": "Fix the session token validation", "reason": "backend fix"}
        ],
        "todos": [
            {"id": "map", "title": "Map the token code", "role": "librarian"},
            {"id": "assess", "title": "Assess the token checks", "role": "security"},
            {"id": "plan-test", "title": "Plan the regression test", "role": "qa"},
            {"id": "check-db", "title": "Check the session table", "role": "dba"},
            {"id": "fix", "title": "Fix the validation", "role": "backend"}
        ],
        "dependencies": [
            {"from": "map", "to": "assess", "reason": "security needs the map"},
            {"from": "map", "to": "plan-test", "reason": "qa needs the map"},
            {"from": "assess", "to": "check-db", "reason": "storage follows the assessment"},
            {"from": "plan-test", "to": "fix", "reason": "the fix comes with its test"}
        ],
        "clarification": {"required": false, "reason": "", "question": "", "missing": [], "options": []},
        "requiresReview": true,
        "confidence": 0.9,
        "reason": "backend fix with orientation, security, storage and test support"
    })
    .to_string()
}

/// A worker's final answer: a WorkerResult of realistic length naming what it read.
fn worker_answer(role: Option<Role>, read: &[String]) -> String {
    let role = role.map_or("worker", |r| r.as_str());
    let artifacts: Vec<Value> = read
        .iter()
        .map(|path| json!({"kind": "file", "uri": path, "label": format!("read by {role}")}))
        .collect();
    json!({
        "taskId": "t", "parentId": "p",
        "progress": {"status": "completed", "summary": format!("{role} analysis done")},
        "summary": format!(
            "As {role}: TokenValidator::validate_token in src/auth/token.rs looks the token up and \
             checks expiry, but parse_token accepts an empty string because splitn yields one empty \
             part that is never compared against the expected version before the store lookup; \
             AuthMiddleware forwards the bearer value unchanged, so an empty Authorization header \
             reaches the validator. Session rows carry owner and scopes; revocation is a flag. \
             Files read: {}.", read.join(", ")),
        "artifacts": artifacts,
        "risks": ["empty bearer tokens reach the store lookup", "clock skew leeway hides expiry in tests"],
        "nextQuestions": ["should an empty token be 401 or 400?"]
    })
    .to_string()
}

const PRIMARY_ANSWER: &str = "The session token validation now rejects empty and whitespace-only \
tokens before any store lookup: `TokenValidator::parse_token` returns `Malformed` when the raw \
value is empty, and `AuthMiddleware` answers 401 instead of forwarding an empty bearer value. \
Expired and revoked tokens keep their existing paths. A regression test in \
tests/token_validation.rs covers the empty token, a token made of dots only, and an expired \
token within the clock-skew leeway. The session store and the sweeper are unchanged (the dba \
worker found no schema impact). Residual risk: clients that send `Authorization: Bearer` with no \
value now get 401 where they used to get 404 from the lookup.";

impl TokensModel {
    /// The next call id.
    fn call_id(&self) -> String {
        format!("call_{}", self.next_call.fetch_add(1, Ordering::Relaxed))
    }

    /// What to answer `request` with: the assistant turn and whether it asks for tools.
    fn answer(&self, request: &ChatRequest) -> (ChatMessage, bool) {
        let (who, role) = asker_and_role(request);
        let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
        let turn = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
            .count();
        if who != CallKind::Router
            && let Some(calls) = tool_turns(role).get(turn)
            && calls.iter().all(|(name, _)| offered(name))
        {
            let tool_calls = calls
                .iter()
                .map(|(name, args)| ToolCall::from_raw(self.call_id(), *name, args.to_string()))
                .collect();
            let text = "Let me look at the code first.".to_string();
            return (ChatMessage::Assistant { text, tool_calls }, true);
        }
        let read: Vec<String> = request
            .messages
            .iter()
            .flat_map(|m| match m {
                ChatMessage::Assistant { tool_calls, .. } => tool_calls.as_slice(),
                _ => &[],
            })
            .filter(|c| c.name == "read_file")
            .filter_map(|c| c.arguments["path"].as_str().map(str::to_string))
            .collect();
        let text = match who {
            CallKind::Router => router_decision(),
            CallKind::Support => worker_answer(role, &read),
            CallKind::Primary => PRIMARY_ANSWER.to_string(),
            CallKind::Review => reply_for(CallKind::Review),
        };
        let reply = ChatMessage::Assistant {
            text,
            tool_calls: Vec::new(),
        };
        (reply, false)
    }
}

#[async_trait]
impl ModelClient for TokensModel {
    async fn stream(
        &self,
        request: ChatRequest,
        _cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let (reply, tool_use) = self.answer(&request);
        let input = tokens_of(request_chars(&request));
        let output = tokens_of(message_chars(&reply));
        let mut events = Vec::new();
        if let ChatMessage::Assistant { text, tool_calls } = &reply {
            events.push(Ok(ModelEvent::TextDelta { text: text.clone() }));
            for call in tool_calls {
                events.push(Ok(ModelEvent::ToolCall { call: call.clone() }));
            }
        }
        events.push(Ok(ModelEvent::Usage {
            usage: Usage::new(input, output, 0, 0),
        }));
        events.push(Ok(ModelEvent::Stop {
            reason: if tool_use {
                StopReason::ToolUse
            } else {
                StopReason::EndTurn
            },
        }));
        if let Ok(mut captured) = self.captured.lock() {
            captured.push(Captured { request, reply });
        }
        Ok(Box::pin(stream::iter(events)))
    }
}
