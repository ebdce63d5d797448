//! `GET /api/models`: the models people may choose for a conversation or as their default.

use axum::{extract::State, routing::get, Router};
use wire::{ModelInfo, ModelList};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/models", get(list_models))
}

/// `GET /api/models`.
#[utoipa::path(get, path = "/api/models", tag = "threads", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = ModelList, description = "Provider by provider (a provider's own list is kept for 10 minutes), with the caller's default"),
        (status = 401, body = wire::ErrorBody)))]
pub async fn list_models(State(state): State<AppState>, user: AuthUser) -> Result<Json<ModelList>> {
    let registry = state.chat.models();
    let (offered, settings) = tokio::join!(registry.models(), state.store.settings(user.id));
    let models: Vec<ModelInfo> =
        offered.into_iter().map(|m| ModelInfo { id: m.id, provider: m.provider, model: m.model }).collect();
    let server_default = registry.default_model().to_string();
    let default = settings?
        .default_model
        .filter(|chosen| models.iter().any(|m| &m.id == chosen))
        .unwrap_or_else(|| server_default.clone());
    Ok(Json(ModelList { models, default, server_default }))
}

/// A model choice of a request: empty (back to the default) or a model on offer; 422 otherwise.
pub async fn checked_choice(state: &AppState, field: &str, id: Option<String>) -> Result<Option<String>> {
    match id {
        Some(id) if !id.is_empty() && !state.chat.models().knows(&id).await => {
            Err(ApiError::invalid(field, "That is not a model of this server (see GET /api/models)."))
        }
        other => Ok(other),
    }
}
