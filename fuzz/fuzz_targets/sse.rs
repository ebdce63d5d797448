//! The SSE parser: never panics, and the events do not depend on where the byte stream is split.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wire::sse::SseParser;

fn events(chunks: &[&[u8]]) -> Option<Vec<(String, String)>> {
    let mut parser = SseParser::with_max_event_bytes(4096);
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.feed(chunk).ok()?.into_iter().map(|e| (e.event, e.data)));
    }
    parser.finish();
    Some(events)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else { return };
    let at = if body.is_empty() { 0 } else { cut as usize % body.len() };
    let (head, tail) = body.split_at(at);
    assert_eq!(events(&[head, tail]), events(&[body]));
});
