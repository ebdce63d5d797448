//! `/api/tokens`: a person's API tokens, made, listed and revoked from a signed-in session (a token cannot make
//! or revoke tokens). What a token may do once made is judged where every request is signed in
//! ([`AuthUser`], with [`api_token::permits`](crate::auth::api_token::permits)).

use axum::{extract::State, http::StatusCode, routing::delete, Router};
use uuid::Uuid;
use wire::{ApiTokenInfo, ApiTokenList, CreateTokenRequest, CreatedToken, MAX_LIVE_TOKENS, MAX_TOKEN_DAYS};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use crate::auth::api_token;
use crate::AppState;
use store::{ApiToken, NewApiToken};

pub fn router() -> Router<AppState> {
    Router::new().route("/api/tokens", axum::routing::get(list).post(create)).route("/api/tokens/{id}", delete(revoke))
}

/// A token as the API shows it.
pub(super) fn token_info(token: ApiToken) -> ApiTokenInfo {
    ApiTokenInfo {
        id: token.id,
        name: token.name,
        scope: token.scope,
        prefix: token.prefix,
        created_at: token.created_at,
        expires_at: token.expires_at,
        last_used_at: token.last_used_at,
    }
}

/// `POST /api/tokens`: a new API token of the signed-in person; its secret is in this answer only.
#[utoipa::path(post, path = "/api/tokens", tag = "auth", security(("session" = []), ("bearer" = [])),
    request_body = CreateTokenRequest,
    responses((status = 201, body = CreatedToken, description = "The token, with its secret (`token`) shown this once"),
        (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "Made with an API token (`token_scope`)"),
        (status = 409, body = wire::ErrorBody, description = "The person has as many live tokens as they may (50)"),
        (status = 422, body = wire::ErrorBody,
            description = "The name is empty or too long (`name`), or the expiry out of range (`expires_in_days`)")))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateTokenRequest>,
) -> Result<(StatusCode, Json<CreatedToken>)> {
    // Also refused where the token's scope is judged: a token never makes tokens, whatever its scope.
    user.session()?;
    let name = wire::validate::token_name(&body.name)?;
    if !(1..=MAX_TOKEN_DAYS).contains(&body.expires_in_days) {
        let message = format!("A token lasts 1 to {MAX_TOKEN_DAYS} days.");
        return Err(ApiError::invalid("expires_in_days", message));
    }
    let issued = api_token::issue();
    let new = NewApiToken {
        user: user.id,
        name,
        scope: body.scope,
        hash: issued.hash,
        prefix: issued.prefix,
        lifetime: chrono::Duration::days(i64::from(body.expires_in_days)),
    };
    let token = state.store.create_api_token(new, MAX_LIVE_TOKENS).await?;
    tracing::info!(user = %user.id, token = %token.id, scope = token.scope.as_str(), "API token made");
    let created = CreatedToken { info: token_info(token), token: issued.secret.expose().to_owned() };
    Ok((StatusCode::CREATED, Json(created)))
}

/// `GET /api/tokens`: the signed-in person's tokens that are neither revoked nor expired, the newest first (never
/// their secrets).
#[utoipa::path(get, path = "/api/tokens", tag = "auth", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = ApiTokenList), (status = 401, body = wire::ErrorBody)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<Json<ApiTokenList>> {
    let tokens = state.store.api_tokens(user.id).await?.into_iter().map(token_info).collect();
    Ok(Json(ApiTokenList { tokens }))
}

/// `DELETE /api/tokens/{id}`: revokes one of the signed-in person's tokens; it is refused from now on, and the
/// event streams opened with it end, on every instance.
#[utoipa::path(delete, path = "/api/tokens/{id}", tag = "auth", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "A token's `id`")),
    responses((status = 204, description = "Revoked"), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "Made with an API token (`token_scope`)"),
        (status = 404, body = wire::ErrorBody,
            description = "The person has no token with this id that is neither revoked nor expired")))]
pub async fn revoke(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    user.session()?;
    state.store.revoke_api_token(user.id, id).await?;
    state.sessions.end(&[id]);
    tracing::info!(user = %user.id, token = %id, "API token revoked");
    Ok(StatusCode::NO_CONTENT)
}
