//! The HTTP API: each module owns its routes; `api_router` merges them.

pub mod artifacts;
pub mod attachments;
pub mod chat;
pub mod error;
pub mod export;
pub mod extract;
pub mod messages;
pub mod search;
pub mod stats;
pub mod threads;

use app::api::Health;
use axum::{routing::get, Router};

use crate::AppState;
use error::ApiError;

/// Largest accepted request body (1 MiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Routes with a body limit of their own, merged outside the global one (see `crate::app`).
pub fn large_body_router() -> Router<AppState> {
    attachments::upload_router()
}

/// Every `/api` route.
pub fn api_router() -> Router<AppState> {
    Router::new()
        .route("/api/health", get(health))
        .merge(threads::router())
        .merge(chat::router())
        .merge(messages::router())
        .merge(search::router())
        .merge(stats::router())
        .merge(export::router())
        .merge(artifacts::router())
        .merge(attachments::router())
        .route("/api/{*rest}", axum::routing::any(|| async { ApiError::NotFound }))
}

async fn health() -> axum::Json<Health> {
    axum::Json(Health { status: "ok".into() })
}
