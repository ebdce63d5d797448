//! `GET`/`PATCH /api/settings`: what a person sets for themselves (display name, custom instructions, theme).
//! The password, sessions and account removal are under `/api/auth` (see [`super::auth`]).

use axum::{extract::State, routing::get, Router};
use wire::{Settings, UpdateSettings};

use super::error::Result;
use super::extract::{AuthUser, Json};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/settings", get(settings).patch(update_settings))
}

/// `GET /api/settings`.
#[utoipa::path(get, path = "/api/settings", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = Settings), (status = 401, body = wire::ErrorBody)))]
pub async fn settings(State(state): State<AppState>, user: AuthUser) -> Result<Json<Settings>> {
    Ok(Json(state.store.settings(user.id).await?))
}

/// `PATCH /api/settings`: changes the fields given; answers with the settings as saved.
#[utoipa::path(patch, path = "/api/settings", tag = "auth", security(("session" = []), ("bearer" = [])),
    request_body = UpdateSettings,
    responses((status = 200, body = Settings), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody),
        (status = 422, body = wire::ErrorBody, description = "A blank or too long display name, instructions over the limit, or an unknown theme, model or MCP server")))]
pub async fn update_settings(
    State(state): State<AppState>,
    user: AuthUser,
    Json(change): Json<UpdateSettings>,
) -> Result<Json<Settings>> {
    let mut change = change.checked()?;
    change.default_model = super::models::checked_choice(&state, "default_model", change.default_model).await?;
    change.mcp_servers = super::mcp_servers::checked_choice(&state, change.mcp_servers)?;
    Ok(Json(state.store.update_settings(user.id, &change).await?))
}
