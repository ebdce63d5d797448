//! `GET /api/stats`: how much the caller has talked, about what, and at what cost in tokens.

use app::api::HistoryStats;
use axum::{extract::State, routing::get, Router};
use chrono::Utc;

use super::error::Result;
use super::extract::{AuthUser, Json};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/stats", get(stats))
}

#[utoipa::path(get, path = "/api/stats", tag = "history", security(("session" = []), ("bearer" = [])), 
    responses((status = 200, body = app::api::HistoryStats), (status = 401, body = app::api::ErrorBody)))]
pub async fn stats(State(state): State<AppState>, user: AuthUser) -> Result<Json<HistoryStats>> {
    // Days are UTC days, as the usage ledger records them.
    Ok(Json(state.store.history_stats(user.id, Utc::now().date_naive()).await?))
}
