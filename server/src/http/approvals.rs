//! `POST /api/threads/{id}/approvals/{approval_id}`: a person approves or denies a call of an MCP tool that asks
//! first, while the turn that asked waits (see [`crate::chat::approval`]). The turn learns of it on whichever
//! instance it runs.

use axum::{extract::State, routing::post, Router};
use uuid::Uuid;
use wire::{DecideApproval, ToolApproval};

use super::error::Result;
use super::extract::{AuthUser, Json, Path};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/threads/{id}/approvals/{approval_id}", post(decide))
}

/// `POST /api/threads/{id}/approvals/{approval_id}`.
#[utoipa::path(post, path = "/api/threads/{id}/approvals/{approval_id}", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("approval_id" = Uuid, Path, description = "The question's id (`approval_requested`)")),
    request_body = DecideApproval,
    responses((status = 200, body = ToolApproval, description = "The question as decided: the call runs only when approved"),
        (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody, description = "The caller reads the conversation but does not write in it"),
        (status = 404, body = wire::ErrorBody, description = "No such question in a conversation the caller writes in"),
        (status = 409, body = wire::ErrorBody, description = "Decided already, expired, or its answer is over")))]
pub async fn decide(
    State(state): State<AppState>,
    user: AuthUser,
    Path((thread, id)): Path<(Uuid, Uuid)>,
    Json(body): Json<DecideApproval>,
) -> Result<Json<ToolApproval>> {
    Ok(Json(state.store.decide_approval(user.id, thread, id, body.approve).await?))
}
