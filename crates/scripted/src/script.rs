//! Scripts: rules that match a request and answer it with scripted replies.
//!
//! Workers run in parallel, so replies are not a single FIFO: a [`Script`] is a list of
//! [`Rule`]s, each a [`Matcher`] plus a queue of [`Reply`]s. The first rule whose matcher
//! matches and whose queue is not exhausted answers; a rule can repeat its last reply forever,
//! or compute each reply from the request.

use std::sync::Arc;
use std::time::Duration;

use braincode_llm::StopReason;
use braincode_protocol::Usage;
use serde_json::Value;

use crate::matcher::Matcher;
use crate::raw::RawReply;
use crate::summary::RequestSummary;

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    /// Call id; generated (`call_1`, `call_2`, …) when `None`.
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Argument text exactly as the model "writes" it (may be malformed on purpose).
    pub arguments: String,
}

/// A scripted HTTP failure.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpFailure {
    /// Status code.
    pub status: u16,
    /// Response body.
    pub body: String,
    /// `Retry-After` header value.
    pub retry_after: Option<String>,
}

/// How a streamed reply ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyEnd {
    /// Finish normally (finish reason, usage, the wire's terminal event).
    #[default]
    Complete,
    /// Cut the connection after the content (no terminal event).
    Cut,
    /// Never finish after the content.
    Stall,
    /// After the content, send an SSE keep-alive comment (`: keep-alive`) at this interval,
    /// forever (in process: as [`ReplyEnd::Stall`]).
    KeepAlive(Duration),
    /// Never send the response headers (in process: the call never returns until cancelled).
    Hang,
}

/// One scripted model reply. Build with the constructors, refine with the `with_*`
/// methods; parts stream in the order reasoning, text, tool calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reply {
    /// Reasoning chunks.
    pub reasoning: Vec<String>,
    /// Text chunks.
    pub text: Vec<String>,
    /// Tool calls.
    pub tool_calls: Vec<ScriptedCall>,
    /// Usage to report (estimated from the text lengths when `None`).
    pub usage: Option<Usage>,
    /// Finish reason override (default: tool use when there are calls, else end of turn).
    pub stop: Option<StopReason>,
    /// Answer with this HTTP error instead of a stream.
    pub failure: Option<HttpFailure>,
    /// How the stream ends.
    pub end: ReplyEnd,
    /// Wait before answering.
    pub delay: Duration,
    /// Wait between streamed chunks.
    pub chunk_delay: Duration,
    /// Answer these bytes as they are instead of rendering the reply in the request's wire
    /// format (scripted server only).
    pub raw: Option<RawReply>,
}

impl Reply {
    /// A text answer in one chunk.
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().with_text(text)
    }
    /// A text answer streamed in several chunks.
    pub fn text_chunks<I, S>(chunks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            text: chunks.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }
    /// A reply whose JSON text is `value` (for workers and routers answering in JSON).
    pub fn json(value: &Value) -> Self {
        Self::text(value.to_string())
    }
    /// One tool call with JSON arguments.
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().with_tool_call(name, arguments)
    }
    /// One tool call with raw argument text (may be malformed JSON on purpose).
    pub fn tool_call_raw(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self::default().with_tool_call_raw(name, arguments)
    }
    /// Several parallel tool calls.
    pub fn tool_calls<I, S>(calls: I) -> Self
    where
        I: IntoIterator<Item = (S, Value)>,
        S: Into<String>,
    {
        calls
            .into_iter()
            .fold(Self::default(), |reply, (name, args)| {
                reply.with_tool_call(name, args)
            })
    }
    /// A reply with no text and no tool call (the client reports an empty reply).
    pub fn empty() -> Self {
        Self::default()
    }
    /// An HTTP error (`status` and `body`).
    pub fn http_error(status: u16, body: impl Into<String>) -> Self {
        Self {
            failure: Some(HttpFailure {
                status,
                body: body.into(),
                retry_after: None,
            }),
            ..Self::default()
        }
    }
    /// A reply that never comes.
    pub fn stall() -> Self {
        Self {
            end: ReplyEnd::Stall,
            ..Self::default()
        }
    }

    /// Adds a text chunk.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text.push(text.into());
        self
    }
    /// Adds a reasoning chunk.
    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.reasoning.push(text.into());
        self
    }
    /// Adds a tool call with JSON arguments.
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Self {
        self.with_tool_call_raw(name, arguments.to_string())
    }
    /// Adds a tool call with raw argument text.
    pub fn with_tool_call_raw(
        mut self,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        self.tool_calls.push(ScriptedCall {
            id: None,
            name: name.into(),
            arguments: arguments.into(),
        });
        self
    }
    /// Sets the id of the last tool call added.
    pub fn with_call_id(mut self, id: impl Into<String>) -> Self {
        if let Some(call) = self.tool_calls.last_mut() {
            call.id = Some(id.into());
        }
        self
    }
    /// Sets the reported usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }
    /// Sets the finish reason.
    pub fn with_stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }
    /// Sets the `Retry-After` header of an HTTP error reply.
    pub fn with_retry_after(mut self, value: impl Into<String>) -> Self {
        if let Some(failure) = self.failure.as_mut() {
            failure.retry_after = Some(value.into());
        }
        self
    }
    /// Cuts the connection after the content, before any terminal event.
    pub fn cut_mid_stream(mut self) -> Self {
        self.end = ReplyEnd::Cut;
        self
    }
    /// Stalls forever after the content.
    pub fn then_stall(mut self) -> Self {
        self.end = ReplyEnd::Stall;
        self
    }
    /// Waits before answering.
    pub fn delayed(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
    /// Waits between chunks.
    pub fn with_chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// The finish reason this reply ends with.
    pub fn stop_reason(&self) -> StopReason {
        self.stop.clone().unwrap_or(if self.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        })
    }

    /// The usage reported: the scripted one, or a deterministic estimate (4 chars a token).
    pub fn usage_for(&self, request: &RequestSummary) -> Usage {
        self.usage.unwrap_or_else(|| {
            let out_chars: usize = self
                .text
                .iter()
                .chain(&self.reasoning)
                .map(String::len)
                .sum::<usize>()
                + self
                    .tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len())
                    .sum::<usize>();
            Usage::new(
                (request.all_text.len() / 4).max(1) as u64,
                (out_chars / 4).max(1) as u64,
                0,
                0,
            )
        })
    }
}

type ReplyFn = Arc<dyn Fn(&RequestSummary) -> Reply + Send + Sync>;

/// A reply computed from the request (see [`Script::when_fn`]).
#[derive(Clone)]
pub struct Respond(ReplyFn);

impl std::fmt::Debug for Respond {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Respond(..)")
    }
}

impl PartialEq for Respond {
    /// The same closure.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A matcher and its queue of replies (or the function that computes them).
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Name used by `hits` (default: the matcher's name, or `rule <index>`).
    pub name: Option<String>,
    /// When the rule applies.
    pub matcher: Matcher,
    /// Replies, served in order.
    pub replies: Vec<Reply>,
    /// Keep serving the last reply once the queue is exhausted.
    pub repeat_last: bool,
    /// Compute every reply from the request instead (never exhausted).
    pub respond: Option<Respond>,
}

impl Rule {
    /// A rule with no replies yet.
    pub fn new(matcher: Matcher) -> Self {
        Self {
            name: None,
            matcher,
            replies: Vec::new(),
            repeat_last: false,
            respond: None,
        }
    }
    /// Computes every reply with `reply_for`.
    pub fn respond(
        mut self,
        reply_for: impl Fn(&RequestSummary) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.respond = Some(Respond(Arc::new(reply_for)));
        self
    }
    /// The name hits count this rule under: its own, else its matcher's.
    pub fn label(&self) -> String {
        self.name.clone().unwrap_or_else(|| self.matcher.name())
    }
    /// Names the rule.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Appends a reply.
    pub fn reply(mut self, reply: Reply) -> Self {
        self.replies.push(reply);
        self
    }
    /// Appends replies.
    pub fn replies(mut self, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.replies.extend(replies);
        self
    }
    /// Serves the last reply forever once the others are used.
    pub fn repeat_last(mut self) -> Self {
        self.repeat_last = true;
        self
    }
}

/// Rules, tried in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// The rules.
    pub rules: Vec<Rule>,
}

impl Script {
    /// An empty script (every request fails loudly).
    pub fn new() -> Self {
        Self::default()
    }
    /// Replies served in order to any request.
    pub fn replies(replies: impl IntoIterator<Item = Reply>) -> Self {
        Self::new().when(Matcher::Any, replies)
    }
    /// Adds a rule.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }
    /// Adds a rule answering `matcher` with `replies`, in order.
    pub fn when(self, matcher: Matcher, replies: impl IntoIterator<Item = Reply>) -> Self {
        self.rule(Rule::new(matcher).replies(replies))
    }
    /// Adds a rule answering `matcher` with `reply` forever.
    pub fn always(self, matcher: Matcher, reply: Reply) -> Self {
        self.rule(Rule::new(matcher).reply(reply).repeat_last())
    }
    /// Adds a rule answering `matcher` with whatever `reply_for` makes of the request.
    pub fn when_fn(
        self,
        matcher: Matcher,
        reply_for: impl Fn(&RequestSummary) -> Reply + Send + Sync + 'static,
    ) -> Self {
        self.rule(Rule::new(matcher).respond(reply_for))
    }
    /// A script answering every request with `reply_for(request)`.
    pub fn from_fn(reply_for: impl Fn(&RequestSummary) -> Reply + Send + Sync + 'static) -> Self {
        Self::new().when_fn(Matcher::Any, reply_for)
    }
    /// These rules, then `later`'s (tried after these).
    pub fn then(mut self, later: Script) -> Self {
        self.rules.extend(later.rules);
        self
    }
}

/// Which replies a pick may serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// Any reply (a model call).
    Any,
    /// Only a raw one (another request).
    RawOnly,
}

/// Serving state of a script: how many replies each rule served, and tool-call ids.
#[derive(Debug)]
pub(crate) struct ScriptState {
    rules: Vec<Rule>,
    served: Vec<usize>,
    unmatched: usize,
    next_call: usize,
}

impl ScriptState {
    pub(crate) fn new(script: Script) -> Self {
        let served = vec![0; script.rules.len()];
        Self {
            rules: script.rules,
            served,
            unmatched: 0,
            next_call: 0,
        }
    }

    /// The reply for a request (with call ids filled in), or `None` when no rule matches.
    pub(crate) fn pick(&mut self, request: &RequestSummary) -> Option<(usize, Reply)> {
        self.pick_where(request, Pick::Any)
    }

    /// The next [`RawReply`] a rule has for a request that is not a model call (a listing,
    /// say): `None`, and nothing served or counted, when no matching rule's next reply is raw.
    pub(crate) fn pick_raw(&mut self, request: &RequestSummary) -> Option<Reply> {
        self.pick_where(request, Pick::RawOnly)
            .map(|(_, reply)| reply)
    }

    fn pick_where(&mut self, request: &RequestSummary, pick: Pick) -> Option<(usize, Reply)> {
        for (index, rule) in self.rules.iter().enumerate() {
            let computed = rule.respond.is_some();
            if (rule.replies.is_empty() && !computed) || !rule.matcher.matches(request) {
                continue;
            }
            let served = self.served[index];
            let mut reply = match (&rule.respond, pick) {
                (Some(_), Pick::RawOnly) => continue,
                (Some(Respond(reply_for)), Pick::Any) => reply_for(request),
                (None, _) if served < rule.replies.len() => rule.replies[served].clone(),
                // `replies` is not empty here (checked above).
                (None, _) if rule.repeat_last => rule.replies[rule.replies.len() - 1].clone(),
                (None, _) => continue,
            };
            if pick == Pick::RawOnly && reply.raw.is_none() {
                continue;
            }
            self.served[index] += 1;
            for call in &mut reply.tool_calls {
                if call.id.is_none() {
                    self.next_call += 1;
                    call.id = Some(format!("call_{}", self.next_call));
                }
            }
            return Some((index, reply));
        }
        if pick == Pick::Any {
            self.unmatched += 1;
        }
        None
    }

    pub(crate) fn hits_by_index(&self, index: usize) -> usize {
        self.served.get(index).copied().unwrap_or(0)
    }

    pub(crate) fn hits(&self, name: &str) -> usize {
        self.rules
            .iter()
            .enumerate()
            .filter(|(i, r)| match &r.name {
                Some(n) => n == name,
                None => format!("rule {i}") == name || r.matcher.name() == name,
            })
            .map(|(i, _)| self.served[i])
            .sum()
    }

    /// The label of the rule at `index` (see [`Rule::label`]).
    pub(crate) fn label(&self, index: usize) -> Option<String> {
        self.rules.get(index).map(Rule::label)
    }

    pub(crate) fn unmatched(&self) -> usize {
        self.unmatched
    }
}

/// The message used when no rule matches.
pub(crate) fn no_match_message(request: &RequestSummary) -> String {
    format!(
        "no scripted reply matches this request: {}",
        request.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summary(system: &str, user: &str, tools: &[&str]) -> RequestSummary {
        RequestSummary {
            model: Some("m".into()),
            system: system.into(),
            first_user: user.into(),
            last_user: user.into(),
            all_text: format!("{system}\n{user}"),
            tools: tools.iter().map(|s| (*s).to_string()).collect(),
            ..RequestSummary::default()
        }
    }

    #[test]
    fn first_matching_rule_with_replies_left_answers() {
        let script = Script::new()
            .rule(
                Rule::new(Matcher::system_contains("router"))
                    .named("router")
                    .reply(Reply::text("plan")),
            )
            .when(
                Matcher::has_tools(),
                [
                    Reply::tool_call("read_file", json!({"path": "a"})),
                    Reply::text("done"),
                ],
            )
            .always(Matcher::Any, Reply::text("fallback"));
        let mut state = ScriptState::new(script);
        let router = summary("You are the router", "go", &[]);
        let worker = summary("You are a worker", "go", &["read_file"]);
        assert_eq!(state.pick(&router).unwrap().1.text, vec!["plan"]);
        assert_eq!(
            state.pick(&router).unwrap().1.text,
            vec!["fallback"],
            "router rule exhausted"
        );
        let (index, call) = state.pick(&worker).unwrap();
        assert_eq!(index, 1);
        assert_eq!(call.tool_calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(state.pick(&worker).unwrap().1.text, vec!["done"]);
        assert_eq!(state.pick(&worker).unwrap().1.text, vec!["fallback"]);
        assert_eq!(state.hits("router"), 1);
        assert_eq!(state.hits("rule 1"), 2);
        assert_eq!(state.hits_by_index(2), 2);
    }

    #[test]
    fn no_match_is_counted_and_described() {
        let mut state =
            ScriptState::new(Script::new().when(Matcher::model("other"), [Reply::text("x")]));
        let request = summary("sys", "hello there", &[]);
        assert!(state.pick(&request).is_none());
        assert_eq!(state.unmatched(), 1);
        let message = no_match_message(&request);
        assert!(message.contains("no scripted reply matches this request"));
        assert!(message.contains("hello there"));
    }

    #[test]
    fn matchers_compose() {
        let request = summary("sys", "fix the bug", &["edit_file"]);
        assert!(
            Matcher::last_user_contains("bug")
                .and(Matcher::tool_offered("edit_file"))
                .matches(&request)
        );
        assert!(!Matcher::no_tools().matches(&request));
        assert!(Matcher::AnyOf(vec![Matcher::model("x"), Matcher::model("m")]).matches(&request));
        assert!(Matcher::any_message_contains("sys").matches(&request));
        assert!(Matcher::model("x").negate().matches(&request));
    }

    #[test]
    fn summaries_from_json_bodies() {
        let body = json!({"model": "scripted", "messages": [
            {"role": "system", "content": "You are QA"},
            {"role": "user", "content": [{"type": "text", "text": "first"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":1}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "result"},
            {"role": "user", "content": "second"}],
            "tools": [{"type": "function", "function": {"name": "grep"}}]});
        let summary = RequestSummary::from_json(&body);
        assert_eq!(summary.model.as_deref(), Some("scripted"));
        assert_eq!(summary.system, "You are QA");
        assert_eq!(summary.last_user, "second");
        assert!(summary.all_text.contains("result") && summary.all_text.contains("{\"q\":1}"));
        assert_eq!(summary.tools, vec!["grep"]);
    }
}
