//! `GET /api/threads/{id}/changes`: a conversation's document changes, live, for everyone watching it (every
//! device of its owner, on any instance). What a watcher gets is [`crate::chat::changes`]'s.

use axum::{extract::State, response::Response, routing::get, Router};
use uuid::Uuid;

use super::error::Result;
use super::extract::{AuthUser, Path};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/threads/{id}/changes", get(changes))
}

/// One change as it travels (the OpenAPI description of the `text/event-stream` answer).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // documentation only: the events are written by `chat::changes`
pub struct ThreadChangeEvent {
    /// The change's name.
    #[schema(pattern = "^(artifact_saved|artifact_deleted)$")]
    event: String,
    /// The change's fields as JSON: the `data` of the `ThreadChange` variant of that name.
    data: String,
}

/// `GET /api/threads/{id}/changes`: the conversation's document changes from now on, whoever makes them.
#[utoipa::path(get, path = "/api/threads/{id}/changes", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, content_type = "text/event-stream", body = ThreadChangeEvent,
            description = "Named SSE events (`event:` is the `ThreadChange` variant name, `data:` its fields): \
                `artifact_saved` with the document at its new version, `artifact_deleted` with its id; keep-alive \
                comments between them"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 429, body = wire::ErrorBody, description = "Too many streams open")))]
pub async fn changes(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<Response> {
    // Taken first: a stream refused here reads nothing.
    let place = state.streams.take(user.id)?;
    let (watcher, author) = state.chat.watch_changes(user.id, thread).await?;
    let member_of = (!author).then_some(thread);
    Ok(super::chat::event_stream_on(&state, &user, place, watcher, member_of))
}
