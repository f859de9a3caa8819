//! The scripted model: every model of a run is answered, in process, from one [`Script`].
//!
//! A [`Script`] is a list of rules, tried in order: a [`Matcher`] (a named predicate over the
//! [`ModelCall`]) and a responder (a fixed [`ScriptedReply`], a sequence, or a closure). The
//! first matching rule answers; a request no rule matches fails with a `bad_request`
//! [`ModelError`] whose message describes the request, and is counted as unmatched.
//!
//! [`ScriptedModels`] is the `ClientOverride` the run gets: it supplies a client for every
//! model of the catalogue (so no credentials are needed), tells the script which model was
//! asked, and logs every request. Like a raw wire client it has no retry layer: a scripted
//! failure reaches the runtime at once, which falls back to the next model of the chain.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use braincode_llm::{
    ChatRequest, ErrorKind, ModelClient, ModelError, ModelEvent, ModelStream, StopReason, ToolCall,
    classify_http_error,
};
use braincode_protocol::{ModelDefinition, Usage};
use braincode_runtime::ClientOverride;
use futures::stream;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call::{Matcher, ModelCall, RequestLog};

/// One scripted answer, made of the real stream types.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedReply {
    /// Answer text (streamed as one delta).
    pub text: String,
    /// Tool calls (ids are generated for calls built without one).
    pub tool_calls: Vec<ToolCall>,
    /// Usage reported before `Stop`.
    pub usage: Usage,
    /// Finish reason (default: tool use with calls, else end of turn).
    pub stop: Option<StopReason>,
    /// Wait before answering (cut short by cancellation).
    pub delay: Duration,
    /// Fail the call with this error instead of streaming (after the delay).
    pub error: Option<ModelError>,
    /// Stream the text and calls, then fail with this error instead of `Stop`.
    pub error_after_content: Option<ModelError>,
    /// Never answer: wait until the run is cancelled.
    pub stall: bool,
}

impl Default for ScriptedReply {
    fn default() -> Self {
        Self {
            text: String::new(),
            tool_calls: Vec::new(),
            usage: Usage::new(100, 20, 0, 0),
            stop: None,
            delay: Duration::ZERO,
            error: None,
            error_after_content: None,
            stall: false,
        }
    }
}

static NEXT_CALL_ID: AtomicUsize = AtomicUsize::new(1);

impl ScriptedReply {
    /// A text answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }
    /// A JSON answer (routers, workers and reviewers answer in JSON).
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }
    /// One tool call (`ToolCall::from_raw` with a generated id).
    pub fn tool_call(name: &str, arguments: &Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }
    /// A failure of `kind` (e.g. `server`), returned when the call starts.
    pub fn fail(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            error: Some(ModelError::new(kind, message)),
            ..Self::default()
        }
    }
    /// The failure a wire client reports for HTTP `status` with `body` (503 → `server`,
    /// 429 → `rate_limit`, 401 → `auth`, …).
    pub fn http_error(status: u16, body: &str) -> Self {
        Self {
            error: Some(classify_http_error(status, body, None)),
            ..Self::default()
        }
    }
    /// A call that never answers until the run is cancelled.
    pub fn stall() -> Self {
        Self {
            stall: true,
            ..Self::default()
        }
    }
    /// Adds a tool call with JSON arguments.
    pub fn with_tool_call(mut self, name: &str, arguments: &Value) -> Self {
        let id = format!("call_{}", NEXT_CALL_ID.fetch_add(1, Ordering::Relaxed));
        self.tool_calls
            .push(ToolCall::from_raw(id, name, arguments.to_string()));
        self
    }
    /// Adds a prepared tool call (e.g. with malformed raw arguments).
    pub fn with_raw_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }
    /// Sets the usage reported.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
    /// Sets the finish reason.
    pub fn with_stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }
    /// Waits `delay` before answering.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// Streams the content, then fails with `kind` instead of finishing.
    pub fn then_fail(mut self, kind: ErrorKind, message: impl Into<String>) -> Self {
        self.error_after_content = Some(ModelError::new(kind, message));
        self
    }

    /// The stream events (and final error) of this reply. A reply with neither text nor
    /// tool call ends in an `empty_reply` error, as the wire clients do.
    fn events(&self, model: &str) -> Vec<Result<ModelEvent, ModelError>> {
        let mut events = Vec::new();
        if !self.text.is_empty() {
            events.push(Ok(ModelEvent::TextDelta {
                text: self.text.clone(),
            }));
        }
        for call in &self.tool_calls {
            events.push(Ok(ModelEvent::ToolCall { call: call.clone() }));
        }
        if let Some(err) = &self.error_after_content {
            events.push(Err(err.clone().with_model(model)));
            return events;
        }
        if events.is_empty() {
            events.push(Err(ModelError::new(
                ErrorKind::EmptyReply,
                "the scripted model finished without any text or tool call",
            )
            .with_model(model)));
            return events;
        }
        events.push(Ok(ModelEvent::Usage { usage: self.usage }));
        let stop = self.stop.clone().unwrap_or(if self.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        events.push(Ok(ModelEvent::Stop { reason: stop }));
        events
    }
}

type ReplyFn = Arc<dyn Fn(&ModelCall) -> ScriptedReply + Send + Sync>;

#[derive(Clone)]
enum Responder {
    /// Replies in order; the last one repeats.
    Sequence(Vec<ScriptedReply>),
    /// A closure deciding from the request.
    Compute(ReplyFn),
}

#[derive(Clone)]
struct Rule {
    matcher: Matcher,
    responder: Responder,
}

/// Rules tried in order; the first whose matcher matches answers.
#[derive(Clone, Default)]
pub struct Script {
    rules: Vec<Rule>,
}

impl Script {
    /// An empty script (every request is unmatched).
    pub fn new() -> Self {
        Self::default()
    }
    /// A script answering every request with `reply_for(call)`.
    pub fn from_fn(
        reply_for: impl Fn(&ModelCall) -> ScriptedReply + Send + Sync + 'static,
    ) -> Self {
        Self::new().when_fn(Matcher::any(), reply_for)
    }
    /// Answers `matcher` with `reply`, every time.
    pub fn when(mut self, matcher: Matcher, reply: ScriptedReply) -> Self {
        self.rules.push(Rule {
            matcher,
            responder: Responder::Sequence(vec![reply]),
        });
        self
    }
    /// Answers `matcher` with `replies` in order, then repeats the last one.
    pub fn when_seq(
        mut self,
        matcher: Matcher,
        replies: impl IntoIterator<Item = ScriptedReply>,
    ) -> Self {
        self.rules.push(Rule {
            matcher,
            responder: Responder::Sequence(replies.into_iter().collect()),
        });
        self
    }
    /// Answers `matcher` with whatever `reply_for` decides from the request.
    pub fn when_fn(
        mut self,
        matcher: Matcher,
        reply_for: impl Fn(&ModelCall) -> ScriptedReply + Send + Sync + 'static,
    ) -> Self {
        self.rules.push(Rule {
            matcher,
            responder: Responder::Compute(Arc::new(reply_for)),
        });
        self
    }
    /// These rules, then `later`'s (tried after these).
    pub fn then(mut self, later: Script) -> Self {
        self.rules.extend(later.rules);
        self
    }
}

struct Shared {
    rules: Vec<Rule>,
    state: Mutex<(RequestLog, Vec<usize>)>,
}

/// The `ClientOverride` of a test run: one scripted client per model id, one shared script
/// and request log.
#[derive(Clone)]
pub struct ScriptedModels {
    shared: Arc<Shared>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ScriptedModels {
    /// Models answering from `script`.
    pub fn new(script: Script) -> Self {
        let served = vec![0; script.rules.len()];
        Self {
            shared: Arc::new(Shared {
                rules: script.rules,
                state: Mutex::new((RequestLog::default(), served)),
            }),
        }
    }

    /// A snapshot of the request log.
    pub fn log(&self) -> RequestLog {
        lock(&self.shared.state).0.clone()
    }

    /// Logs `call` and picks its reply (`None`: no rule matched).
    fn answer(&self, mut call: ModelCall) -> Option<ScriptedReply> {
        let picked = self
            .shared
            .rules
            .iter()
            .enumerate()
            .find(|(_, rule)| rule.matcher.matches(&call));
        let mut state = lock(&self.shared.state);
        let Some((index, rule)) = picked else {
            state.0.record(call, false);
            return None;
        };
        let nth = state.1[index];
        state.1[index] += 1;
        call.answered_by = Some(rule.matcher.name().to_string());
        let responder = rule.responder.clone();
        let reply_call = call.clone();
        state.0.record(call, true);
        drop(state);
        Some(match responder {
            Responder::Sequence(replies) => replies
                .get(nth)
                .or_else(|| replies.last())
                .cloned()
                .unwrap_or_default(),
            Responder::Compute(reply_for) => reply_for(&reply_call),
        })
    }
}

impl ClientOverride for ScriptedModels {
    fn client(&self, definition: &ModelDefinition) -> Option<Arc<dyn ModelClient>> {
        Some(Arc::new(ScriptedClient {
            models: self.clone(),
            model: definition.id.clone(),
        }))
    }

    fn supplies(&self, _definition: &ModelDefinition) -> bool {
        true
    }
}

/// One model of the catalogue, answered from the shared script.
struct ScriptedClient {
    models: ScriptedModels,
    model: String,
}

async fn wait(delay: Duration, cancel: &CancellationToken) -> Result<(), ModelError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ModelError::cancelled()),
        () = tokio::time::sleep(delay) => Ok(()),
    }
}

#[async_trait]
impl ModelClient for ScriptedClient {
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let call = ModelCall {
            model: self.model.clone(),
            request,
            answered_by: None,
        };
        let description = call.describe();
        let Some(reply) = self.models.answer(call) else {
            return Err(ModelError::new(
                ErrorKind::BadRequest,
                format!("no scripted reply matches this request: {description}"),
            )
            .with_model(self.model.clone()));
        };
        if reply.stall {
            cancel.cancelled().await;
            return Err(ModelError::cancelled());
        }
        if !reply.delay.is_zero() {
            wait(reply.delay, &cancel).await?;
        }
        if cancel.is_cancelled() {
            return Err(ModelError::cancelled());
        }
        if let Some(err) = reply.error {
            return Err(err.with_model(self.model.clone()));
        }
        let events: VecDeque<_> = reply.events(&self.model).into();
        Ok(Box::pin(stream::iter(events)))
    }
}

/// A plan with a backend primary and no workers, whose primary makes `calls` tool calls in
/// turn, then answers with every tool result it saw, joined by `separator`.
pub fn primary_calling(calls: Vec<(&'static str, Value)>, separator: &'static str) -> Script {
    Script::new()
        .when(
            super::Matcher::router(),
            ScriptedReply::json(&super::router_decision_json(
                braincode_protocol::Role::Backend,
                &[],
            )),
        )
        .when_fn(super::Matcher::primary(), move |call| {
            let seen = call.tool_results();
            match calls.get(seen.len()) {
                Some((name, args)) => ScriptedReply::tool_call(name, args),
                None => ScriptedReply::text(seen.join(separator)),
            }
        })
}
