//! Properties of the parsers that read untrusted input: the SSE parser and the two provider stream decoders
//! (bytes from a model server), and the import planner (a file from anyone). The same properties are fuzzed
//! with cargo-fuzz by `bench/fuzz.sh` (targets in `fuzz/`); here they run on stable with proptest.

use llm::{anthropic, openai, LlmError, StreamEvent};
use proptest::prelude::*;
use quire::history::import::plan as import_plan;
use quire::http::error::ApiError;
use serde_json::{json, Value};
use wire::sse::SseParser;

/// Splits `body` at the given points (taken modulo its length).
fn split<'a>(body: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| if body.is_empty() { 0 } else { c % body.len() }).collect();
    points.sort_unstable();
    points.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for point in points {
        chunks.push(&body[start..point]);
        start = point;
    }
    chunks.push(&body[start..]);
    chunks
}

/// The events of an SSE byte stream, fed in the given chunks; `None` if the parser refused it.
fn sse_events(chunks: &[&[u8]]) -> Option<Vec<(String, String)>> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for chunk in chunks {
        events.extend(parser.feed(chunk).ok()?.into_iter().map(|e| (e.event, e.data)));
    }
    parser.finish();
    Some(events)
}

/// What a decoded stream must look like: events, then at most one error, which ends it; a stream without an
/// error ends with `Stop`, so a cut or garbled stream never passes for a complete answer.
fn check_stream_shape(items: &[Result<StreamEvent, LlmError>]) -> Result<(), TestCaseError> {
    let errors = items.iter().filter(|i| i.is_err()).count();
    prop_assert!(errors <= 1, "one error at most: {items:?}");
    match items.last() {
        Some(Err(_)) => {}
        Some(Ok(StreamEvent::Stop(_))) => {
            let stops = items.iter().filter(|i| matches!(i, Ok(StreamEvent::Stop(_)))).count();
            prop_assert_eq!(stops, 1, "one stop: {:?}", items);
        }
        other => prop_assert!(false, "ends with neither Stop nor an error: {other:?} in {items:?}"),
    }
    Ok(())
}

/// Lines of an SSE body: mostly the provider's own kinds of line, some broken ones.
fn body_from(lines: Vec<String>) -> Vec<u8> {
    lines.concat().into_bytes()
}

/// A provider's stream decoder: the items of a body fed in the given chunks.
type Decoder = fn(&[&[u8]]) -> Vec<Result<StreamEvent, LlmError>>;

/// `decode` reads the body made of `lines`, fed in pieces cut at `cuts`, as a well-formed stream, and the same as
/// when fed whole.
fn check_cut_anywhere(decode: Decoder, lines: Vec<String>, cuts: &[usize]) -> Result<(), TestCaseError> {
    let body = body_from(lines);
    let items = decode(&split(&body, cuts));
    check_stream_shape(&items)?;
    prop_assert_eq!(format!("{items:?}"), format!("{:?}", decode(&[&body])));
    Ok(())
}

fn text_piece() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), "[a-z ]{1,8}", "\\PC{0,4}", Just("é€😀".to_string())]
}

/// A line of an OpenAI Chat Completions stream, sometimes damaged.
fn openai_line() -> impl Strategy<Value = String> {
    let data = |v: Value| format!("data: {v}\n\n");
    prop_oneof![
        4 => text_piece().prop_map(move |t| data(json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]}))),
        2 => (0u32..3, proptest::option::of("[a-z]{1,4}"), "[{}\":a-z0-9 ]{0,8}").prop_map(move |(i, id, args)| {
            let mut call = json!({"index": i, "function": {"arguments": args}});
            if let Some(id) = id {
                call["id"] = json!(id);
                call["function"]["name"] = json!("save_artifact");
            }
            data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
        }),
        1 => prop_oneof![Just("stop"), Just("tool_calls"), Just("length"), Just("content_filter")]
            .prop_map(move |r| data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": r}]}))),
        1 => (0u64..1000, 0u64..1000).prop_map(move |(p, c)| data(json!({"choices": [], "usage": {"prompt_tokens": p, "completion_tokens": c}}))),
        1 => Just("data: [DONE]\n\n".to_string()),
        1 => Just(": keep-alive\n\n".to_string()),
        1 => Just(data(json!({"error": {"message": "overloaded", "type": "server_error"}}))),
        1 => "\\PC{0,30}".prop_map(|junk| format!("data: {junk}\n\n")),
        1 => "[\\r\\n:a-z ]{0,10}",
    ]
}

/// An event of an Anthropic Messages stream, sometimes damaged.
fn anthropic_line() -> impl Strategy<Value = String> {
    let event = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    prop_oneof![
        1 => Just(event("message_start", json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 12, "output_tokens": 1}}}))),
        1 => (0u32..3).prop_map(move |i| event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))),
        1 => (0u32..3).prop_map(move |i| event("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "save_artifact", "input": {}}}))),
        4 => (0u32..3, text_piece()).prop_map(move |(i, t)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": t}}))),
        2 => (0u32..3, "[{}\":a-z0-9 ]{0,8}").prop_map(move |(i, p)| event("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}}))),
        1 => (0u32..3).prop_map(move |i| event("content_block_stop", json!({"type": "content_block_stop", "index": i}))),
        1 => prop_oneof![Just("end_turn"), Just("tool_use"), Just("max_tokens")].prop_map(move |r| event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": r}, "usage": {"output_tokens": 7}}))),
        1 => Just(event("message_stop", json!({"type": "message_stop"}))),
        1 => Just(event("ping", json!({"type": "ping"}))),
        1 => Just(event("error", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))),
        1 => "\\PC{0,30}".prop_map(|junk| format!("event: content_block_delta\ndata: {junk}\n\n")),
        1 => "[\\r\\n:a-z ]{0,10}",
    ]
}

/// A JSON value of any shape, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        prop_oneof![Just("quire.thread"), Just("quire.export"), Just("user"), Just("assistant"), Just("mapping")]
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop_oneof![
            Just("format".to_string()),
            Just("version".to_string()),
            Just("thread".to_string()),
            Just("threads".to_string()),
            Just("messages".to_string()),
            Just("mapping".to_string()),
            Just("title".to_string()),
            Just("content".to_string()),
            Just("role".to_string()),
            "[a-z_]{1,8}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn sse_events_do_not_depend_on_where_the_bytes_are_split(
        body in prop::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '), any::<u8>()], 0..300),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        prop_assert_eq!(sse_events(&split(&body, &cuts)), sse_events(&[&body]));
    }

    #[test]
    fn openai_streams_end_cleanly_wherever_they_are_cut_or_garbled(
        lines in prop::collection::vec(openai_line(), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        check_cut_anywhere(openai::decode_body, lines, &cuts)?;
    }

    #[test]
    fn anthropic_streams_end_cleanly_wherever_they_are_cut_or_garbled(
        lines in prop::collection::vec(anthropic_line(), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        check_cut_anywhere(anthropic::decode_body, lines, &cuts)?;
    }

    #[test]
    fn any_import_body_is_planned_or_refused_as_the_client_s_fault(body in any_json()) {
        if let Err(e) = import_plan(&serde_json::to_vec(&body).unwrap()) {
            let status = ApiError::from(e).status_code();
            prop_assert!(status.is_client_error(), "{status}");
        }
    }

    #[test]
    fn damaged_quire_exports_are_planned_or_refused_as_the_client_s_fault(
        title in any_json(), messages in any_json(), message in any_json(), version in any_json(),
    ) {
        let bodies = [
            json!({"format": "quire.thread", "version": version, "exported_at": "2026-01-01T00:00:00Z",
                   "thread": {"title": title, "tags": [], "created_at": "2026-01-01T00:00:00Z"}, "messages": messages}),
            json!({"format": "quire.thread", "version": 1, "exported_at": "2026-01-01T00:00:00Z",
                   "thread": {"title": "t", "tags": [], "created_at": "2026-01-01T00:00:00Z"}, "messages": [message]}),
            json!({"format": "quire.export", "version": 1, "threads": [{"thread": title, "messages": messages}]}),
            json!([{"title": title, "mapping": {"a": {"message": message, "parent": null, "children": []}}}]),
        ];
        for body in bodies {
            if let Err(e) = import_plan(&serde_json::to_vec(&body).unwrap()) {
                let status = ApiError::from(e).status_code();
                prop_assert!(status.is_client_error(), "{status}");
            }
        }
    }
}
