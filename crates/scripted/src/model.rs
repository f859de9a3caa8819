//! [`ScriptedModel`]: an in-process [`ModelClient`] replaying a [`Script`].

use std::ops::Deref;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use braincode_llm::{
    ChatRequest, ErrorKind, ModelClient, ModelError, ModelEvent, ModelStream, ToolCall,
    classify_http_error, parse_retry_after,
};
use futures::stream;
use tokio_util::sync::CancellationToken;

use crate::script::{ReplyEnd, Script, ScriptState, no_match_message};
use crate::summary::RequestSummary;

/// One request a [`ScriptedModel`] received: what the matchers saw (reached through
/// `Deref`), the request itself, and the label of the rule that answered it.
#[derive(Debug, Clone)]
pub struct ModelCall {
    /// What the matchers saw; `summary.model` is the name of the handle asked.
    pub summary: RequestSummary,
    /// The request.
    pub request: ChatRequest,
    /// The label of the rule that answered ([`crate::Rule::label`]); `None` when none did.
    pub answered_by: Option<String>,
    /// When it came.
    pub received_at: std::time::Instant,
}

impl Deref for ModelCall {
    type Target = RequestSummary;

    fn deref(&self) -> &RequestSummary {
        &self.summary
    }
}

struct Shared {
    script: Mutex<ScriptState>,
    calls: Mutex<Vec<ModelCall>>,
}

/// Replays a script in-process. Clones (and [`ScriptedModel::named`] copies) share the
/// script and the request log, so several "models" of one test can draw from one script.
///
/// It is the raw model, with no retry layer: a scripted HTTP error comes back as the
/// classified [`ModelError`] at once. It mirrors the wire clients otherwise: a reply with
/// neither text nor tool call ends in an `empty_reply` error, a cut ends in a `network`
/// error after the content, and a stall waits for cancellation.
#[derive(Clone)]
pub struct ScriptedModel {
    shared: Arc<Shared>,
    name: Option<String>,
}

impl ScriptedModel {
    /// A model replaying `script`.
    pub fn new(script: Script) -> Self {
        Self {
            shared: Arc::new(Shared {
                script: Mutex::new(ScriptState::new(script)),
                calls: Mutex::new(Vec::new()),
            }),
            name: None,
        }
    }

    /// A handle on the same script and log that reports `name` as its model (for
    /// [`crate::Matcher::Model`]).
    pub fn named(&self, name: impl Into<String>) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            name: Some(name.into()),
        }
    }

    /// This handle as a shared client.
    pub fn client(&self) -> Arc<dyn ModelClient> {
        Arc::new(self.clone())
    }

    /// Every request received (by any handle), in arrival order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.calls().into_iter().map(|call| call.request).collect()
    }

    /// Every request received (by any handle) with what answered it, in arrival order.
    pub fn calls(&self) -> Vec<ModelCall> {
        lock(&self.shared.calls).clone()
    }

    /// How many replies the rule named `name` (or `rule <index>`) served.
    pub fn hits(&self, name: &str) -> usize {
        lock(&self.shared.script).hits(name)
    }

    /// How many replies the rule at `index` served.
    pub fn hits_by_index(&self, index: usize) -> usize {
        lock(&self.shared.script).hits_by_index(index)
    }

    /// How many requests no rule answered.
    pub fn unmatched(&self) -> usize {
        lock(&self.shared.script).unmatched()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

enum Step {
    Event(ModelEvent),
    Fail(ModelError),
    Sleep(Duration),
    Stall,
}

async fn sleep_or_cancel(delay: Duration, cancel: &CancellationToken) -> Result<(), ModelError> {
    if delay.is_zero() {
        return if cancel.is_cancelled() {
            Err(ModelError::cancelled())
        } else {
            Ok(())
        };
    }
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ModelError::cancelled()),
        _ = tokio::time::sleep(delay) => Ok(()),
    }
}

#[async_trait]
impl ModelClient for ScriptedModel {
    async fn stream(
        &self,
        request: ChatRequest,
        cancel: CancellationToken,
    ) -> Result<ModelStream, ModelError> {
        let received_at = std::time::Instant::now();
        let summary = RequestSummary::from_chat(&request, self.name.as_deref());
        let picked = {
            let mut script = lock(&self.shared.script);
            script
                .pick(&summary)
                .map(|(index, reply)| (script.label(index), reply))
        };
        let (answered_by, reply) = match picked {
            Some((label, reply)) => (label, Some(reply)),
            None => (None, None),
        };
        lock(&self.shared.calls).push(ModelCall {
            summary: summary.clone(),
            request,
            answered_by,
            received_at,
        });
        let model = self.name.clone().unwrap_or_else(|| "scripted".to_string());
        let Some(reply) = reply else {
            return Err(
                ModelError::new(ErrorKind::Server, no_match_message(&summary)).with_model(model),
            );
        };
        sleep_or_cancel(reply.delay, &cancel).await?;
        if reply.end == ReplyEnd::Hang {
            cancel.cancelled().await;
            return Err(ModelError::cancelled().with_model(model));
        }
        if reply.raw.is_some() {
            return Err(ModelError::new(
                ErrorKind::Config,
                "a raw reply is bytes for the scripted HTTP server, not for the in-process model",
            )
            .with_model(model));
        }
        if let Some(failure) = &reply.failure {
            let retry_after = failure
                .retry_after
                .as_deref()
                .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
            return Err(classify_http_error(failure.status, &failure.body, None)
                .with_retry_after(retry_after)
                .with_model(model));
        }
        let mut steps = Vec::new();
        let mut push = |step: Step| {
            if !reply.chunk_delay.is_zero() && matches!(step, Step::Event(_)) && !steps.is_empty() {
                steps.push(Step::Sleep(reply.chunk_delay));
            }
            steps.push(step);
        };
        for text in &reply.reasoning {
            push(Step::Event(ModelEvent::ReasoningDelta {
                text: text.clone(),
            }));
        }
        for text in reply.text.iter().filter(|t| !t.is_empty()) {
            push(Step::Event(ModelEvent::TextDelta { text: text.clone() }));
        }
        for call in &reply.tool_calls {
            push(Step::Event(ModelEvent::ToolCall {
                call: ToolCall::from_raw(
                    call.id.clone().unwrap_or_default(),
                    call.name.clone(),
                    call.arguments.clone(),
                ),
            }));
        }
        let answered = reply.text.iter().any(|t| !t.is_empty()) || !reply.tool_calls.is_empty();
        match reply.end {
            ReplyEnd::Cut => push(Step::Fail(ModelError::new(
                ErrorKind::Network,
                "the connection broke while the reply was streaming (scripted cut)",
            ))),
            // (A hang was answered above, before any stream.)
            ReplyEnd::Stall | ReplyEnd::KeepAlive(_) | ReplyEnd::Hang => push(Step::Stall),
            ReplyEnd::Complete => {
                push(Step::Event(ModelEvent::Usage {
                    usage: reply.usage_for(&summary),
                }));
                if answered {
                    push(Step::Event(ModelEvent::Stop {
                        reason: reply.stop_reason(),
                    }));
                } else {
                    push(Step::Fail(ModelError::new(
                        ErrorKind::EmptyReply,
                        "the model finished without any text or tool call (scripted)",
                    )));
                }
            }
        }
        let steps: std::collections::VecDeque<Step> = steps.into();
        let state = (steps, cancel, model, false);
        Ok(Box::pin(stream::unfold(
            state,
            |(mut steps, cancel, model, mut ended)| async move {
                if ended {
                    return None;
                }
                loop {
                    let step = steps.pop_front()?;
                    let item = match step {
                        Step::Event(event) => {
                            if cancel.is_cancelled() {
                                Err(ModelError::cancelled())
                            } else {
                                Ok(event)
                            }
                        }
                        Step::Fail(err) => Err(err),
                        Step::Sleep(delay) => match sleep_or_cancel(delay, &cancel).await {
                            Ok(()) => continue,
                            Err(err) => Err(err),
                        },
                        Step::Stall => {
                            cancel.cancelled().await;
                            Err(ModelError::cancelled())
                        }
                    };
                    if item.is_err() {
                        ended = true;
                    }
                    let item = item.map_err(|e| e.with_model(model.clone()));
                    return Some((item, (steps, cancel, model, ended)));
                }
            },
        )))
    }
}
