//! Per-message views: what the model saw for an answer.

use axum::{extract::State, routing::get, Router};
use uuid::Uuid;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use crate::chat::context::ContextRecord;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/messages/{id}/context", get(context))
}

/// `GET /api/messages/{id}/context`: the owner's answer's context record; 404 for anyone else, and for
/// messages that have none (the person's own messages).
#[utoipa::path(get, path = "/api/messages/{id}/context", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Answer id")),
    responses((status = 200, body = ContextRecord), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody),
        (status = 404, body = app::api::ErrorBody)))]
pub async fn context(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ContextRecord>> {
    let value = state.store.message_context(user.id, id).await?.ok_or(ApiError::NotFound)?;
    let record = serde_json::from_value(value).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Json(record))
}
