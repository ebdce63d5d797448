//! A conversation's requirements ledger: read it with coverage, change or drop a requirement by hand.

use axum::{extract::State, routing::get, Router};
use uuid::Uuid;
use wire::{requirement_number, Ledger, Requirement, RequirementStatus, UpdateRequirement, VersionAuthor};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use crate::AppState;
use store::LedgerWrite;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/requirements", get(ledger))
        .route("/api/threads/{id}/requirements/{key}", axum::routing::patch(update))
}

/// `GET /api/threads/{id}/requirements`: the ledger of the path shown, each requirement with its history and
/// the documents whose current version covers it; the keys in force that nothing covers.
#[utoipa::path(get, path = "/api/threads/{id}/requirements", tag = "requirements", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = wire::Ledger), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn ledger(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<Json<Ledger>> {
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    Ok(Json(view.ledger()))
}

/// `PATCH /api/threads/{id}/requirements/{key}`: a person's change of a requirement (`text`) or of its status
/// (`dropped`, or `active` to bring a dropped one back), recorded as theirs; the requirement as it stands after.
#[utoipa::path(patch, path = "/api/threads/{id}/requirements/{key}", tag = "requirements", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("key" = String, Path, description = "The requirement's key, R-1...")),
    request_body = UpdateRequirement,
    responses((status = 200, body = wire::Requirement), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "No such conversation, or no such requirement on the path shown"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    Path((thread, key)): Path<(Uuid, String)>,
    Json(body): Json<UpdateRequirement>,
) -> Result<Json<Requirement>> {
    if body.text.is_none() && body.status.is_none() {
        return Err(ApiError::unprocessable("invalid", "Give a new text or a status.", None));
    }
    if body.status == Some(RequirementStatus::Changed) {
        return Err(ApiError::unprocessable(
            "invalid",
            "A status is `active` or `dropped`; a new text makes a requirement changed.",
            Some("status"),
        ));
    }
    let text = match &body.text {
        Some(text) => {
            let text = wire::validate::requirement(text)?;
            Some(if state.config.redact_pii { crate::privacy::redact(&text) } else { text })
        }
        None => None,
    };
    let number = requirement_number(&key).ok_or(ApiError::NotFound)?;
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    let standing = view.by_number(number).ok_or(ApiError::NotFound)?;
    let now = &standing.requirement;
    let text = text.unwrap_or_else(|| now.text.clone());
    let first = now.history.first().map_or(now.text.as_str(), |h| h.text.as_str());
    let status = match body.status {
        Some(RequirementStatus::Dropped) => RequirementStatus::Dropped,
        Some(_) => {
            if text == first {
                RequirementStatus::Active
            } else {
                RequirementStatus::Changed
            }
        }
        None if now.status == RequirementStatus::Dropped => RequirementStatus::Dropped,
        None if text == first => now.status,
        None => RequirementStatus::Changed,
    };
    if text == now.text && status == now.status {
        return Ok(Json(now.clone()));
    }
    let write = LedgerWrite::Revise { number, text, kind: now.kind, status, message_id: None };
    state.store.record_requirements(user.id, thread, vec![write], VersionAuthor::Person { user_id: user.id }).await?;
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    let standing = view.by_number(number).ok_or(ApiError::NotFound)?;
    Ok(Json(standing.requirement.clone()))
}
