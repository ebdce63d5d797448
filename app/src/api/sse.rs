//! An incremental reader of Server-Sent-Events frames, for clients that read a POST response as a byte stream.

/// One SSE frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// Accepts bytes in any chunking and hands back complete frames. Comments (keep-alives) are skipped.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes and returns the frames they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseFrame> {
        self.buffer.extend_from_slice(bytes);
        let mut frames = Vec::new();
        while let Some((end, sep)) = find_frame_end(&self.buffer) {
            let block: Vec<u8> = self.buffer.drain(..end + sep).collect();
            let text = String::from_utf8_lossy(&block[..end]);
            if let Some(frame) = parse_block(&text) {
                frames.push(frame);
            }
        }
        frames
    }
}

/// Position and length of the first blank-line separator (`\n\n`, `\r\n\r\n` or `\r\r`).
fn find_frame_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    while i < buf.len() {
        if buf[i..].starts_with(b"\r\n\r\n") {
            return Some((i, 4));
        }
        if buf[i..].starts_with(b"\n\n") || buf[i..].starts_with(b"\r\r") {
            return Some((i, 2));
        }
        i += 1;
    }
    None
}

fn parse_block(block: &str) -> Option<SseFrame> {
    let mut frame = SseFrame::default();
    let mut has_data = false;
    for line in block.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if has_data {
                    frame.data.push('\n');
                }
                frame.data.push_str(value);
                has_data = true;
            }
            "event" => frame.event = Some(value.to_string()),
            "id" => frame.id = Some(value.to_string()),
            _ => {}
        }
    }
    has_data.then_some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_anywhere_are_reassembled() {
        let input = ": keep-alive\n\nid: t:1\nevent: text_delta\ndata: {\"text\":\"h\u{e9}\"}\n\nid: t:2\nevent: message_complete\ndata: {}\n\n";
        for split in 0..input.len() {
            let bytes = input.as_bytes();
            let mut decoder = SseDecoder::new();
            let mut frames = decoder.push(&bytes[..split]);
            frames.extend(decoder.push(&bytes[split..]));
            assert_eq!(frames.len(), 2, "split at {split}");
            assert_eq!(frames[0].event.as_deref(), Some("text_delta"));
            assert_eq!(frames[0].data, "{\"text\":\"h\u{e9}\"}");
            assert_eq!(frames[1].id.as_deref(), Some("t:2"));
        }
    }

    #[test]
    fn multi_line_data_is_joined() {
        let mut decoder = SseDecoder::new();
        let frames = decoder.push(b"data: a\r\ndata: b\r\n\r\n");
        assert_eq!(frames[0].data, "a\nb");
    }
}
