//! The Anthropic stream decoder: never panics; a stream ends with `Stop` or with one error, wherever it is cut.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quire::llm::{anthropic::decode_body, StreamEvent};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else { return };
    let at = if body.is_empty() { 0 } else { cut as usize % body.len() };
    let (head, tail) = body.split_at(at);
    let items = decode_body(&[head, tail]);
    assert!(items.iter().filter(|i| i.is_err()).count() <= 1);
    assert!(matches!(items.last(), Some(Err(_)) | Some(Ok(StreamEvent::Stop(_)))), "{items:?}");
    assert_eq!(format!("{items:?}"), format!("{:?}", decode_body(&[body])));
});
