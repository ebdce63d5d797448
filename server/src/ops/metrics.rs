//! `GET /metrics` in the Prometheus (OpenMetrics) text format, served on its own address
//! (`QUIRE_METRICS_ADDR`) and nowhere else: requests by route and status, their latency, running turns, open
//! event streams, the model provider's time to first token, its errors and the tokens spent, and how busy the
//! database is.

use std::{
    fmt,
    sync::{atomic::Ordering, Arc},
    time::Instant,
};

use async_trait::async_trait;
use axum::{
    body::Body,
    extract::{MatchedPath, Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
    Router,
};
use futures::StreamExt;
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::{Metric, Registry, Unit},
};

use crate::{chat::memory::Source, AppState};
use llm::{forward_identity, ChatRequest, EventStream, LlmError, Provider, StreamEvent};

/// Writes waiting for SQLite's only writer, in this process (set by the store's write queue).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContextLabels {
    /// `memory` (kept from the conversation's last turn), `store` (read) or `stale` (kept, but changed since).
    source: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    provider: String,
    /// `start` (refused before the first event) or `stream` (broken off after it).
    stage: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    provider: String,
    model: String,
    /// `input` or `output`.
    direction: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct McpLabels {
    server: String,
    tool: String,
    /// `ok`, `error` (the tool said so), `failed` (no answer), `timeout` or `denied` (by the person).
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    /// `main` (every query but rate-limit checks) or `rate_limits`.
    pool: &'static str,
    /// `in_use` or `idle`.
    state: &'static str,
}

fn latency_histogram() -> Histogram {
    // 2.5 ms to about 10 s.
    Histogram::new(exponential_buckets(0.0025, 2.0, 13))
}

fn first_token_histogram() -> Histogram {
    // 10 ms to about 82 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

/// `metric`, registered under `name` with `help`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Durations in seconds, by the labels `L`.
type Timings<L> = Family<L, Histogram, fn() -> Histogram>;

/// A family of histograms in seconds, each with the buckets of `histogram`, registered under `name` with `help`.
fn timings<L: Clone + std::hash::Hash + Eq>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    histogram: fn() -> Histogram,
) -> Timings<L>
where
    Timings<L>: Metric + Clone,
{
    let family = Family::new_with_constructor(histogram);
    registry.register_with_unit(name, help, Unit::Seconds, family.clone());
    family
}

/// The measures of one Quire process.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Timings<RouteLabels>,
    open_streams: Gauge,
    running_turns: Gauge,
    first_token: Timings<ProviderLabels>,
    provider_errors: Family<ErrorLabels, Counter>,
    tokens: Family<TokenLabels, Counter>,
    sqlite_waiting: Gauge,
    pool: Family<PoolLabels, Gauge>,
    contexts: Family<ContextLabels, Counter>,
    mcp_calls: Timings<McpLabels>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every measure registered, all at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("quire");
        let r = &mut registry;
        let requests = registered(r, "http_requests", "HTTP requests answered, by route and status", Family::default());
        let latency = timings(r, "http_request_duration", "Time to the response's head, by route", latency_histogram);
        let open_streams = registered(r, "open_streams", "Event streams open to browsers", Gauge::default());
        let running_turns = registered(r, "running_turns", "Chat turns running in this process", Gauge::default());
        let first_token =
            timings(r, "provider_first_token", "Time from asking the model to its first event", first_token_histogram);
        let provider_errors = registered(r, "provider_errors", "Failed model calls, by stage", Family::default());
        let tokens = registered(r, "tokens", "Tokens the model read and wrote, as it reported them", Family::default());
        let sqlite_waiting =
            registered(r, "sqlite_writes_waiting", "Writes waiting for SQLite's writer", Gauge::default());
        let pool =
            registered(r, "db_connections", "PostgreSQL connections by pool, in use and idle", Family::default());
        let contexts = registered(r, "context_builds", "Turns' contexts, by where they came from", Family::default());
        let mcp_calls =
            timings(r, "mcp_tool_call_duration", "MCP tool calls, by server, tool and outcome", latency_histogram);
        Self {
            registry,
            requests,
            latency,
            open_streams,
            running_turns,
            first_token,
            provider_errors,
            tokens,
            sqlite_waiting,
            pool,
            contexts,
            mcp_calls,
        }
    }

    /// Counts one MCP tool call and its duration.
    pub fn mcp_call(&self, server: &str, tool: &str, outcome: &'static str, took: std::time::Duration) {
        let labels = McpLabels { server: server.to_string(), tool: tool.to_string(), outcome };
        self.mcp_calls.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// The text of a scrape, with the gauges read from the state first.
    pub fn render(&self, state: &AppState) -> String {
        self.running_turns.set(i64::try_from(state.chat.running_turns()).unwrap_or(i64::MAX));
        self.sqlite_waiting.set(store::sqlite::writes_waiting());
        for (name, pool) in state.store.pool_use() {
            self.pool
                .get_or_create(&PoolLabels { pool: name, state: "in_use" })
                .set(i64::from(pool.size - pool.idle.min(pool.size)));
            self.pool.get_or_create(&PoolLabels { pool: name, state: "idle" }).set(i64::from(pool.idle));
        }
        for source in Source::ALL {
            let counted = state.chat.contexts_from(source);
            self.contexts
                .get_or_create(&ContextLabels { source: source.as_str() })
                .inner()
                .store(counted, Ordering::Relaxed);
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// The router of the metrics address.
pub fn router(state: AppState) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(state)
}

async fn scrape(State(state): State<AppState>) -> Response {
    let text = state.metrics.render(&state);
    let mut response = (StatusCode::OK, text).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    response
}

/// The layer's function that counts each request by its route (the pattern, never the path a client chose, so
/// the number of series stays bounded) and status, and keeps count of open event streams.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("other", MatchedPath::as_str).to_string();
    let method = match request.method().as_str() {
        m @ ("GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS") => m,
        _ => "other",
    }
    .to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    let labels = RouteLabels { method, route };
    metrics.latency.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    let status = response.status().as_u16();
    metrics.requests.get_or_create(&RequestLabels { method: labels.method, route: labels.route, status }).inc();
    let is_stream =
        response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_stream {
        return response;
    }
    let open = OpenStream::new(&metrics.open_streams);
    let (parts, body) = response.into_parts();
    let body = Body::from_stream(body.into_data_stream().map(move |chunk| {
        let _open = &open;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// One open event stream, counted until its body is dropped.
struct OpenStream(Gauge);

impl OpenStream {
    fn new(gauge: &Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// A provider that measures the one it wraps: time to the first event, errors, tokens.
#[derive(Debug)]
pub struct Metered {
    inner: Arc<dyn Provider>,
    metrics: Arc<Metrics>,
}

impl Metered {
    /// Wraps `inner`, recording into `metrics`.
    pub fn new(inner: Arc<dyn Provider>, metrics: Arc<Metrics>) -> Self {
        Self { inner, metrics }
    }
}

#[async_trait]
impl Provider for Metered {
    forward_identity!(inner);

    async fn stream(&self, request: ChatRequest) -> Result<EventStream, LlmError> {
        let provider = self.inner.name().to_string();
        let started = Instant::now();
        let stream = match self.inner.stream(request).await {
            Ok(stream) => stream,
            Err(e) => {
                self.metrics.provider_errors.get_or_create(&ErrorLabels { provider, stage: "start" }).inc();
                return Err(e);
            }
        };
        let metrics = self.metrics.clone();
        let model = self.inner.model().to_string();
        let mut first = true;
        Ok(Box::pin(stream.inspect(move |item| {
            if item.is_ok() && std::mem::take(&mut first) {
                metrics
                    .first_token
                    .get_or_create(&ProviderLabels { provider: provider.clone() })
                    .observe(started.elapsed().as_secs_f64());
            }
            match item {
                Ok(StreamEvent::Usage(usage)) => {
                    for (direction, count) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
                        let labels = TokenLabels { provider: provider.clone(), model: model.clone(), direction };
                        metrics.tokens.get_or_create(&labels).inc_by(count);
                    }
                }
                Ok(_) => {}
                Err(_) => {
                    metrics
                        .provider_errors
                        .get_or_create(&ErrorLabels { provider: provider.clone(), stage: "stream" })
                        .inc();
                }
            }
        })))
    }
}
