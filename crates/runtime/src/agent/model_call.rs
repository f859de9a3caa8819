//! Model calls of the agent loop: the request-size guard, one streamed call (re-issued once
//! when the reply is cut off) and the journaled token usage.

use braincode_llm::{ChatMessage, ChatRequest, ErrorKind, ModelError, ModelEvent, collect_stream};
use braincode_protocol::{Record, TokenUsage, Usage};
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentServices, AgentSetup, CONTEXT_GUARD_BYTES};
use crate::tape::Tape;

/// How many times one model call is issued when its reply is cut off after content arrived
/// (a model call has no side effects; failures before any content are retried by the client).
const CALL_ATTEMPTS: u32 = 2;

/// The largest reply text a `model_reply` record carries; a longer reply is journaled clipped
/// (and cannot be replayed exactly).
const JOURNALED_REPLY_BYTES: usize = braincode_config::journal::MAX_RECORD_BYTES / 2;

/// The agent's next completion: from the tape when it has this call (replay, resume), else
/// from the model. `(call, message_index)` are the call's index within the agent session and
/// the index its reply will have in the conversation. Every live reply is journaled
/// (`model_reply`, then `token_usage`); a replay journals served replies the same way, a
/// resume does not journal them twice.
pub(super) async fn next_completion(
    setup: &AgentSetup,
    services: &AgentServices,
    request: ChatRequest,
    (call, message_index): (u32, usize),
    cancel: &CancellationToken,
) -> Result<braincode_llm::Completion, AgentError> {
    let session = setup.origin.agent_session_id.as_deref().unwrap_or_default();
    let served = services
        .tape
        .as_deref()
        .and_then(|tape| tape.reply(session, call));
    // The wall time of a live call (a served reply took none).
    let (completion, journal, duration_ms) = match served {
        Some((Ok(completion), journal)) => (completion, journal, None),
        Some((Err(error), journal)) => {
            if journal {
                record_failure(setup, services, call, &error);
            }
            return Err(AgentError::Model(error));
        }
        // A replay of a run its budget stopped: the live run never had this reply.
        None if let Some(tape) = services.tape.as_deref()
            && tape.parks_missing_calls() =>
        {
            tape.park().await;
            return Err(AgentError::Cancelled);
        }
        None if services.tape.as_deref().is_some_and(Tape::is_strict) => {
            return Err(AgentError::Model(
                ModelError::new(
                    ErrorKind::InvalidResponse,
                    format!(
                        "replay: the journal has no reply for call {call} of agent session {session}"
                    ),
                )
                .with_model(setup.model_id.clone()),
            ));
        }
        None => match call_model(setup, services, request, cancel).await {
            Ok((completion, duration_ms)) => (completion, true, Some(duration_ms)),
            Err(AgentError::Model(error)) => {
                record_failure(setup, services, call, &error);
                return Err(AgentError::Model(error));
            }
            Err(other) => return Err(other),
        },
    };
    if journal {
        services
            .sink
            .record(Record::ModelReply(crate::tape::reply_record(
                session,
                call,
                &setup.model_id,
                &completion,
                JOURNALED_REPLY_BYTES,
            )));
        if let Some(usage) = completion.usage {
            record_usage(setup, services, usage, (message_index, duration_ms));
        }
        // An answer stopped by the output token limit may be incomplete: the person is told.
        if completion.stop == Some(braincode_llm::StopReason::MaxTokens)
            && completion.tool_calls.is_empty()
        {
            services.sink.warning(format!(
                "{}'s reply from {} stopped at its output token limit: it may be cut short",
                setup.origin.role.map_or("an agent", |role| role.as_str()),
                setup.model_id,
            ));
        }
        // A reply cut at the reply cap says so at its end, where only the model reads it:
        // the person gets one `Warning:` line.
        if let Some(at) = completion.text.rfind(braincode_llm::REPLY_CUT_MARKER) {
            let marker = &completion.text[at..];
            let marker = marker.split_once(']').map_or(marker, |(cut, _)| cut);
            services.sink.warning(format!(
                "{}'s reply from {} was cut: {}",
                setup.origin.role.map_or("an agent", |role| role.as_str()),
                setup.model_id,
                marker.trim_start_matches('[')
            ));
        }
    }
    Ok(completion)
}

/// Journals a failed call (`model_reply` with its error), so a replay fails it the same way.
fn record_failure(setup: &AgentSetup, services: &AgentServices, call: u32, error: &ModelError) {
    let session = setup.origin.agent_session_id.as_deref().unwrap_or_default();
    services
        .sink
        .record(Record::ModelReply(crate::tape::failure_record(
            session,
            call,
            &setup.model_id,
            error,
        )));
}

/// One model call, re-issued on the same model when the reply was interrupted; each retry is
/// journaled (`model_retry`) and shown. The completion comes with the call's wall time in
/// milliseconds, retries included.
async fn call_model(
    setup: &AgentSetup,
    services: &AgentServices,
    request: ChatRequest,
    cancel: &CancellationToken,
) -> Result<(braincode_llm::Completion, u64), AgentError> {
    let started = std::time::Instant::now();
    let mut attempt = 1;
    loop {
        match call_model_once(setup, services, request.clone(), cancel).await {
            Err(AgentError::Model(err))
                if err.kind.is_retryable_call() && attempt < CALL_ATTEMPTS =>
            {
                services
                    .sink
                    .record(Record::ModelRetry(braincode_protocol::ModelRetry {
                        model: setup.model_id.clone(),
                        attempt,
                        kind: err.kind.to_string(),
                        message: err.message.clone(),
                        phase: setup.origin.phase.map(|p| p.as_str().to_string()),
                        role: setup.origin.role.map(|r| r.as_str().to_string()),
                    }));
                services.sink.notice(format!(
                    "{}: the reply was cut off ({}); asking the same model again, the partial reply is discarded",
                    setup.model_id, err.message
                ));
                attempt += 1;
            }
            other => {
                let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                return other.map(|completion| (completion, elapsed));
            }
        }
    }
}

async fn call_model_once(
    setup: &AgentSetup,
    services: &AgentServices,
    request: ChatRequest,
    cancel: &CancellationToken,
) -> Result<braincode_llm::Completion, AgentError> {
    let sink = services.sink.clone();
    let agent = setup.agent.clone();
    let stream_text = setup.stream_text;
    let work = async {
        let stream = services.client.stream(request, cancel.clone()).await;
        // The request is out (the provider answered, or failed to).
        services.sink.model_request_sent();
        let stream = stream.map_err(|e| with_model(e, &setup.model_id))?;
        collect_stream(stream, move |event| match event {
            ModelEvent::TextDelta { text } if stream_text => sink.text_delta(&agent, text),
            ModelEvent::ReasoningDelta { text } if stream_text => {
                sink.reasoning_delta(&agent, text);
            }
            _ => {}
        })
        .await
        .map_err(|e| with_model(e, &setup.model_id))
    };
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(AgentError::Cancelled),
        result = work => match result {
            Ok(completion) => Ok(completion),
            Err(err) if err.kind == ErrorKind::Cancelled => Err(AgentError::Cancelled),
            Err(err) => Err(AgentError::Model(err)),
        },
    }
}

fn with_model(mut err: ModelError, model_id: &str) -> ModelError {
    if err.model.is_none() {
        err.model = Some(model_id.to_string());
    }
    err
}

pub(super) fn guard_request_size(request: &ChatRequest) -> Result<(), AgentError> {
    let mut estimated = request.system.as_ref().map_or(0, String::len);
    for message in &request.messages {
        estimated += match message {
            ChatMessage::User { content } => content
                .iter()
                .map(|part| match part {
                    // Images travel separately from the text budget providers count.
                    braincode_llm::ContentPart::Text { text } => text.len(),
                    braincode_llm::ContentPart::Image { .. } => 64,
                })
                .sum::<usize>(),
            ChatMessage::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.raw_arguments.len() + 64)
                        .sum::<usize>()
            }
            ChatMessage::Tool { content, .. } => content.len() + 64,
        };
    }
    if estimated > CONTEXT_GUARD_BYTES {
        return Err(AgentError::ContextTooLarge {
            estimated,
            limit: CONTEXT_GUARD_BYTES,
        });
    }
    Ok(())
}

/// Journals a reply's usage: `(message_index, duration_ms)` are the reply's index in the
/// conversation and the call's wall time when it was measured.
fn record_usage(
    setup: &AgentSetup,
    services: &AgentServices,
    usage: Usage,
    (message_index, duration_ms): (usize, Option<u64>),
) {
    let origin = &setup.origin;
    let session = origin.agent_session_id.clone().unwrap_or_default();
    services.sink.record(Record::TokenUsage(TokenUsage {
        role: origin.role,
        phase: origin.phase,
        brain_id: origin.brain_id.clone(),
        model_id: Some(setup.model_id.clone()),
        provider: Some(setup.provider.clone()),
        agent_session_id: origin.agent_session_id.clone(),
        task_id: origin.task_id.clone(),
        parent_id: origin.parent_id.clone(),
        turn_id: Some(format!("{session}:{message_index}:0")),
        attempt: origin.attempt,
        cost_micro_usd: setup.pricing.map(|price| price.cost_micro_usd(&usage)),
        usage,
        duration_ms,
    }));
}
