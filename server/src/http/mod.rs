//! The HTTP API: each module owns its routes; `api_router` merges them.

pub mod admin;
pub mod artifacts;
pub mod assets;
pub mod attachments;
pub mod auth;
pub mod chat;
pub mod csrf;
pub mod error;
pub mod export;
pub mod extract;
pub mod headers;
pub mod messages;
pub mod models;
pub mod openapi;
pub mod rate_limit;
pub mod search;
pub mod settings;
pub mod shares;
pub mod stats;
pub mod streams;
pub mod threads;

use app::api::Health;
use axum::{routing::get, Router};

use crate::{config::Config, AppState};
use error::ApiError;

/// Compresses answers worth it (over 1 KiB) as the client accepts: API answers and pages. Never an event
/// stream (each event must leave at once), never what is compressed already: images, PDF and Word files, and
/// the static files, which carry their own precompressed encoding.
pub fn compression() -> tower_http::compression::CompressionLayer<impl tower_http::compression::Predicate> {
    use tower_http::compression::predicate::{NotForContentType, Predicate, SizeAbove};
    let predicate = SizeAbove::new(1024)
        .and(NotForContentType::GRPC)
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(NotForContentType::const_new("application/pdf"))
        .and(NotForContentType::const_new("application/vnd.openxmlformats"))
        .and(NotForContentType::const_new("application/zip"));
    // Answers are compressed as they stream, on the task serving them: quality 4 keeps that at well over 50 MB/s
    // (the encoders' default, brotli's 11, runs at a few MB/s and would hold a worker for seconds on a large
    // export). Static files get the best compression once, at build time.
    tower_http::compression::CompressionLayer::new()
        .quality(tower_http::CompressionLevel::Precise(4))
        .compress_when(predicate)
}

/// Largest accepted request body (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Largest accepted upload (10 MiB), for upload routes, which lift the body limit to this on their own route.
pub const MAX_UPLOAD_BYTES: usize = 10 * 1024 * 1024;

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
        .merge(admin::router())
        .merge(threads::router())
        .merge(chat::router())
        .merge(messages::router())
        .merge(search::router())
        .merge(stats::router())
        .merge(settings::router())
        .merge(models::router())
        .merge(shares::router())
        .merge(export::router())
        .merge(artifacts::router())
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
    (status = 503, description = "The database cannot be reached or lacks migrations", body = app::api::ErrorBody),
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
