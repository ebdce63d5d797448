//! A scripted fake HTTP server for the provider tests, bound to 127.0.0.1:0.
//!
//! Each incoming request is recorded and answered with the next scripted [`Reply`]. A reply's body
//! is a list of [`Step`]s, so a test decides exactly which bytes go out in which HTTP chunk, and
//! when the server pauses, stalls or drops the connection. A server may instead answer each request
//! from what it holds ([`FakeServer::answering`]), as the greedy model of [`greedy`] does.

#![allow(dead_code)] // each test binary uses a different subset

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::State,
    http::{HeaderMap, StatusCode, Uri},
    response::Response,
};
use futures::{Stream, StreamExt};
use llm::retry::RetryingProvider;
use llm::types::{ChatRequest, Message, Part, Provider, Role, StopReason, ToolCall, ToolSpec, Usage};
use llm::{EventStream, LlmError, StreamEvent};

pub mod greedy;

/// One step of a streamed response body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send these bytes as one HTTP chunk.
    Bytes(Vec<u8>),
    /// Wait before the next step.
    Pause(Duration),
    /// Drop the connection without finishing the body.
    Cut,
    /// Send nothing more, never finish.
    Stall,
}

/// A scripted answer to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    steps: Vec<Step>,
    head_delay: Option<Duration>,
}

impl Reply {
    /// `200 OK` with an event-stream body made of `steps`.
    pub fn sse(steps: Vec<Step>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            steps,
            head_delay: None,
        }
    }

    /// A complete event-stream body, sent in chunks of `chunk_size` bytes (so chunk boundaries
    /// fall inside lines, CRLFs and UTF-8 characters).
    pub fn sse_chunked(body: &str, chunk_size: usize) -> Self {
        Self::sse(chunks(body.as_bytes(), chunk_size))
    }

    /// An event-stream body that sends `head` in chunks of 1000 bytes, then does what `last` says (cut or stall).
    pub fn sse_then(head: &str, last: Step) -> Self {
        let mut steps = chunks(head.as_bytes(), 1000);
        steps.push(last);
        Self::sse(steps)
    }

    /// A non-streamed answer with a JSON body.
    pub fn status(status: u16, json_body: &str) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            steps: vec![Step::Bytes(json_body.as_bytes().to_vec())],
            head_delay: None,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Waits this long before sending the status line.
    pub fn head_delay(mut self, delay: Duration) -> Self {
        self.head_delay = Some(delay);
        self
    }
}

/// Splits `bytes` into steps of `size` bytes each.
pub fn chunks(bytes: &[u8], size: usize) -> Vec<Step> {
    bytes.chunks(size).map(|chunk| Step::Bytes(chunk.to_vec())).collect()
}

/// What the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

/// Makes the answer to a request from the request itself.
pub type Answer = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    /// Answers requests once no scripted reply is left.
    answer: Option<Answer>,
}

/// A running fake server; it lives as long as the test's runtime.
pub struct FakeServer {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    shared: Arc<Shared>,
}

impl FakeServer {
    /// Starts a server answering requests with `replies`, in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(Shared { replies: Mutex::new(replies.into()), ..Shared::default() }).await
    }

    /// Starts a server that answers every request with what `answer` makes of it (scripted replies pushed later
    /// go first).
    pub async fn answering(answer: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(Shared { answer: Some(Box::new(answer)), ..Shared::default() }).await
    }

    async fn serve(shared: Shared) -> Self {
        let shared = Arc::new(shared);
        let app = axum::Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { url, shared }
    }

    /// Queues more replies after the ones still waiting.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.replies.lock().unwrap().extend(replies);
    }

    /// Drops the replies no request has taken yet.
    pub fn clear(&self) {
        self.shared.replies.lock().unwrap().clear();
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// Number of requests received so far.
    pub fn request_count(&self) -> usize {
        self.shared.requests.lock().unwrap().len()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let recorded = Recorded {
        path: uri.path().to_owned(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
    };
    let scripted = shared.replies.lock().unwrap().pop_front();
    let reply = scripted.or_else(|| shared.answer.as_ref().map(|answer| answer(&recorded)));
    shared.requests.lock().unwrap().push(recorded);
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("no scripted reply left"))
            .unwrap();
    };
    if let Some(delay) = reply.head_delay {
        tokio::time::sleep(delay).await;
    }
    let mut response = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        response = response.header(name, value);
    }
    response.body(Body::from_stream(body_stream(reply.steps))).unwrap()
}

fn body_stream(steps: Vec<Step>) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send {
    futures::stream::unfold(VecDeque::from(steps), |mut steps| async move {
        loop {
            match steps.pop_front()? {
                Step::Bytes(bytes) => return Some((Ok(Bytes::from(bytes)), steps)),
                Step::Pause(delay) => tokio::time::sleep(delay).await,
                Step::Cut => {
                    // Give hyper a moment to flush what was sent, then fail the body, which makes
                    // it close the connection without the final chunk.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    return Some((Err(std::io::Error::other("cut")), steps));
                }
                Step::Stall => futures::future::pending::<()>().await,
            }
        }
    })
}

/// The `data:` line of an OpenAI chunk whose only choice carries `delta` and `finish_reason`.
pub fn openai_chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    let body = serde_json::json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_718_000_000,
        "model": "fake-gpt", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {body}\n\n")
}

/// The `data:` lines that end an OpenAI stream: its usage chunk, then `[DONE]`.
pub fn openai_usage_and_done(prompt: u64, completion: u64) -> String {
    let usage = serde_json::json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}});
    format!("data: {usage}\n\ndata: [DONE]\n\n")
}

/// Neutral events, with errors reduced to their stable code for easy comparison.
pub type Collected = Vec<Result<StreamEvent, &'static str>>;

/// Drains a stream (failing the test if it hangs).
pub async fn collect(stream: EventStream) -> Collected {
    tokio::time::timeout(Duration::from_secs(20), stream.map(|item| item.map_err(|e| e.code())).collect())
        .await
        .expect("stream did not end")
}

/// What the provider `make` builds for a fake server yields for one answer of `body`, sent in HTTP chunks of
/// `chunk_size` bytes.
pub async fn events_of<P: Provider>(make: impl FnOnce(&FakeServer) -> P, body: &str, chunk_size: usize) -> Collected {
    let server = FakeServer::start(vec![Reply::sse_chunked(body, chunk_size)]).await;
    collect(make(&server).stream(hello()).await.unwrap()).await
}

/// What the provider `make` builds for a fake server, waiting at most 200 ms between bytes, yields for an answer
/// that sends `head` and then nothing more.
pub async fn stalled_events<P: Provider>(
    make: impl FnOnce(&FakeServer, llm::HttpTimeouts) -> P,
    head: &str,
) -> Collected {
    let server = FakeServer::start(vec![Reply::sse_then(head, Step::Stall)]).await;
    let timeouts = llm::HttpTimeouts { idle: Duration::from_millis(200), ..patient_timeouts() };
    collect(make(&server, timeouts).stream(hello()).await.unwrap()).await
}

/// What `provider`, retried as [`fast_retries`] allows, yields for [`hello`].
pub async fn retried_events<P: Provider>(provider: P) -> Collected {
    collect(RetryingProvider::new(provider, fast_retries()).stream(hello()).await.unwrap()).await
}

/// A 429 with `retry-after: {seconds}` and the body `refusal` reaches the provider `make` builds as `RateLimited`
/// for that long; behind retries, a 429 with the body `retried` is asked again and `answer` (saying "hi") streams.
pub async fn assert_rate_limit_retried<P: Provider>(
    make: impl Fn(&FakeServer) -> P,
    seconds: u64,
    refusal: &str,
    retried: &str,
    answer: &str,
) {
    let limited = |body| Reply::status(429, body).header("retry-after", &seconds.to_string());
    let server = FakeServer::start(vec![limited(refusal)]).await;
    let direct = make(&server).stream(hello()).await;
    assert!(matches!(direct, Err(LlmError::RateLimited { retry_after: Some(d) }) if d == Duration::from_secs(seconds)));

    let server = FakeServer::start(vec![limited(retried), Reply::sse_chunked(answer, 64)]).await;
    let events = retried_events(make(&server)).await;
    assert_eq!(events[0], delta("hi"));
    assert_eq!(server.request_count(), 2);
}

/// Fails unless `printed`, a provider's `Debug` output, shows its key redacted and never the key itself.
pub fn assert_key_redacted(printed: &str, key: &str) {
    assert!(!printed.contains(key), "{printed}");
    assert!(printed.contains("[redacted]"), "{printed}");
}

/// Short form of `Err(code)` for expected error items.
pub fn err(code: &'static str) -> Result<StreamEvent, &'static str> {
    Err(code)
}

/// Short form of a collected text delta.
pub fn delta(text: &str) -> Result<StreamEvent, &'static str> {
    Ok(StreamEvent::TextDelta(text.into()))
}

/// The error's code, for `Result<_, LlmError>` returned by `Provider::stream`.
pub fn code_of<T>(result: Result<T, LlmError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(e) => e.code(),
    }
}

/// Timeouts long enough that only a test that stalls on purpose meets them.
pub fn patient_timeouts() -> llm::HttpTimeouts {
    let five = Duration::from_secs(5);
    llm::HttpTimeouts { connect: five, first_byte: five, idle: five }
}

/// Retries of a few milliseconds, so tests of retrying stay quick.
pub fn fast_retries() -> llm::retry::RetryPolicy {
    llm::retry::RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(10),
    }
}

/// The smallest request: one user message.
pub fn hello() -> ChatRequest {
    ChatRequest { messages: vec![Message::user("Say hello")], ..Default::default() }
}

/// What a provider yields for a plain answer: the pieces of text, the usage, the end of the turn.
pub fn text_events(pieces: &[&str], input_tokens: u64, output_tokens: u64) -> Collected {
    let text = pieces.iter().map(|piece| delta(piece));
    text.chain([
        Ok(StreamEvent::Usage(Usage { input_tokens, output_tokens })),
        Ok(StreamEvent::Stop(StopReason::EndTurn)),
    ])
    .collect()
}

/// The `get_weather` tool that [`weather_exchange`] calls, taking arguments of `input_schema`.
pub fn weather_tool(input_schema: serde_json::Value) -> ToolSpec {
    ToolSpec { name: "get_weather".into(), description: "Current weather for a city".into(), input_schema }
}

/// A user asking for the weather in Paris, the assistant calling `get_weather` as `call_id`, and the tool's
/// answer `result`.
pub fn weather_exchange(call_id: &str, result: &str, is_error: bool) -> Vec<Message> {
    vec![
        Message::user("Weather in Paris?"),
        Message {
            role: Role::Assistant,
            parts: vec![
                Part::Text { text: "Checking.".into() },
                Part::ToolCall(ToolCall {
                    id: call_id.into(),
                    name: "get_weather".into(),
                    arguments: serde_json::json!({"city": "Paris"}),
                }),
            ],
        },
        Message {
            role: Role::User,
            parts: vec![Part::ToolResult { call_id: call_id.into(), content: result.into(), is_error }],
        },
    ]
}
