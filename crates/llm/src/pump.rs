//! The reading side of a model call: pulls bytes, frames SSE events, decodes them, and
//! enforces the stream rules — first-byte, idle and total timeouts (only `data:` lines count
//! as progress), cancellation, the reply cap, no silent truncation, no empty reply — and turns
//! a failure after delivered events into [`ErrorKind::StreamInterrupted`].

use std::collections::VecDeque;
use std::sync::Arc;

use futures::{StreamExt, stream};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::options::{ReplyCap, Setting};
use crate::sse::SseParser;
use crate::transport::{ByteStream, Clock, Transport, error_chain, is_transient, within};
use crate::wire::{StreamDecoder, truncated};
use crate::{ErrorKind, ModelError, ModelEvent, ModelStream, StopReason};

/// Room for SSE framing and JSON escapes over the reply cap, in bytes not decoded yet.
pub(crate) const FRAMING_SLACK: usize = 64 * 1024;

/// How the text appended to a reply cut at the reply cap starts (see
/// [`crate::ClientOptions::max_reply_bytes`]).
pub const REPLY_CUT_MARKER: &str = "[reply cut at ";

/// Which cap a cut reply ran into.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// The call's max tokens × bytes per token.
    Tokens { bytes: usize, max_tokens: u32 },
    /// `max_reply_bytes`.
    Bytes(usize),
}

/// Pulls bytes, frames events, decodes them, and enforces the stream rules (timeouts,
/// cancellation, the reply cap, no silent truncation, no empty reply).
pub(crate) struct Pump {
    transport: Arc<Transport>,
    /// `None` once the body ended, was read whole, or was dropped at the reply cap.
    body: Option<ByteStream>,
    parser: SseParser,
    decoder: Box<dyn StreamDecoder>,
    queue: VecDeque<ModelEvent>,
    cancel: CancellationToken,
    first_byte_at: Instant,
    deadline: Instant,
    /// When the last `data:` line (or the response headers) arrived.
    last_data: Instant,
    data_lines: u64,
    seen_data: bool,
    finished: bool,
    answered: bool,
    /// An event was handed out: from now on a failure cannot be retried by the client.
    yielded: bool,
    cap: ReplyCap,
    /// Bytes of text, reasoning and tool arguments handed out.
    kept_total: usize,
    /// Bytes of text and tool arguments handed out.
    kept_content: usize,
    cut: bool,
}

impl Pump {
    /// A pump for a response whose headers arrived now. Give it the body with
    /// [`Pump::stream_body`] or a whole JSON reply with [`Pump::decode_complete`].
    pub(crate) fn new(
        transport: Arc<Transport>,
        cancel: CancellationToken,
        first_byte_at: Instant,
        deadline: Instant,
        cap: ReplyCap,
    ) -> Self {
        let decoder = (transport.new_decoder)();
        Self {
            transport,
            body: None,
            parser: SseParser::new(),
            decoder,
            queue: VecDeque::new(),
            cancel,
            first_byte_at,
            deadline,
            last_data: Instant::now(),
            data_lines: 0,
            seen_data: false,
            finished: false,
            answered: false,
            yielded: false,
            cap,
            kept_total: 0,
            kept_content: 0,
            cut: false,
        }
    }

    /// Reads the events from this event-stream body.
    pub(crate) fn stream_body(&mut self, body: ByteStream) {
        self.body = Some(body);
    }

    /// Decodes a complete JSON reply (a server that ignored `stream: true`) into the events
    /// a stream would have produced.
    pub(crate) fn decode_complete(&mut self, body: &[u8]) -> Result<(), ModelError> {
        self.decoder.on_complete(body, &mut self.queue)
    }

    /// The next event, or the error that ends the stream, or `None` after `Stop`.
    pub(crate) async fn next(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        match self.next_inner().await {
            Some(Err(err)) => {
                self.finished = true;
                self.queue.clear();
                self.body = None;
                let mut err = self.transport.tag(err);
                let total_timeout =
                    err.kind == ErrorKind::Timeout && Instant::now() >= self.deadline;
                if self.yielded && is_transient(err.kind) && !total_timeout {
                    err = err.interrupted(self.kept_total);
                }
                Some(Err(err))
            }
            Some(Ok(event)) => {
                self.yielded = true;
                Some(Ok(event))
            }
            None => None,
        }
    }

    async fn next_inner(&mut self) -> Option<Result<ModelEvent, ModelError>> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                let Some(event) = self.keep(event) else {
                    continue;
                };
                match &event {
                    ModelEvent::TextDelta { .. } | ModelEvent::ToolCall { .. } => {
                        self.answered = true;
                    }
                    ModelEvent::Stop { reason } => {
                        self.finished = true;
                        if !self.answered {
                            return Some(Err(ModelError::new(
                                ErrorKind::EmptyReply,
                                format!(
                                    "the model finished ({}) without any text or tool call",
                                    stop_label(reason)
                                ),
                            )));
                        }
                    }
                    ModelEvent::ReasoningDelta { .. } | ModelEvent::Usage { .. } => {}
                }
                return Some(Ok(event));
            }
            if self.finished {
                return None;
            }
            while !self.decoder.is_done() {
                let Some(event) = self.parser.next_event() else {
                    break;
                };
                if let Err(err) = self.decoder.on_event(&event, &mut self.queue) {
                    return Some(Err(err));
                }
            }
            self.note_progress();
            if !self.queue.is_empty() {
                continue;
            }
            if self.decoder.is_done() {
                // Terminal event without a Stop cannot happen with our decoders; end cleanly.
                self.finished = true;
                return None;
            }
            if let Some(limit) = self.pending_over_cap() {
                self.cut_reply(limit, false);
                continue;
            }
            let limits = self.limits();
            let phase = if self.seen_data {
                "streaming the reply"
            } else {
                "waiting for the first event"
            };
            let Some(body) = self.body.as_mut() else {
                self.finished = true;
                return Some(Err(truncated("terminal event")));
            };
            match within(body.next(), &self.cancel, &limits).await {
                Err(interrupt) => {
                    return Some(Err(self.transport.interrupt_error(interrupt, phase)));
                }
                Ok(Some(Ok(bytes))) => self.parser.feed(&bytes),
                Ok(Some(Err(err))) => {
                    return Some(Err(ModelError::new(
                        ErrorKind::Network,
                        format!(
                            "the connection broke while the reply was streaming: {}",
                            error_chain(&err)
                        ),
                    )));
                }
                Ok(None) => {
                    self.body = None;
                    if let Some(event) = self.parser.finish()
                        && let Err(err) = self.decoder.on_event(&event, &mut self.queue)
                    {
                        return Some(Err(err));
                    }
                    self.note_progress();
                    if let Err(err) = self.decoder.on_eof(&mut self.queue) {
                        return Some(Err(err));
                    }
                    if self.queue.is_empty() {
                        self.finished = true;
                        return Some(Err(truncated("terminal event")));
                    }
                }
            }
        }
    }

    /// Only `data:` lines count as progress: keep-alive comments do not reset the idle timer.
    fn note_progress(&mut self) {
        let lines = self.parser.data_lines();
        if lines != self.data_lines {
            self.data_lines = lines;
            self.last_data = Instant::now();
            self.seen_data = true;
        }
    }

    /// The limits of the next read: idle and total, plus first-byte until data arrived.
    fn limits(&self) -> [(Instant, Clock); 3] {
        let idle = (
            self.last_data + self.transport.options.idle_timeout,
            Clock::Idle,
        );
        let total = (self.deadline, Clock::Total);
        let first = if self.seen_data {
            total
        } else {
            (self.first_byte_at, Clock::FirstByte)
        };
        [first, idle, total]
    }

    /// Room left for an event's bytes, and the cap that bounds it.
    fn room(&self, content: bool) -> (usize, Limit) {
        let total = (
            self.cap.total.saturating_sub(self.kept_total),
            Limit::Bytes(self.cap.total),
        );
        match self.cap.content {
            Some((bytes, max_tokens)) if content => {
                let left = bytes.saturating_sub(self.kept_content);
                if left < total.0 {
                    (left, Limit::Tokens { bytes, max_tokens })
                } else {
                    total
                }
            }
            _ => total,
        }
    }

    /// Counts an event against the reply cap: passes it, clips it (text) or drops it (a tool
    /// call) when it crosses the cap, and then ends the reply.
    fn keep(&mut self, event: ModelEvent) -> Option<ModelEvent> {
        if self.cut {
            return Some(event);
        }
        let (bytes, content) = match &event {
            ModelEvent::TextDelta { text } => (text.len(), true),
            ModelEvent::ReasoningDelta { text } => (text.len(), false),
            ModelEvent::ToolCall { call } => (call.raw_arguments.len(), true),
            ModelEvent::Usage { .. } | ModelEvent::Stop { .. } => return Some(event),
        };
        let (room, limit) = self.room(content);
        if bytes <= room {
            self.count(bytes, content);
            return Some(event);
        }
        let mut dropped_call = false;
        let kept = match event {
            ModelEvent::TextDelta { text } => {
                clip(text, room).map(|text| ModelEvent::TextDelta { text })
            }
            ModelEvent::ReasoningDelta { text } => {
                clip(text, room).map(|text| ModelEvent::ReasoningDelta { text })
            }
            _ => {
                dropped_call = true;
                None
            }
        };
        if let Some(ModelEvent::TextDelta { text } | ModelEvent::ReasoningDelta { text }) = &kept {
            self.count(text.len(), content);
        }
        self.cut_reply(limit, dropped_call);
        kept
    }

    fn count(&mut self, bytes: usize, content: bool) {
        self.kept_total += bytes;
        if content {
            self.kept_content += bytes;
        }
    }

    /// Whether what is buffered but not yet an event (tool arguments being assembled, an
    /// unfinished line) already exceeds the room left.
    fn pending_over_cap(&self) -> Option<Limit> {
        let (room, limit) = self.room(true);
        if self.decoder.pending_bytes() > room {
            return Some(limit);
        }
        let (room, limit) = self.room(false);
        let buffered = self.parser.buffered_len();
        // Undecoded JSON is at most about twice its text (`\uXXXX` escapes of 3-byte characters).
        (buffered > room.saturating_mul(2).saturating_add(FRAMING_SLACK)).then_some(limit)
    }

    /// The text that ends a reply cut at the reply cap.
    fn cut_marker(&self, limit: Limit, dropped_call: bool) -> String {
        let transport = &self.transport;
        let kept = self.kept_total;
        let why = match limit {
            Limit::Tokens { bytes, max_tokens } => format!(
                "the model's reply exceeded {bytes} bytes ({} bytes for each of the call's {max_tokens} max tokens)",
                transport.options.reply_bytes_per_token
            ),
            Limit::Bytes(bytes) => format!(
                "the model's reply exceeded the {bytes}-byte reply cap (raise {})",
                Setting::MaxReplyBytes
                    .where_to_change(&transport.model_id, &transport.model_settings)
            ),
        };
        let dropped = if dropped_call {
            "; an unfinished tool call was dropped"
        } else {
            ""
        };
        let lead = if kept > 0 { "\n\n" } else { "" };
        format!("{lead}{REPLY_CUT_MARKER}{kept} bytes: {why}; the rest was not read{dropped}]")
    }

    /// Ends the reply at the cap: stops reading (dropping the connection), frees what was
    /// buffered, and queues the marker and a `MaxTokens` stop.
    fn cut_reply(&mut self, limit: Limit, dropped_call: bool) {
        let dropped_call = dropped_call || self.decoder.pending_bytes() > 0;
        self.cut = true;
        self.body = None;
        self.queue.clear();
        self.parser = SseParser::new();
        self.decoder = (self.transport.new_decoder)();
        tracing::debug!(model = %self.transport.model_id, kept = self.kept_total, "reply cut at the cap");
        let marker = self.cut_marker(limit, dropped_call);
        self.queue.push_back(ModelEvent::TextDelta { text: marker });
        self.queue.push_back(ModelEvent::Stop {
            reason: StopReason::MaxTokens,
        });
    }
}

/// `text` cut to at most `room` bytes on a character boundary (`None` when nothing is left).
fn clip(mut text: String, room: usize) -> Option<String> {
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    (!text.is_empty()).then_some(text)
}

fn stop_label(reason: &StopReason) -> String {
    match reason {
        StopReason::EndTurn => "end_turn".into(),
        StopReason::ToolUse => "tool_use".into(),
        StopReason::MaxTokens => "max_tokens".into(),
        StopReason::ContentFilter => "content_filter".into(),
        StopReason::Other(other) => other.clone(),
    }
}

/// The stream handed to the caller: `first`, then the rest of the pump.
pub(crate) fn into_stream(first: ModelEvent, pump: Pump) -> ModelStream {
    let rest = stream::unfold(pump, |mut pump| async move {
        let item = pump.next().await?;
        Some((item, pump))
    });
    Box::pin(stream::once(async move { Ok(first) }).chain(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_whole_characters() {
        assert_eq!(clip("héllo".to_string(), 2), Some("h".to_string()));
        assert_eq!(clip("héllo".to_string(), 3), Some("hé".to_string()));
        assert_eq!(clip("abc".to_string(), 0), None);
    }
}
