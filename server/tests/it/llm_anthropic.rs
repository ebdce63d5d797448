//! The Anthropic adapter against a local fake speaking the Messages streaming format.

use crate::common::tool_call;
use crate::fake_upstream::{
    assert_key_redacted, assert_rate_limit_retried, code_of, collect, delta, err, events_of, fast_retries, hello,
    patient_timeouts, retried_events, stalled_events, text_events, weather_exchange, weather_tool, FakeServer, Reply,
    Step,
};
use llm::{
    anthropic::{AnthropicConfig, AnthropicProvider, API_VERSION},
    retry::RetryingProvider,
    types::{ChatRequest, LlmError, Provider, StopReason, StreamEvent, Usage},
    ApiKey, HttpTimeouts,
};
use serde_json::json;

const KEY: &str = "sk-ant-api03-test-secret";

/// One SSE event as Anthropic frames it: `event:` line repeating the payload's `type`.
fn event(payload: serde_json::Value) -> String {
    let name = payload["type"].as_str().unwrap().to_owned();
    format!("event: {name}\ndata: {payload}\n\n")
}

fn message_start(input_tokens: u64) -> String {
    event(json!({"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant",
        "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "output_tokens": 1}}}))
}

fn text_block_start(index: u32) -> String {
    event(json!({"type": "content_block_start", "index": index,
                 "content_block": {"type": "text", "text": ""}}))
}

fn text_delta(index: u32, text: &str) -> String {
    event(json!({"type": "content_block_delta", "index": index,
                 "delta": {"type": "text_delta", "text": text}}))
}

fn json_delta(index: u32, partial: &str) -> String {
    event(json!({"type": "content_block_delta", "index": index,
                 "delta": {"type": "input_json_delta", "partial_json": partial}}))
}

fn block_stop(index: u32) -> String {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn message_end(stop_reason: &str, output_tokens: u64) -> String {
    event(json!({"type": "message_delta",
                 "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                 "usage": {"output_tokens": output_tokens}}))
        + &event(json!({"type": "message_stop"}))
}

fn ping() -> String {
    event(json!({"type": "ping"}))
}

fn overloaded_event() -> String {
    event(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
}

/// The start of an answer whose first text block has begun with `text`.
fn text_begun(input_tokens: u64, text: &str) -> String {
    message_start(input_tokens) + &text_block_start(0) + &text_delta(0, text)
}

fn text_body(pieces: &[&str]) -> String {
    let mut body = message_start(25) + &text_block_start(0) + &ping();
    for piece in pieces {
        body += &text_delta(0, piece);
    }
    body + &block_stop(0) + &message_end("end_turn", 15)
}

fn provider(server: &FakeServer) -> AnthropicProvider {
    provider_with(server, patient_timeouts())
}

/// The provider for `server`, with the test key, waiting as long as `timeouts` allow.
fn provider_with(server: &FakeServer, timeouts: HttpTimeouts) -> AnthropicProvider {
    let mut config = AnthropicConfig::with_base_url(&server.url, "claude-test");
    config.endpoint.api_key = Some(ApiKey::new(KEY));
    config.endpoint.timeouts = timeouts;
    AnthropicProvider::new(config).unwrap()
}

#[tokio::test]
async fn streams_text_usage_and_stop_from_chunks_split_anywhere() {
    let body = text_body(&["Héllo", " wörld", " 🦀"]);
    let events = events_of(provider, &body, 5).await;
    assert_eq!(events, text_events(&["Héllo", " wörld", " 🦀"], 25, 15));
}

#[tokio::test]
async fn tool_use_input_fragments_are_parsed_at_block_stop() {
    let mut body = message_start(472) + &text_block_start(0);
    body += &text_delta(0, "Let me check.");
    body += &block_stop(0);
    body += &event(json!({"type": "content_block_start", "index": 1, "content_block":
        {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather", "input": {}}}));
    body += &json_delta(1, "");
    body += &json_delta(1, "{\"location\": \"San Fra");
    body += &ping();
    body += &json_delta(1, "ncisco, CA\", \"unit\": \"fah");
    body += &json_delta(1, "renheit\"}");
    body += &block_stop(1);
    // A tool without arguments: no deltas at all.
    body += &event(json!({"type": "content_block_start", "index": 2, "content_block":
        {"type": "tool_use", "id": "toolu_02", "name": "get_time", "input": {}}}));
    body += &block_stop(2);
    body += &message_end("tool_use", 89);
    let events = events_of(provider, &body, 13).await;
    assert_eq!(
        events,
        vec![
            delta("Let me check."),
            Ok(tool_call(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
            )),
            Ok(tool_call("toolu_02", "get_time", json!({}))),
            Ok(StreamEvent::Usage(Usage { input_tokens: 472, output_tokens: 89 })),
            Ok(StreamEvent::Stop(StopReason::ToolUse)),
        ]
    );
}

#[tokio::test]
async fn unparsable_tool_input_is_a_broken_call_for_the_model() {
    let mut body = message_start(1);
    body += &event(json!({"type": "content_block_start", "index": 0, "content_block":
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}));
    body += &json_delta(0, "{\"a\": tru");
    body += &block_stop(0);
    body += &message_end("tool_use", 3);
    let events = events_of(provider, &body, 64).await;
    let problem = "the arguments end before their JSON is complete (cut off)".to_string();
    let broken = llm::BrokenCall { id: "toolu_1".into(), name: "f".into(), problem };
    assert_eq!(events[0], Ok(StreamEvent::BrokenCall(broken)));
    assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::ToolUse))));
}

#[tokio::test]
async fn max_tokens_stop_reason_and_unknown_events_are_tolerated() {
    let mut body = message_start(3) + &text_block_start(0);
    body += &event(json!({"type": "some_future_event", "x": 1}));
    body += &text_delta(0, "abc");
    body += &block_stop(0);
    body += &message_end("max_tokens", 1);
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::MaxTokens))));
}

#[tokio::test]
async fn request_body_and_headers() {
    let server = FakeServer::start(vec![Reply::sse_chunked(&text_body(&["ok"]), 64)]).await;
    let request = ChatRequest {
        system: "You are Quire.".into(),
        messages: weather_exchange("toolu_1", "city not found", true),
        tools: vec![weather_tool(json!({"type": "object", "properties": {"city": {"type": "string"}}}))],
        max_tokens: 1024,
        tool_choice: None,
    };
    collect(provider(&server).stream(request).await.unwrap()).await;

    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/messages");
    assert_eq!(recorded.headers["x-api-key"], KEY);
    assert_eq!(recorded.headers["anthropic-version"], API_VERSION);
    assert_eq!(recorded.headers["content-type"], "application/json");
    assert!(recorded.headers.get("authorization").is_none());
    assert_eq!(
        recorded.body,
        json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "stream": true,
            "system": "You are Quire.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                     "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": "city not found", "is_error": true}
                ]}
            ],
            "tools": [{
                "name": "get_weather",
                "description": "Current weather for a city",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}
            }]
        })
    );
}

#[tokio::test]
async fn rate_limited_then_success_is_retried_and_counted() {
    let limited = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
    assert_rate_limit_retried(provider, 7, limited, limited, &text_body(&["hi"])).await;
}

#[tokio::test]
async fn http_500_and_529() {
    let server = FakeServer::start(vec![
        Reply::status(500, r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#),
        Reply::status(529, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#),
    ])
    .await;
    let provider = provider(&server);
    assert!(matches!(provider.stream(hello()).await, Err(LlmError::Upstream { status: 500 })));
    assert!(matches!(provider.stream(hello()).await, Err(LlmError::Overloaded)));
}

#[tokio::test]
async fn overloaded_error_event_before_any_token_is_retried() {
    let server = FakeServer::start(vec![
        Reply::sse_chunked(&(message_start(10) + &ping() + &overloaded_event()), 64),
        Reply::sse_chunked(&text_body(&["second try"]), 64),
    ])
    .await;

    // The bare provider yields the error as the stream's only item.
    let events = events_of(provider, &(message_start(10) + &overloaded_event()), 64).await;
    assert_eq!(events, vec![err("overloaded")]);

    let events = retried_events(provider(&server)).await;
    assert_eq!(events[0], delta("second try"));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn overloaded_error_event_after_a_token_is_not_retried() {
    let body = text_begun(10, "Hel") + &overloaded_event();
    let server =
        FakeServer::start(vec![Reply::sse_chunked(&body, 64), Reply::sse_chunked(&text_body(&["never"]), 64)]).await;
    let events = retried_events(provider(&server)).await;
    assert_eq!(events, vec![delta("Hel"), err("overloaded")]);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn malformed_json_is_a_protocol_error() {
    let body =
        text_begun(1, "ok") + "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0,\n\n";
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events, vec![delta("ok"), err("upstream_protocol")]);
}

#[tokio::test]
async fn connection_cut_mid_stream_is_a_network_error() {
    let head = text_begun(5, "partial");
    let server = FakeServer::start(vec![Reply::sse_then(&head, Step::Cut)]).await;
    let events = retried_events(provider(&server)).await;
    assert_eq!(events, vec![delta("partial"), err("upstream_unreachable")]);
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn end_without_message_stop_is_an_error() {
    // Everything but message_stop.
    let body = text_begun(5, "almost")
        + &block_stop(0)
        + &event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": 2}}));
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events, vec![delta("almost"), err("upstream_protocol")]);
}

#[tokio::test]
async fn stalled_stream_times_out() {
    let events = stalled_events(provider_with, &text_begun(5, "hmm")).await;
    assert_eq!(events, vec![delta("hmm"), err("upstream_timeout")]);
}

#[tokio::test]
async fn unauthorized_is_not_retried() {
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )])
    .await;
    let retrying = RetryingProvider::new(provider(&server), fast_retries());
    assert_eq!(code_of(retrying.stream(hello()).await), "upstream_unauthorized");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn debug_output_does_not_reveal_the_key() {
    let server = FakeServer::start(vec![]).await;
    let provider = provider(&server);
    assert_key_redacted(&format!("{provider:?} {:?}", provider.config()), KEY);
}
