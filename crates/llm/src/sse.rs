//! Server-sent events framing (`text/event-stream`), fed with bytes as they arrive.
//!
//! Follows the WHATWG event-stream rules: `event`, `data`, `id` and `retry` fields, multi-line
//! `data` joined with `\n`, `:` comment lines, a single optional space after the colon, and
//! CR, LF or CRLF line ends. Bytes are buffered until a line is complete, so a chunk may end
//! anywhere — inside a field name, between CR and LF, or inside a multi-byte UTF-8 character.
//! Lines are decoded as UTF-8 with replacement of invalid sequences.
//!
//! Comment lines (`: keep-alive`) are skipped; [`SseParser::data_lines`] counts the `data:`
//! lines seen, so a caller can tell real progress from keep-alives. The search for a line end
//! resumes where the previous one stopped, so a long line arriving in many chunks is scanned
//! once, not once per chunk.
//!
//! One deliberate leniency: at end of input, an event whose lines are all complete but which
//! lacks the closing blank line is still dispatched (some local servers close the connection
//! right after the last `data:` line). A partial last line is always discarded, because it may
//! be a truncated payload.

use std::mem;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when the server did not name the event.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last event id seen so far in the stream (`id:` persists across events).
    pub id: Option<String>,
    /// A `retry:` value (milliseconds) given in this event.
    pub retry: Option<u64>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Incremental event-stream parser: [`SseParser::feed`] bytes, then drain
/// [`SseParser::next_event`] until it returns `None`.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    pos: usize,
    /// `buf[pos..scanned]` holds no line end (where the next search resumes).
    scanned: usize,
    data_lines: u64,
    /// The previous line ended with CR at the very end of the buffer: a LF starting the next
    /// chunk belongs to that line end.
    skip_lf: bool,
    bom_checked: bool,
    event: String,
    data: String,
    has_data: bool,
    has_fields: bool,
    last_id: Option<String>,
    retry: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn feed(&mut self, chunk: &[u8]) {
        let mut chunk = chunk;
        if self.skip_lf && !chunk.is_empty() {
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
            self.skip_lf = false;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.scanned = self.scanned.saturating_sub(self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, if the buffered bytes hold one.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        if !self.check_bom(false) {
            return None;
        }
        loop {
            let from = self.scanned.max(self.pos);
            let Some(end) = self.buf[from..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                self.scanned = self.buf.len();
                return None;
            };
            let line_start = self.pos;
            let line_end = from + end;
            let mut next = line_end + 1;
            if self.buf[line_end] == b'\r' {
                if next < self.buf.len() {
                    if self.buf[next] == b'\n' {
                        next += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            self.pos = next;
            if line_end == line_start {
                if let Some(event) = self.dispatch() {
                    return Some(event);
                }
                continue;
            }
            self.process_line(line_start, line_end);
        }
    }

    /// Ends the stream: returns a last event whose lines were complete but which lacked the
    /// closing blank line. A partial last line is discarded.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if let Some(event) = self.next_event() {
            return Some(event);
        }
        self.check_bom(true);
        self.buf.clear();
        self.pos = 0;
        self.scanned = 0;
        if self.has_fields {
            self.dispatch()
        } else {
            None
        }
    }

    /// Whether bytes of an unfinished line or event are buffered.
    pub fn has_pending(&self) -> bool {
        self.pos < self.buf.len() || self.has_fields
    }

    /// Bytes held for lines and events not dispatched yet (unread bytes plus the data of the
    /// event being assembled).
    pub fn buffered_len(&self) -> usize {
        self.buf.len() - self.pos + self.data.len()
    }

    /// How many `data:` lines were read so far (comment lines are not counted).
    pub fn data_lines(&self) -> u64 {
        self.data_lines
    }

    /// Skips a leading byte-order mark. Returns false while too few bytes arrived to decide.
    fn check_bom(&mut self, at_end: bool) -> bool {
        if self.bom_checked {
            return true;
        }
        let rest = &self.buf[self.pos..];
        if rest.len() >= BOM.len() {
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
            }
        } else if BOM.starts_with(rest) && !at_end {
            return false;
        }
        self.bom_checked = true;
        true
    }

    fn process_line(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                let value = value.strip_prefix(b" ").unwrap_or(value);
                (&line[..colon], value)
            }
            None => (line, &line[line.len()..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                push_utf8(&mut self.data, value);
                self.has_data = true;
                self.data_lines += 1;
                self.has_fields = true;
            }
            b"event" => {
                self.event.clear();
                push_utf8(&mut self.event, value);
                self.has_fields = true;
            }
            b"id" => {
                if !value.contains(&0) {
                    self.last_id = Some(String::from_utf8_lossy(value).into_owned());
                }
                self.has_fields = true;
            }
            b"retry" => {
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    self.retry = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                }
                self.has_fields = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        self.has_fields = false;
        if !self.has_data {
            // No data: per the standard, nothing is dispatched, and the event name resets.
            self.event.clear();
            self.retry = None;
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event: mem::take(&mut self.event),
            data: mem::take(&mut self.data),
            id: self.last_id.clone(),
            retry: self.retry.take(),
        })
    }
}

fn push_utf8(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text),
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            parser.feed(chunk);
            while let Some(event) = parser.next_event() {
                events.push(event);
            }
        }
        events.extend(parser.finish());
        events
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn parses_fields_comments_and_multiline_data() {
        let events = parse_all(&[
            b": keep-alive comment\nevent: message_start\ndata: {\"a\":1}\nid: 7\nretry: 1500\n\ndata: line one\ndata:line two\ndata\n\n",
        ]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event, "message_start");
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[0].retry, Some(1500));
        assert_eq!(events[1].event, "");
        assert_eq!(events[1].data, "line one\nline two\n");
        assert_eq!(events[1].id.as_deref(), Some("7"), "the last id persists");
        assert_eq!(events[1].retry, None);
    }

    #[test]
    fn every_line_ending_style_works() {
        for stream in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\rdata: b\r\r",
            b"data: a\r\n\ndata: b\n\r\n",
        ] {
            assert_eq!(data(&parse_all(&[stream])), vec!["a", "b"], "{stream:?}");
        }
    }

    #[test]
    fn chunk_boundaries_anywhere_give_the_same_events() {
        let stream = "event: delta\r\ndata: {\"text\":\"héllo ✓ 🎉\"}\r\n\r\n: ping\r\ndata: x\r\ndata: y\r\n\r\nid: 9\ndata: [DONE]\n\n".as_bytes();
        let whole = parse_all(&[stream]);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[0].data, "{\"text\":\"héllo ✓ 🎉\"}");
        // Every split point, including inside multi-byte characters and between CR and LF.
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(parse_all(&[a, b]), whole, "split at {split}");
        }
        // Byte by byte.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse_all(&bytes), whole);
    }

    #[test]
    fn events_without_data_are_not_dispatched() {
        let events = parse_all(&[b"event: ping\n\nretry: 10\n\ndata: real\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(
            events[0].event, "",
            "the event name reset after the empty event"
        );
        assert_eq!(events[0].data, "real");
    }

    #[test]
    fn value_space_rules_and_unknown_fields() {
        let events = parse_all(&[b"data:  two spaces\nfoo: bar\ndata:\n\n"]);
        assert_eq!(events[0].data, " two spaces\n");
    }

    #[test]
    fn bom_is_skipped_even_when_split() {
        let stream = b"\xEF\xBB\xBFdata: a\n\n";
        assert_eq!(data(&parse_all(&[stream])), vec!["a"]);
        assert_eq!(data(&parse_all(&[&stream[..1], &stream[1..]])), vec!["a"]);
        assert_eq!(data(&parse_all(&[&stream[..2], &stream[2..]])), vec!["a"]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = parse_all(&[b"data: a\xFFb\n\n"]);
        assert_eq!(events[0].data, "a\u{FFFD}b");
    }

    #[test]
    fn end_of_input_keeps_complete_lines_and_drops_a_partial_line() {
        // Complete lines without the closing blank line: dispatched at the end.
        assert_eq!(data(&parse_all(&[b"data: [DONE]\n"])), vec!["[DONE]"]);
        // A partial line may be a truncated payload: dropped.
        assert!(parse_all(&[b"data: {\"trunc"]).is_empty());
        let mut parser = SseParser::new();
        parser.feed(b"data: x");
        assert!(parser.next_event().is_none());
        assert!(parser.has_pending());
    }

    #[test]
    fn comments_are_not_data_lines_and_a_long_line_is_found_across_chunks() {
        let mut parser = SseParser::new();
        parser.feed(b": keep-alive\n\n: ping\n\n");
        assert!(parser.next_event().is_none());
        assert_eq!(parser.data_lines(), 0);
        let line = format!("data: {}", "x".repeat(10_000));
        for piece in line.as_bytes().chunks(97) {
            parser.feed(piece);
            assert!(parser.next_event().is_none());
        }
        assert!(parser.buffered_len() >= 10_000);
        parser.feed(b"\n\n");
        let event = parser.next_event().unwrap();
        assert_eq!(event.data.len(), 10_000);
        assert_eq!(parser.data_lines(), 1);
        assert_eq!(parser.buffered_len(), 0);
    }

    #[test]
    fn id_with_nul_is_ignored() {
        let events = parse_all(&[b"id: 1\ndata: a\n\nid: b\0ad\ndata: b\n\n"]);
        assert_eq!(events[1].id.as_deref(), Some("1"));
    }
}
