//! HTTP plumbing shared by the providers: timeouts, sending a request, turning a failed response
//! into an [`LlmError`], and driving an SSE body through a provider-specific decoder.

use std::{collections::VecDeque, error::Error as _, fmt, path::Path, sync::Arc, time::Duration};

use bytes::Bytes;
use futures::{stream::BoxStream, StreamExt};
use reqwest::{
    header::{HeaderMap, HeaderValue, ACCEPT},
    RequestBuilder, Response, StatusCode,
};
use wire::sse::{SseEvent, SseParser};

use crate::{
    endpoint::{Endpoint, HttpTimeouts},
    text_calls,
    types::{ChatRequest, EventStream, Habits, LlmError, Provider, StreamEvent},
};

/// At most this much of an error body is read (it is only inspected and logged).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// At most this much of an error body goes into a log line.
const MAX_LOGGED_BODY_CHARS: usize = 512;

/// Streams sent through one HTTP client at a time: HTTP/2 servers commonly allow 100 on a connection, and hyper's pool
/// never opens a second connection to a full one (streams would wait), so more streams spread over more clients.
pub(crate) const STREAMS_PER_CLIENT: usize = 100;

/// The certificates (PEM) in `path`, trusted besides the usual public roots: a provider behind a private
/// certificate authority (`QUIRE_LLM_CA_FILE`).
pub(crate) fn extra_roots(path: &Path) -> Result<Vec<reqwest::Certificate>, LlmError> {
    let pem = std::fs::read(path)
        .map_err(|e| LlmError::Network(format!("could not read the certificate file {}: {e}", path.display())))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
        LlmError::Network(format!("the certificate file {} is not PEM: {}", path.display(), describe(&e)))
    })?;
    if roots.is_empty() {
        return Err(LlmError::Network(format!("the certificate file {} holds no certificate", path.display())));
    }
    Ok(roots)
}

/// A header carrying `provider`'s API key, marked sensitive so that it stays out of HTTP-level debug output;
/// `Unauthorized` when the key holds characters a header cannot.
pub(crate) fn secret_header(value: &str, provider: &str) -> Result<HeaderValue, LlmError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| {
        tracing::warn!("{provider} API key contains characters not allowed in a header");
        LlmError::Unauthorized
    })?;
    header.set_sensitive(true);
    Ok(header)
}

/// The HTTP clients of one provider, each carrying at most [`STREAMS_PER_CLIENT`] streams at a time.
pub(crate) struct Clients {
    connect_timeout: Duration,
    extra_roots: Vec<reqwest::Certificate>,
    /// Each client with its leases: the list holds one reference, every open stream one more.
    lanes: std::sync::Mutex<Vec<Arc<reqwest::Client>>>,
}

/// One stream's claim on a client, given back when dropped.
pub(crate) struct Lease(Arc<reqwest::Client>);

impl Lease {
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.0
    }
}

/// Streams open on a client of the list.
fn streams(lane: &Arc<reqwest::Client>) -> usize {
    Arc::strong_count(lane) - 1
}

impl Clients {
    /// Builds the first client, so a configuration that cannot work fails at start-up.
    pub(crate) fn new(timeouts: &HttpTimeouts, ca_file: Option<&Path>) -> Result<Self, LlmError> {
        let extra_roots = ca_file.map(extra_roots).transpose()?.unwrap_or_default();
        let clients = Self { connect_timeout: timeouts.connect, extra_roots, lanes: Default::default() };
        let first = clients.build()?;
        clients.lanes.lock().expect("lanes").push(Arc::new(first));
        Ok(clients)
    }

    fn build(&self) -> Result<reqwest::Client, LlmError> {
        let mut builder = reqwest::Client::builder().connect_timeout(self.connect_timeout);
        for root in &self.extra_roots {
            builder = builder.add_root_certificate(root.clone());
        }
        builder.build().map_err(|e| LlmError::Network(format!("could not build HTTP client: {}", describe(&e))))
    }

    /// A client with room for one more stream: the first that has some, so streams gather on few connections;
    /// a new client when all are full. Clients are kept once made (an idle one holds no connection for long).
    pub(crate) fn lease(&self) -> Result<Lease, LlmError> {
        let mut lanes = self.lanes.lock().expect("lanes");
        // Leases are only made under the lock, so a count read here can only fall (a stream ending) before the
        // lease below: a client seen with room keeps it.
        if let Some(lane) = lanes.iter().find(|lane| streams(lane) < STREAMS_PER_CLIENT) {
            return Ok(Lease(lane.clone()));
        }
        let lane = Arc::new(self.build()?);
        lanes.push(lane.clone());
        Ok(Lease(lane))
    }

    /// How many clients there are (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lanes.lock().expect("lanes").len()
    }
}

/// One wire format spoken over HTTP with streamed answers: what a provider file adds to [`Remote`].
pub trait Wire: fmt::Debug + Send + Sync + 'static {
    /// The provider's name (`openai`, `anthropic`).
    const NAME: &'static str;
    /// Where a completion is posted, below the endpoint's base URL.
    const PATH: &'static str;
    /// Where the API answers.
    fn endpoint(&self) -> &Endpoint;
    /// Adds the headers, the key and the body of one completion to its request.
    fn prepare(&self, builder: RequestBuilder, request: &ChatRequest) -> Result<RequestBuilder, LlmError>;
    /// A decoder for one streamed answer.
    fn decoder() -> impl SseDecoder;
}

/// A [`Provider`] speaking the wire format of its configuration `W`.
pub struct Remote<W> {
    config: W,
    clients: Clients,
    /// What the server showed of its model: shared with the streams that read calls from the text.
    habits: Arc<Habits>,
}

impl<W: fmt::Debug> fmt::Debug for Remote<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The config's Debug redacts the key; the clients are left out as noise.
        f.debug_struct("Remote").field("config", &self.config).finish_non_exhaustive()
    }
}

impl<W: Wire> Remote<W> {
    /// Creates the provider and its first HTTP client.
    pub fn new(config: W) -> Result<Self, LlmError> {
        let endpoint = config.endpoint();
        let clients = Clients::new(&endpoint.timeouts, endpoint.ca_file.as_deref())?;
        Ok(Self { config, clients, habits: Arc::default() })
    }

    /// With the model's tool calls read from its text from the first answer on (the provider's
    /// `tool_calls_in_text` setting), not only once it was seen writing them.
    pub fn calls_in_text(mut self, on: bool) -> Self {
        self.habits = Arc::new(Habits::new(on));
        self
    }

    /// The configuration in use.
    pub fn config(&self) -> &W {
        &self.config
    }
}

#[async_trait::async_trait]
impl<W: Wire> Provider for Remote<W> {
    fn name(&self) -> &str {
        W::NAME
    }

    fn model(&self) -> &str {
        &self.config.endpoint().model
    }

    fn names_threads(&self) -> bool {
        true
    }

    fn habits(&self) -> Option<&Habits> {
        Some(&self.habits)
    }

    fn can_force_tool(&self) -> bool {
        !self.habits.tools_refused() && !self.habits.choice_refused()
    }

    /// A request with tools that the server refuses for them marks the model (later requests go without, see
    /// [`Habits::tools_refused`]); one refused for naming the tool to call is sent again without naming it. The
    /// answer of a request with tools is read for calls written in its text.
    async fn stream(&self, mut request: ChatRequest) -> Result<EventStream, LlmError> {
        let endpoint = self.config.endpoint();
        let url = join_url(&endpoint.base_url, W::PATH);
        tracing::debug!(provider = W::NAME, model = %endpoint.model, %url, "starting completion");
        let lease = self.clients.lease()?;
        let post = |request: &ChatRequest| {
            let builder = lease.client().post(&url).header(ACCEPT, "text/event-stream");
            self.config.prepare(builder, request)
        };
        let response = match send(post(&request)?, &endpoint.timeouts).await {
            Err(LlmError::ToolsUnsupported) if request.tool_choice.is_some() => {
                self.habits.refuse_choice();
                request.tool_choice = None;
                send(post(&request)?, &endpoint.timeouts).await
            }
            other => other,
        };
        let response = match response {
            Ok(response) => response,
            Err(LlmError::ToolsUnsupported) if !request.tools.is_empty() => {
                self.habits.refuse_tools();
                return Err(LlmError::ToolsUnsupported);
            }
            // Said of a request without tools, it says something else went wrong.
            Err(LlmError::ToolsUnsupported) => return Err(LlmError::Upstream { status: 400 }),
            Err(e) => return Err(e),
        };
        let stream = decode_stream(lease, response, W::decoder(), endpoint.timeouts.idle);
        if request.tools.is_empty() {
            return Ok(stream);
        }
        let forms = text_calls::Forms {
            tools: request.tools.iter().map(|tool| tool.name.clone()).collect(),
            fenced_json: self.habits.calls_in_text(),
            documents: None,
            habits: Some(self.habits.clone()),
        };
        Ok(text_calls::read(stream, forms))
    }
}

/// Joins a URL base and a path without doubling or dropping the slash between them.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// Sends `request`, waiting at most `timeouts.first_byte` for the response head, and maps any
/// non-success status to an error.
pub(crate) async fn send(request: RequestBuilder, timeouts: &HttpTimeouts) -> Result<Response, LlmError> {
    let response = match tokio::time::timeout(timeouts.first_byte, request.send()).await {
        Err(_) => return Err(LlmError::Timeout),
        Ok(Err(e)) if e.is_timeout() => return Err(LlmError::Timeout),
        Ok(Err(e)) => return Err(LlmError::Network(describe(&e))),
        Ok(Ok(response)) => response,
    };
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(error_from_response(response, timeouts).await)
    }
}

/// Maps a non-success response to an error. The body is read (bounded) to recognise
/// "overloaded" answers and to log what the provider said.
async fn error_from_response(response: Response, timeouts: &HttpTimeouts) -> LlmError {
    let status = response.status();
    let retry_after = retry_after(response.headers());
    let body = read_error_body(response, timeouts.idle).await;
    tracing::warn!(
        status = status.as_u16(),
        body = %truncate(&body, MAX_LOGGED_BODY_CHARS),
        "model provider answered with an error status"
    );
    classify_status(status, retry_after, &body)
}

/// The status-to-error table shared by every provider.
pub(crate) fn classify_status(status: StatusCode, retry_after: Option<Duration>, body: &str) -> LlmError {
    match status.as_u16() {
        429 => LlmError::RateLimited { retry_after },
        401 | 403 => LlmError::Unauthorized,
        // Anthropic's documented "overloaded" status.
        529 => LlmError::Overloaded,
        code if body_says_overloaded(body) => {
            tracing::debug!(code, "error body reports overload");
            LlmError::Overloaded
        }
        code if body_refuses_tools(body) => {
            tracing::debug!(code, "error body says the model takes no tools");
            LlmError::ToolsUnsupported
        }
        code => LlmError::Upstream { status: code },
    }
}

/// Whether a JSON error body (either provider's shape) describes an overload.
fn body_says_overloaded(body: &str) -> bool {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(body) else {
        return false;
    };
    let error = json.get("error").unwrap_or(&json);
    ["type", "code", "message"].iter().any(|field| {
        error.get(field).and_then(|v| v.as_str()).is_some_and(|s| s.to_ascii_lowercase().contains("overloaded"))
    })
}

/// Whether an error body says the request's tools are not supported: Ollama's "does not support tools", llama.cpp's
/// server started without `--jinja`, vLLM started without `--enable-auto-tool-choice`, and the like. The body is
/// the provider's, so only its error message (or the whole text, when it is not JSON) is looked at.
fn body_refuses_tools(body: &str) -> bool {
    let message = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(json) => {
            let error = json.get("error").unwrap_or(&json);
            match error {
                serde_json::Value::String(text) => text.clone(),
                other => ["message", "detail", "msg"]
                    .iter()
                    .find_map(|field| other.get(field).and_then(|v| v.as_str()).map(str::to_string))
                    .unwrap_or_default(),
            }
        }
        Err(_) => body.chars().take(2048).collect(),
    }
    .to_ascii_lowercase();
    message.contains("tool")
        && ["not support", "unsupported", "--jinja", "enable-auto-tool-choice", "no tool", "does not have tool"]
            .iter()
            .any(|needle| message.contains(needle))
}

/// Reads `retry-after-ms` or `retry-after` (delta-seconds, possibly fractional). The HTTP-date
/// form is not used by model providers and is ignored.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

async fn read_error_body(mut response: Response, idle: Duration) -> String {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    String::from_utf8_lossy(&body).into_owned()
}

fn truncate(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Renders a reqwest error with its causes (reqwest's own message is often just "error sending
/// request"). URLs never carry credentials here (keys travel in headers), so they may stay.
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// What a decoder says after handling an SSE event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More events are expected.
    Continue,
    /// The provider signalled the end of the completion; the rest of the body is not read.
    Done,
}

/// Turns one provider's SSE events into neutral stream events.
pub trait SseDecoder: Send + 'static {
    /// Handles one event, pushing what it produced to `out`. An error ends the stream, after the events already pushed.
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<Progress, LlmError>;

    /// The body ended before the decoder reported [`Progress::Done`]. Returns the error to end the
    /// stream with, or pushes final events if the provider's protocol allows ending here.
    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError>;
}

/// State of one streamed body being decoded.
struct Driver<D> {
    /// The client's room for this stream, held until the body is dropped.
    _lease: Lease,
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    parser: SseParser,
    decoder: D,
    idle: Duration,
    /// Fires when the body has been quiet for `idle`; one timer for the stream's life, pushed back before each
    /// read (a timer made per chunk costs a registration in the runtime's timer wheel per delta).
    stall: std::pin::Pin<Box<tokio::time::Sleep>>,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    finished: bool,
}

/// Decodes the SSE body of `response` with `decoder` until [`Progress::Done`] or the first error, always reported: a
/// body that stalls for `idle`, breaks off or ends early never looks like a complete answer.
pub(crate) fn decode_stream<D: SseDecoder>(
    lease: Lease,
    response: Response,
    decoder: D,
    idle: Duration,
) -> EventStream {
    let driver = Driver {
        _lease: lease,
        body: response.bytes_stream().boxed(),
        parser: SseParser::new(),
        decoder,
        idle,
        stall: Box::pin(tokio::time::sleep(idle)),
        queue: VecDeque::new(),
        finished: false,
    };
    Box::pin(futures::stream::unfold(driver, |mut driver| async move {
        loop {
            if let Some(item) = driver.queue.pop_front() {
                return Some((item, driver));
            }
            if driver.finished {
                return None;
            }
            driver.pump().await;
        }
    }))
}

impl<D: SseDecoder> Driver<D> {
    /// Reads one chunk of the body and queues whatever it produces.
    async fn pump(&mut self) {
        let mut out = Vec::new();
        // Pushing a timer's deadline later does not touch the wheel; only a timer that fires does.
        self.stall.as_mut().reset(tokio::time::Instant::now() + self.idle);
        let next = tokio::select! {
            biased;
            item = self.body.next() => Ok(item),
            () = self.stall.as_mut() => Err(()),
        };
        let outcome = match next {
            Err(()) => {
                tracing::warn!(idle = ?self.idle, "model stream stalled");
                Err(LlmError::Timeout)
            }
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %describe(&e), "model stream broke off");
                Err(LlmError::Network(describe(&e)))
            }
            Ok(None) => {
                if self.parser.finish() {
                    tracing::debug!("body ended inside an unterminated event");
                }
                self.decoder.on_eof(&mut out).map(|()| Progress::Done)
            }
            Ok(Some(Ok(chunk))) => feed(&mut self.parser, &mut self.decoder, &chunk, &mut out),
        };
        self.queue.extend(out.into_iter().map(Ok));
        match outcome {
            Ok(Progress::Continue) => {}
            Ok(Progress::Done) => self.finish(),
            Err(error) => {
                self.queue.push_back(Err(error));
                self.finish();
            }
        }
    }

    /// Stops reading and releases the connection.
    fn finish(&mut self) {
        self.finished = true;
        self.body = futures::stream::empty().boxed();
    }
}

/// Parses one chunk of a body and hands the events it completes to `decoder`.
fn feed<D: SseDecoder>(
    parser: &mut SseParser,
    decoder: &mut D,
    chunk: &[u8],
    out: &mut Vec<StreamEvent>,
) -> Result<Progress, LlmError> {
    let events = parser.feed(chunk).map_err(|e| LlmError::Protocol(e.to_string()))?;
    for event in events {
        if decoder.on_event(event, out)? == Progress::Done {
            return Ok(Progress::Done);
        }
    }
    Ok(Progress::Continue)
}

/// Decodes a whole body, given as the chunks it arrived in, exactly as [`decode_stream`] does (without the
/// network and its timeouts): the neutral events, then the error that ended the stream, if any.
pub(crate) fn decode_chunks<D: SseDecoder>(mut decoder: D, chunks: &[&[u8]]) -> Vec<Result<StreamEvent, LlmError>> {
    let mut parser = SseParser::new();
    let mut out = Vec::new();
    let mut outcome = Ok(Progress::Continue);
    for chunk in chunks {
        outcome = feed(&mut parser, &mut decoder, chunk, &mut out);
        if !matches!(outcome, Ok(Progress::Continue)) {
            break;
        }
    }
    if matches!(outcome, Ok(Progress::Continue)) {
        parser.finish();
        outcome = decoder.on_eof(&mut out).map(|()| Progress::Done);
    }
    let mut items: Vec<Result<StreamEvent, LlmError>> = out.into_iter().map(Ok).collect();
    if let Err(error) = outcome {
        items.push(Err(error));
    }
    items
}

/// Parses the JSON payload of a data line; malformed JSON is a protocol error.
pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(data: &str) -> Result<T, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        tracing::warn!(error = %e, data = %truncate(data, MAX_LOGGED_BODY_CHARS), "malformed stream data");
        LlmError::Protocol(format!("malformed JSON in stream: {e}"))
    })
}

/// Parses accumulated tool-call arguments. An empty string means "no arguments" (some servers
/// send nothing for argument-less functions).
pub(crate) fn parse_arguments(tool: &str, raw: &str) -> Result<serde_json::Value, LlmError> {
    if raw.trim().is_empty() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    serde_json::from_str(raw)
        .map_err(|e| LlmError::Protocol(format!("arguments of tool call `{tool}` are not valid JSON: {e}")))
}

/// What is wrong with arguments that are not a JSON object, in words a model can act on.
pub(crate) fn arguments_problem(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Object(_)) => "the arguments could not be read".into(),
        Ok(_) => "the arguments must be a JSON object".into(),
        Err(e) if e.is_eof() => "the arguments end before their JSON is complete (cut off)".into(),
        Err(e) => format!("the arguments are not valid JSON ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn servers_refusing_tools_are_recognised_by_their_words() {
        let refused = [
            r#"{"error":"registry.ollama.ai/library/gemma2:2b does not support tools"}"#,
            r#"{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}"#,
            r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}"#,
            "This model does not support tool use",
        ];
        for body in refused {
            assert!(body_refuses_tools(body), "{body}");
            assert!(matches!(classify_status(StatusCode::BAD_REQUEST, None, body), LlmError::ToolsUnsupported));
        }
        for body in [r#"{"error":{"message":"context length exceeded"}}"#, r#"{"error":"tool output too long"}"#, ""] {
            assert!(!body_refuses_tools(body), "{body}");
        }
        // Rate limits and bad keys stay what they are whatever the body says.
        let body = refused[0];
        assert!(matches!(classify_status(StatusCode::TOO_MANY_REQUESTS, None, body), LlmError::RateLimited { .. }));
    }

    #[test]
    fn streams_spread_over_clients_and_give_their_room_back() {
        let clients = Clients::new(&HttpTimeouts::default(), None).unwrap();
        let mut leases: Vec<Lease> = (0..STREAMS_PER_CLIENT).map(|_| clients.lease().unwrap()).collect();
        assert_eq!(clients.len(), 1);
        leases.push(clients.lease().unwrap());
        assert_eq!(clients.len(), 2, "a full client takes no more streams");
        // A stream that ends frees its room: the next one goes to the first client again.
        drop(leases.swap_remove(7));
        let next = clients.lease().unwrap();
        assert!(Arc::ptr_eq(&next.0, &leases[0].0));
        assert_eq!(clients.len(), 2);
        // Everything ended: all of the first client's room is back, and nothing was left counted.
        drop(next);
        drop(leases);
        let lanes = clients.lanes.lock().unwrap();
        assert!(lanes.iter().all(|lane| streams(lane) == 0));
    }

    #[test]
    fn status_table() {
        let s = |code| StatusCode::from_u16(code).unwrap();
        assert!(matches!(
            classify_status(s(429), Some(Duration::from_secs(2)), ""),
            LlmError::RateLimited { retry_after: Some(d) } if d == Duration::from_secs(2)
        ));
        assert!(matches!(classify_status(s(401), None, ""), LlmError::Unauthorized));
        assert!(matches!(classify_status(s(403), None, ""), LlmError::Unauthorized));
        assert!(matches!(classify_status(s(529), None, ""), LlmError::Overloaded));
        assert!(matches!(
            classify_status(
                s(503),
                None,
                r#"{"error":{"message":"The engine is currently overloaded","type":"server_error"}}"#
            ),
            LlmError::Overloaded
        ));
        assert!(matches!(
            classify_status(s(500), None, r#"{"type":"error","error":{"type":"api_error"}}"#),
            LlmError::Upstream { status: 500 }
        ));
        assert!(matches!(classify_status(s(400), None, "not json"), LlmError::Upstream { status: 400 }));
    }

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
        headers.insert("retry-after", HeaderValue::from_static("0.5"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(500)));
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn url_joining() {
        assert_eq!(join_url("http://x/v1/", "/chat"), "http://x/v1/chat");
        assert_eq!(join_url("http://x/v1", "chat"), "http://x/v1/chat");
    }

    #[test]
    fn empty_arguments_are_an_empty_object() {
        assert_eq!(parse_arguments("t", " ").unwrap(), serde_json::json!({}));
        assert!(matches!(parse_arguments("t", "{\"a\":"), Err(LlmError::Protocol(_))));
    }
}
