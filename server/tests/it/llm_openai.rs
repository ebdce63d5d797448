//! The OpenAI adapter against a local fake speaking the Chat Completions streaming format.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::tool_call;
use crate::fake_upstream::{
    assert_key_redacted, assert_rate_limit_retried, chunks, code_of, collect, delta, err, events_of, fast_retries,
    hello, patient_timeouts, retried_events, stalled_events, text_events, weather_exchange, weather_tool, FakeServer,
    Reply, Step,
};
use llm::{
    openai::{MaxTokensField, OpenAiConfig, OpenAiProvider},
    retry::RetryingProvider,
    types::{ChatRequest, LlmError, Provider, StopReason, StreamEvent, Usage},
    ApiKey, HttpTimeouts,
};
use serde_json::json;

const KEY: &str = "sk-test-0123456789-secret";

/// `data:` line of a chunk whose only choice carries `delta` / `finish_reason`, the way OpenAI
/// frames it (including the `null`s it sends).
fn chunk(delta: serde_json::Value, finish_reason: Option<&str>) -> String {
    let body = json!({
        "id": "chatcmpl-9xYz", "object": "chat.completion.chunk", "created": 1_718_000_000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0aa8d3e20b",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        "usage": null
    });
    format!("data: {body}\n\n")
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    let body = json!({
        "id": "chatcmpl-9xYz", "object": "chat.completion.chunk", "created": 1_718_000_000,
        "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0aa8d3e20b", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
    });
    format!("data: {body}\n\n")
}

fn text_body(pieces: &[&str]) -> String {
    let mut body = chunk(json!({"role": "assistant", "content": "", "refusal": null}), None);
    for piece in pieces {
        body += &chunk(json!({"content": piece}), None);
    }
    body += &chunk(json!({}), Some("stop"));
    body += &usage_chunk(21, 4);
    body += "data: [DONE]\n\n";
    body
}

fn tool_fragment(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> String {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    chunk(json!({"tool_calls": [call]}), None)
}

fn provider(server: &FakeServer) -> OpenAiProvider {
    provider_with(server, patient_timeouts())
}

/// The provider for `server`, with the test key, waiting as long as `timeouts` allow.
fn provider_with(server: &FakeServer, timeouts: HttpTimeouts) -> OpenAiProvider {
    let mut config = OpenAiConfig::with_base_url(format!("{}/v1", server.url), "gpt-test");
    config.endpoint.api_key = Some(ApiKey::new(KEY));
    config.endpoint.timeouts = timeouts;
    OpenAiProvider::new(config).unwrap()
}

#[tokio::test]
async fn streams_text_usage_and_stop_from_chunks_split_anywhere() {
    // 7-byte HTTP chunks split lines, JSON and the multi-byte characters.
    let body = text_body(&["Héllo", " wörld", " 🦀"]);
    let events = events_of(provider, &body, 7).await;
    assert_eq!(events, text_events(&["Héllo", " wörld", " 🦀"], 21, 4));
}

#[tokio::test]
async fn crlf_framing_and_keepalive_comments_are_accepted() {
    let body = format!(": keep-alive\n\n{}", text_body(&["ok"])).replace('\n', "\r\n");
    let events = events_of(provider, &body, 3).await;
    assert_eq!(events.first(), Some(&delta("ok")));
    assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::EndTurn))));
}

#[tokio::test]
async fn parallel_tool_calls_interleaved_by_index_are_parsed_once_complete() {
    let mut body = chunk(json!({"role": "assistant", "content": null, "refusal": null}), None);
    body += &tool_fragment(0, Some("call_weather"), Some("get_weather"), "");
    body += &tool_fragment(0, None, None, "{\"ci");
    body += &tool_fragment(1, Some("call_time"), Some("get_time"), "");
    body += &tool_fragment(1, None, None, "{\"tz\":");
    body += &tool_fragment(0, None, None, "ty\": \"Par");
    body += &tool_fragment(1, None, None, " \"UTC\"}");
    body += &tool_fragment(0, None, None, "is\"}");
    body += &chunk(json!({}), Some("tool_calls"));
    body += &usage_chunk(80, 40);
    body += "data: [DONE]\n\n";
    let events = events_of(provider, &body, 11).await;
    assert_eq!(
        events,
        vec![
            Ok(tool_call("call_weather", "get_weather", json!({"city": "Paris"}))),
            Ok(tool_call("call_time", "get_time", json!({"tz": "UTC"}))),
            Ok(StreamEvent::Usage(Usage { input_tokens: 80, output_tokens: 40 })),
            Ok(StreamEvent::Stop(StopReason::ToolUse)),
        ]
    );
}

#[tokio::test]
async fn unparsable_tool_arguments_are_a_broken_call_for_the_model() {
    let mut body = tool_fragment(0, Some("call_1"), Some("f"), "{\"a\": ");
    body += &tool_fragment(0, None, None, "nope}");
    body += &chunk(json!({}), Some("tool_calls"));
    body += "data: [DONE]\n\n";
    let events = events_of(provider, &body, 64).await;
    let StreamEvent::BrokenCall(broken) = events[0].clone().unwrap() else { panic!("{events:?}") };
    assert_eq!((broken.id.as_str(), broken.name.as_str()), ("call_1", "f"));
    assert!(broken.problem.contains("not valid JSON"), "{}", broken.problem);
    assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::ToolUse))));
}

#[tokio::test]
async fn length_finish_reason_maps_to_max_tokens() {
    let mut body = chunk(json!({"content": "cut sh"}), None);
    body += &chunk(json!({}), Some("length"));
    body += "data: [DONE]\n\n";
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events.last(), Some(&Ok(StreamEvent::Stop(StopReason::MaxTokens))));
}

#[tokio::test]
async fn request_body_and_headers() {
    let server = FakeServer::start(vec![Reply::sse_chunked(&text_body(&["ok"]), 64)]).await;
    let request = ChatRequest {
        system: "You are Quire.".into(),
        messages: weather_exchange("call_1", "18°C, sunny", false),
        tools: vec![weather_tool(json!({"type": "object", "properties": {"city": {"type": "string"}},
                                         "required": ["city"]}))],
        max_tokens: 256,
        tool_choice: None,
    };
    collect(provider(&server).stream(request).await.unwrap()).await;

    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/v1/chat/completions");
    assert_eq!(recorded.headers["authorization"], format!("Bearer {KEY}").as_str());
    assert_eq!(recorded.headers["content-type"], "application/json");
    assert_eq!(recorded.headers["accept"], "text/event-stream");
    assert_eq!(
        recorded.body,
        json!({
            "model": "gpt-test",
            "stream": true,
            "stream_options": {"include_usage": true},
            // A non-OpenAI base URL gets the widely supported field.
            "max_tokens": 256,
            "messages": [
                {"role": "system", "content": "You are Quire."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18°C, sunny"}
            ],
            "tools": [{"type": "function", "function": {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                               "required": ["city"]}
            }}]
        })
    );
}

#[tokio::test]
async fn max_completion_tokens_when_configured_and_no_key_no_header() {
    let server = FakeServer::start(vec![Reply::sse_chunked(&text_body(&["ok"]), 64)]).await;
    let mut config = OpenAiConfig::with_base_url(&server.url, "local-model");
    config.max_tokens_field = MaxTokensField::MaxCompletionTokens;
    let provider = OpenAiProvider::new(config).unwrap();
    let request = ChatRequest { max_tokens: 99, ..hello() };
    collect(provider.stream(request).await.unwrap()).await;
    let recorded = &server.requests()[0];
    assert_eq!(recorded.path, "/chat/completions");
    assert!(recorded.headers.get("authorization").is_none());
    assert_eq!(recorded.body["max_completion_tokens"], json!(99));
    assert!(recorded.body.get("max_tokens").is_none());
    assert!(recorded.body.get("tools").is_none());
}

#[tokio::test]
async fn rate_limited_then_success_is_retried_and_counted() {
    // A rate limit is known by its status alone: the body of the retried refusal has no type or code.
    let limited = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    let bare = r#"{"error":{"message":"Rate limit reached"}}"#;
    assert_rate_limit_retried(provider, 1, limited, bare, &text_body(&["hi"])).await;
}

#[tokio::test]
async fn server_errors_are_retried_up_to_max_attempts() {
    let error = r#"{"error":{"message":"The server had an error","type":"server_error"}}"#;
    let server = FakeServer::start(vec![
        Reply::status(500, error),
        Reply::status(500, error),
        Reply::status(500, error),
        Reply::sse_chunked(&text_body(&["never"]), 64),
    ])
    .await;
    let retrying = RetryingProvider::new(provider(&server), fast_retries());
    let result = retrying.stream(hello()).await;
    assert!(matches!(result, Err(LlmError::Upstream { status: 500 })));
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn overloaded_statuses_and_bodies() {
    let server = FakeServer::start(vec![
        Reply::status(529, r#"{"error":{"message":"busy"}}"#),
        Reply::status(
            503,
            r#"{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}"#,
        ),
        Reply::status(503, r#"{"error":{"message":"maintenance"}}"#),
    ])
    .await;
    let provider = provider(&server);
    assert_eq!(code_of(provider.stream(hello()).await), "overloaded");
    assert_eq!(code_of(provider.stream(hello()).await), "overloaded");
    assert!(matches!(provider.stream(hello()).await, Err(LlmError::Upstream { status: 503 })));
}

#[tokio::test]
async fn auth_and_client_errors_are_not_retried() {
    let server = FakeServer::start(vec![
        Reply::status(
            401,
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        ),
        Reply::status(400, r#"{"error":{"message":"bad request"}}"#),
    ])
    .await;
    let retrying = RetryingProvider::new(provider(&server), fast_retries());
    assert_eq!(code_of(retrying.stream(hello()).await), "upstream_unauthorized");
    assert_eq!(server.request_count(), 1);
    assert!(matches!(retrying.stream(hello()).await, Err(LlmError::Upstream { status: 400 })));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn malformed_json_line_is_a_protocol_error_after_earlier_text() {
    let mut body = chunk(json!({"content": "fine"}), None);
    body += "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"bro\n\n";
    body += &chunk(json!({"content": "never seen"}), None);
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events, vec![delta("fine"), err("upstream_protocol")]);
}

#[tokio::test]
async fn connection_cut_mid_stream_is_a_network_error_and_not_retried() {
    let mut steps = chunks(chunk(json!({"content": "one"}), None).as_bytes(), 1000);
    steps.extend(chunks(chunk(json!({"content": "two"}), None).as_bytes(), 1000));
    steps.push(Step::Cut);
    let server =
        FakeServer::start(vec![Reply::sse(steps), Reply::sse_chunked(&text_body(&["second attempt"]), 64)]).await;
    let events = retried_events(provider(&server)).await;
    assert_eq!(events, vec![delta("one"), delta("two"), err("upstream_unreachable"),]);
    assert_eq!(server.request_count(), 1, "no retry after the first token");
}

#[tokio::test]
async fn clean_end_without_finish_or_done_is_an_error() {
    let body = chunk(json!({"content": "half an answ"}), None);
    let events = events_of(provider, &body, 64).await;
    assert_eq!(events, vec![delta("half an answ"), err("upstream_protocol")]);
}

#[tokio::test]
async fn stalled_stream_times_out() {
    let events = stalled_events(provider_with, &chunk(json!({"content": "thinking"}), None)).await;
    assert_eq!(events, vec![delta("thinking"), err("upstream_timeout")]);
}

#[tokio::test]
async fn slow_response_head_is_a_first_byte_timeout() {
    let server =
        FakeServer::start(vec![Reply::sse_chunked(&text_body(&["late"]), 64).head_delay(Duration::from_secs(30))])
            .await;
    let provider =
        provider_with(&server, HttpTimeouts { first_byte: Duration::from_millis(200), ..patient_timeouts() });
    assert_eq!(code_of(provider.stream(hello()).await), "upstream_timeout");
}

#[tokio::test]
async fn unreachable_server_is_a_network_error() {
    // Bind then drop a listener to get a port where nothing listens.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAiProvider::new(OpenAiConfig::with_base_url(url, "m")).unwrap();
    assert_eq!(code_of(provider.stream(hello()).await), "upstream_unreachable");
}

#[tokio::test]
async fn debug_output_does_not_reveal_the_key() {
    let server = FakeServer::start(vec![]).await;
    let provider = provider(&server);
    assert_key_redacted(&format!("{provider:?} {:?}", provider.config()), KEY);
    let wrapped = format!("{:?}", RetryingProvider::new(provider, fast_retries()));
    assert!(!wrapped.contains(KEY), "{wrapped}");
}

/// A provider's front end over TLS whose every answer waits until `expected` requests are open at once, and
/// records the HTTP version each came in.
async fn gathering_front_end(
    expected: usize,
) -> (crate::common::tls::TlsFrontEnd, Arc<Mutex<Vec<axum::http::Version>>>) {
    let versions = Arc::new(Mutex::new(Vec::new()));
    let (all_open, _) = tokio::sync::watch::channel(false);
    let all_open = Arc::new(all_open);
    let seen = versions.clone();
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |version: axum::http::Version| {
            let (seen, all_open) = (seen.clone(), all_open.clone());
            async move {
                let mut opened = all_open.subscribe();
                {
                    let mut seen = seen.lock().unwrap();
                    seen.push(version);
                    if seen.len() >= expected {
                        all_open.send_replace(true);
                    }
                }
                let _ = opened.wait_for(|open| *open).await;
                ([("content-type", "text/event-stream")], text_body(&["Hi"]))
            }
        }),
    );
    (crate::common::tls::serve(router, 100).await.unwrap(), versions)
}

#[tokio::test]
async fn more_streams_than_one_http2_connection_allows_all_run_at_once() {
    // The front end allows 100 streams per connection and answers none until 150 are open: streams queued behind
    // a full connection would never be answered.
    const STREAMS: usize = 150;
    let (front, versions) = gathering_front_end(STREAMS).await;
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &front.ca_pem).unwrap();
    let mut config = OpenAiConfig::with_base_url(format!("https://localhost:{}/v1", front.addr.port()), "m");
    config.endpoint.ca_file = Some(ca_file);
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());
    let streams = (0..STREAMS).map(|_| {
        let provider = provider.clone();
        tokio::spawn(async move { collect(provider.stream(hello()).await.unwrap()).await })
    });
    let all = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(streams))
        .await
        .expect("streams beyond one connection's limit waited for the others");
    for events in all {
        assert!(events.unwrap().contains(&delta("Hi")));
    }
    let versions = versions.lock().unwrap();
    assert_eq!(versions.len(), STREAMS);
    assert!(versions.iter().all(|v| *v == axum::http::Version::HTTP_2), "{versions:?}");
}

#[tokio::test]
async fn a_provider_of_an_authority_not_trusted_is_refused() {
    let (front, versions) = gathering_front_end(1).await;
    let url = format!("https://localhost:{}/v1", front.addr.port());
    let provider = OpenAiProvider::new(OpenAiConfig::with_base_url(&url, "m")).unwrap();
    assert_eq!(code_of(provider.stream(hello()).await), "upstream_unreachable");
    assert!(versions.lock().unwrap().is_empty());

    // A file that is not a certificate is refused when the provider is made, not at the first message.
    let dir = tempfile::tempdir().unwrap();
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, "not a certificate").unwrap();
    let mut config = OpenAiConfig::with_base_url(&url, "m");
    config.endpoint.ca_file = Some(ca_file.clone());
    assert!(OpenAiProvider::new(config.clone()).is_err());
    config.endpoint.ca_file = Some(dir.path().join("missing.pem"));
    assert!(OpenAiProvider::new(config).is_err());
}
