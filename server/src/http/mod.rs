//! The HTTP API: each module owns its routes; `api_router` merges them.

pub mod access;
pub mod admin;
pub mod approvals;
pub mod artifacts;
pub mod assets;
pub mod attachments;
pub mod auth;
pub mod changes;
pub mod chat;
pub mod connections;
pub mod csrf;
pub mod error;
pub mod export;
pub mod extract;
pub mod forms;
pub mod headers;
pub mod mcp;
pub mod mcp_servers;
pub mod messages;
pub mod models;
pub mod openapi;
pub mod pages;
pub mod projects;
pub mod rate_limit;
pub mod requirements;
pub mod search;
pub mod settings;
pub mod shares;
pub mod sso;
pub mod stats;
pub mod streams;
pub mod threads;
pub mod tokens;

use axum::{routing::get, Router};
use wire::Health;

use crate::{config::Config, AppState};
use error::ApiError;

/// Compresses answers over 1 KiB as the client accepts; never an event stream (each event must leave at once)
/// nor what is compressed already (images, PDF and Word files, the precompressed static files).
pub fn compression() -> tower_http::compression::CompressionLayer<impl tower_http::compression::Predicate> {
    use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
    let predicate = SizeAbove::new(1024)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(NotForContentType::const_new("application/pdf"))
        .and(NotForContentType::const_new("application/vnd.openxmlformats"))
        .and(NotForContentType::const_new("application/zip"));
    // Compressed as they stream, on the serving task: quality 4 runs at over 50 MB/s, where brotli's default 11
    // would hold a worker for seconds on a large export. Static files get the best compression at build time.
    tower_http::compression::CompressionLayer::new()
        .quality(tower_http::CompressionLevel::Precise(4))
        .compress_when(predicate)
}

/// [`compression`] around every answer but the chat event streams, which pass beside it: a wrapped event stream
/// holds about 5 KiB more while open (BENCHMARKS.md), and event streams are never compressed anyway.
#[derive(Clone, Copy)]
pub struct CompressAnswers;

type Request = axum::extract::Request;
type Response = axum::response::Response;
type Infallible = std::convert::Infallible;

impl<S> tower::Layer<S> for CompressAnswers
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Future: Send + 'static,
{
    type Service = AnswersCompressed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        let compressed = tower::ServiceBuilder::new()
            .map_response(|response: axum::http::Response<_>| response.map(axum::body::Body::new))
            .layer(compression())
            .service(inner.clone());
        AnswersCompressed { plain: inner, compressed: tower::util::BoxCloneSyncService::new(compressed) }
    }
}

/// See [`CompressAnswers`].
#[derive(Clone)]
pub struct AnswersCompressed<S> {
    plain: S,
    compressed: tower::util::BoxCloneSyncService<Request, Response, Infallible>,
}

/// Whether a request is answered with a chat event stream: a message, a resumed stream, a retry or a new answer
/// (`http/chat.rs`, `http/messages.rs`).
fn answered_with_events(request: &Request) -> bool {
    let path = request.uri().path();
    path.starts_with("/api/threads/")
        && ["/chat", "/stream", "/retry", "/regenerate"].iter().any(|end| path.ends_with(end))
}

impl<S> tower::Service<Request> for AnswersCompressed<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        // Each call takes a fresh clone of the service it goes to and waits for that one to be ready.
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        use tower::ServiceExt;
        if answered_with_events(&request) {
            Box::pin(self.plain.clone().oneshot(request))
        } else {
            Box::pin(self.compressed.clone().oneshot(request))
        }
    }
}

/// Largest accepted request body (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Routes with a body limit of their own, merged outside the global one (see `crate::app`).
pub fn large_body_router(config: &Config) -> Router<AppState> {
    attachments::upload_router().merge(export::import_router(config.max_import_bytes())).layer(headers::no_store())
}

/// Every `/api` route.
pub fn api_router() -> Router<AppState> {
    Router::new()
        .route("/api/health", get(health))
        .route("/api/ready", get(ready))
        .route("/api/openapi.json", get(openapi::document))
        .merge(auth::router())
        .merge(sso::router())
        .merge(tokens::router())
        .merge(admin::router())
        .merge(threads::router())
        .merge(chat::router())
        .merge(approvals::router())
        .merge(changes::router())
        .merge(messages::router())
        .merge(search::router())
        .merge(stats::router())
        .merge(settings::router())
        .merge(models::router())
        .merge(mcp_servers::router())
        .merge(shares::router())
        .merge(projects::router())
        .merge(export::router())
        .merge(artifacts::router())
        .merge(requirements::router())
        .merge(attachments::router())
        .route("/api/{*rest}", axum::routing::any(|| async { ApiError::NotFound }))
        .layer(headers::no_store())
}

/// `GET /api/health`.
#[utoipa::path(get, path = "/api/health", tag = "meta", responses((status = 200, body = Health)))]
pub async fn health() -> axum::Json<Health> {
    axum::Json(Health { status: "ok".into() })
}

/// `GET /api/ready`: whether this instance can serve, that is its database answers and carries every migration
/// this build knows. `/api/health` only says the process is up.
#[utoipa::path(get, path = "/api/ready", tag = "meta", responses(
    (status = 200, description = "Ready to serve", body = Health),
    (status = 503, description = "The database cannot be reached or lacks migrations", body = wire::ErrorBody),
))]
pub async fn ready(axum::extract::State(state): axum::extract::State<AppState>) -> error::Result<axum::Json<Health>> {
    match state.store.ready().await {
        Ok(true) => Ok(axum::Json(Health { status: "ready".into() })),
        Ok(false) => {
            tracing::warn!("not ready: the database lacks migrations this build knows");
            Err(ApiError::NotReady)
        }
        Err(e) => {
            tracing::warn!(error = %e, "not ready: the database does not answer");
            Err(ApiError::NotReady)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::answered_with_events;

    #[test]
    fn only_the_chat_event_streams_pass_beside_compression() {
        let request = |path: &str| axum::http::Request::builder().uri(path).body(axum::body::Body::empty()).unwrap();
        let id = "0193a5e4-0000-7000-8000-000000000000";
        for path in [
            format!("/api/threads/{id}/chat"),
            format!("/api/threads/{id}/stream"),
            format!("/api/threads/{id}/messages/{id}/retry"),
            format!("/api/threads/{id}/messages/{id}/regenerate"),
        ] {
            assert!(answered_with_events(&request(&path)), "{path}");
        }
        for path in [
            "/api/threads".to_string(),
            format!("/api/threads/{id}/messages"),
            format!("/api/threads/{id}/export"),
            "/api/search".to_string(),
            "/chat".to_string(),
            "/".to_string(),
        ] {
            assert!(!answered_with_events(&request(&path)), "{path}");
        }
    }
}
