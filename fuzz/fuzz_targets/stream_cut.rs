//! The property both provider stream targets check: a decoder never panics, and a stream ends with `Stop` or
//! with one error, wherever the body is cut, exactly as when it arrives in one piece.

use llm::{LlmError, StreamEvent};

pub fn check(data: &[u8], decode_body: fn(&[&[u8]]) -> Vec<Result<StreamEvent, LlmError>>) {
    let Some((&cut, body)) = data.split_first() else { return };
    let at = if body.is_empty() { 0 } else { cut as usize % body.len() };
    let (head, tail) = body.split_at(at);
    let items = decode_body(&[head, tail]);
    assert!(items.iter().filter(|i| i.is_err()).count() <= 1);
    assert!(matches!(items.last(), Some(Err(_)) | Some(Ok(StreamEvent::Stop(_)))), "{items:?}");
    assert_eq!(format!("{items:?}"), format!("{:?}", decode_body(&[body])));
}
