//! An incremental Server-Sent Events parser (WHATWG rules; `id:` kept, `retry:` ignored). Chunks may split anywhere,
//! even inside a CRLF or a UTF-8 character: lines split on ASCII terminator bytes and are decoded once complete.

use thiserror::Error;

/// Events bigger than this are refused, so a server that never sends a newline cannot make us
/// buffer without bound. Model streams send events of a few hundred bytes.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched Server-Sent Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, or `"message"` when the event had none.
    pub event: String,
    /// The `data:` lines joined with `\n` (without a trailing newline).
    pub data: String,
    /// The event's `id:`, if it had one.
    pub id: Option<String>,
}

/// What can go wrong while parsing an event stream.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SseError {
    /// A single line or event exceeded the configured limit.
    #[error("server-sent event larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// Incremental SSE parser: feed it bytes as they arrive, get complete events back.
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the line being read, not yet terminated.
    line: Vec<u8>,
    /// The previous chunk ended in CR: an LF starting the next chunk completes that CRLF and must
    /// not be read as a second (blank) line.
    skip_lf: bool,
    /// No line has been completed yet, so a leading byte-order mark must still be stripped.
    first_line: bool,
    /// `event:` value of the event being assembled.
    event: String,
    /// `data:` values of the event being assembled, each followed by `\n`.
    data: String,
    /// `id:` value of the event being assembled.
    id: Option<String>,
    max_event_bytes: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser with the default event size limit ([`DEFAULT_MAX_EVENT_BYTES`]).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A parser refusing lines or events larger than `max_event_bytes`.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            line: Vec::new(),
            skip_lf: false,
            first_line: true,
            event: String::new(),
            data: String::new(),
            id: None,
            max_event_bytes,
        }
    }

    /// Feeds the next chunk of the byte stream and returns the events it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.push_line_bytes(&rest[..pos])?;
            let terminator = rest[pos];
            rest = &rest[pos + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    // The LF of a CRLF may be the first byte of the next chunk.
                    None => self.skip_lf = true,
                }
            }
            if let Some(event) = self.end_line()? {
                events.push(event);
            }
        }
        self.push_line_bytes(rest)?;
        Ok(events)
    }

    /// Signals the end of the byte stream. Per the SSE rules an event not yet terminated by a blank
    /// line is discarded; returns `true` if that happened (the stream was cut mid-event).
    pub fn finish(&mut self) -> bool {
        let discarded = !self.line.is_empty() || !self.data.is_empty();
        self.line.clear();
        self.data.clear();
        self.event.clear();
        self.id = None;
        discarded
    }

    fn push_line_bytes(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + self.data.len() + bytes.len() > self.max_event_bytes {
            return Err(SseError::TooLarge { limit: self.max_event_bytes });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Interprets the completed line in `self.line`; returns an event if it was a blank line that
    /// ended one.
    fn end_line(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut bytes = std::mem::take(&mut self.line);
        if self.first_line {
            self.first_line = false;
            if bytes.starts_with(b"\xEF\xBB\xBF") {
                bytes.drain(..3);
            }
        }
        if bytes.is_empty() {
            return Ok(self.dispatch());
        }
        // Invalid UTF-8 becomes U+FFFD, as the SSE decoding rules require.
        let line = String::from_utf8_lossy(&bytes);
        if line.starts_with(':') {
            return Ok(None); // comment, e.g. a keep-alive
        }
        let (field, value) = match line.find(':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" => self.id = Some(value.to_owned()),
            _ => {} // retry and unknown fields
        }
        // Reuse the allocation for the next line.
        bytes.clear();
        self.line = bytes;
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let (event, id) = (std::mem::take(&mut self.event), self.id.take());
        if self.data.is_empty() {
            // An event without data lines is dropped, its name reset.
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the newline appended after the last data line
        Some(SseEvent { event: if event.is_empty() { "message".to_owned() } else { event }, data, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: None }
    }

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        parser.feed(input).unwrap()
    }

    /// Feeds `input` split at every possible position (and byte by byte) and checks all splits
    /// give the same events as feeding it whole.
    fn assert_split_invariant(input: &[u8], expected: &[SseEvent]) {
        assert_eq!(parse_all(input), expected, "whole input");
        for cut in 0..=input.len() {
            let mut parser = SseParser::new();
            let mut got = parser.feed(&input[..cut]).unwrap();
            got.extend(parser.feed(&input[cut..]).unwrap());
            assert_eq!(got, expected, "split at {cut}");
        }
        let mut parser = SseParser::new();
        let mut got = Vec::new();
        for byte in input {
            got.extend(parser.feed(std::slice::from_ref(byte)).unwrap());
        }
        assert_eq!(got, expected, "byte by byte");
    }

    #[test]
    fn data_lines_and_event_names() {
        let input = b"data: {\"a\":1}\n\nevent: ping\ndata: {}\n\ndata: [DONE]\n\n";
        assert_split_invariant(input, &[ev("message", "{\"a\":1}"), ev("ping", "{}"), ev("message", "[DONE]")]);
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        assert_split_invariant(
            b"data: first\ndata:second\ndata:  third\n\n",
            &[ev("message", "first\nsecond\n third")],
        );
    }

    #[test]
    fn crlf_and_lone_cr_terminators() {
        assert_split_invariant(
            b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n",
            &[ev("a", "1"), ev("b", "2"), ev("message", "3")],
        );
    }

    #[test]
    fn comments_empty_events_and_unknown_fields_are_ignored() {
        assert_split_invariant(
            b": keep-alive\n\nevent: lonely\n\nretry: 10\nfoo: bar\ndata\n\n",
            // `data` without a colon is a data line with an empty value.
            &[ev("message", "")],
        );
    }

    #[test]
    fn an_id_goes_with_its_event_only() {
        let with_id = SseEvent { id: Some("t:1".into()), ..ev("text_delta", "{}") };
        assert_split_invariant(b"id: t:1\nevent: text_delta\ndata: {}\n\ndata: x\n\n", &[with_id, ev("message", "x")]);
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let input = "data: héllo wörld 🦀\n\n".as_bytes();
        assert_split_invariant(input, &[ev("message", "héllo wörld 🦀")]);
    }

    #[test]
    fn leading_bom_is_stripped_once() {
        let mut input = b"\xEF\xBB\xBF".to_vec();
        input.extend_from_slice(b"data: x\n\n");
        assert_split_invariant(&input, &[ev("message", "x")]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(parse_all(b"data: a\xFFb\n\n"), vec![ev("message", "a\u{FFFD}b")]);
    }

    #[test]
    fn unterminated_event_is_discarded_at_end() {
        let mut parser = SseParser::new();
        assert!(parser.feed(b"data: complete\n\ndata: partial").unwrap().len() == 1);
        assert!(parser.finish());
        let mut parser = SseParser::new();
        parser.feed(b"data: complete\n\n").unwrap();
        assert!(!parser.finish());
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut parser = SseParser::with_max_event_bytes(16);
        assert!(parser.feed(b"data: 0123456789").is_ok());
        assert_eq!(parser.feed(b"abcdef\n"), Err(SseError::TooLarge { limit: 16 }));
    }
}
