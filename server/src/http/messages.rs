//! Messages: adding one without a turn, branches (another answer, which one is shown), what the model saw for
//! an answer and the steps a turn took (its trace). An edit and resend is a chat request (`ChatRequest::edit_of`).

use axum::{
    extract::State,
    http::{HeaderMap, StatusCode},
    response::Response,
    routing::{get, post},
    Router,
};
use uuid::Uuid;
use wire::{AddMessage, Message, SwitchBranch, ThreadDetail, Trace};

use super::chat::idempotency_key;
use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{ChatTurns, Quota};
use crate::chat::context::ContextRecord;
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/messages", post(add_message))
        .route("/api/threads/{id}/messages/{message_id}/regenerate", post(regenerate))
        .route("/api/threads/{id}/branch", post(switch_branch))
        .route("/api/messages/{id}/context", get(context))
        .route("/api/messages/{id}/trace", get(trace))
        .route("/api/turns/{id}/trace", get(turn_trace))
}

/// `POST /api/threads/{id}/messages`: adds a person's message without asking the model; checked as a chat
/// message is, and refused while an answer is being written.
#[utoipa::path(post, path = "/api/threads/{id}/messages", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")), request_body = AddMessage,
    responses((status = 201, body = Message), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "An answer is being written"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn add_message(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
    Json(body): Json<AddMessage>,
) -> Result<(StatusCode, Json<Message>)> {
    let saved = state.chat.add_message(user.id, thread, &body.content).await?;
    Ok((StatusCode::CREATED, Json(saved)))
}

/// `POST /api/threads/{id}/messages/{message_id}/regenerate`: another answer to the question the answer answered,
/// beside it (the old branch is kept), and streams its events; at most once per `Idempotency-Key`.
#[utoipa::path(post, path = "/api/threads/{id}/messages/{message_id}/regenerate", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("message_id" = Uuid, Path, description = "An answer"),
        ("Idempotency-Key" = Option<String>, Header, description = "Starts the turn at most once")),
    responses((status = 200, content_type = "text/event-stream", body = super::chat::ChatStreamEvent,
            description = "The new turn's events, as for `POST .../chat`"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody, description = "No such answer"),
        (status = 409, body = wire::ErrorBody, description = "An answer is being written"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn regenerate(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<ChatTurns>,
    Path((thread, answer)): Path<(Uuid, Uuid)>,
    headers: HeaderMap,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    let started = state.chat.regenerate_once(user.id, thread, idempotency_key(&headers)?, answer).await?;
    super::chat::started_stream(&state, &user, place, started, thread).await
}

/// `POST /api/threads/{id}/branch`: shows the branch through a message, down to its newest message (stored, so
/// every device shows the same), and answers with the conversation as shown now; refused while an answer is
/// being written.
#[utoipa::path(post, path = "/api/threads/{id}/branch", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")), request_body = SwitchBranch,
    responses((status = 200, body = ThreadDetail), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "No such conversation, or no such message in it"),
        (status = 409, body = wire::ErrorBody, description = "An answer is being written"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn switch_branch(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
    Json(body): Json<SwitchBranch>,
) -> Result<Json<ThreadDetail>> {
    state.chat.switch_branch(user.id, thread, body.message_id).await?;
    super::threads::get_thread(State(state), user, Path(thread)).await
}

/// `GET /api/messages/{id}/context`: the owner's answer's context record; 404 for anyone else, and for
/// messages that have none (the person's own messages).
#[utoipa::path(get, path = "/api/messages/{id}/context", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Answer id")),
    responses((status = 200, body = ContextRecord), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn context(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ContextRecord>> {
    let value = state.store.message_context(user.id, id).await?.ok_or(ApiError::NotFound)?;
    let record = serde_json::from_value(value).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(Json(record))
}

/// `GET /api/messages/{id}/trace`: the steps the turn that wrote the owner's answer took: each model call and
/// each tool call. 404 for anyone else's message, and for messages without one (the person's own, imported).
#[utoipa::path(get, path = "/api/messages/{id}/trace", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Answer id")),
    responses((status = 200, body = Trace), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn trace(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<Json<Trace>> {
    Ok(Json(state.store.trace(user.id, id).await?))
}

/// `GET /api/turns/{id}/trace`: a turn's steps by the turn's id (the `<turn>` of its events' ids, and the
/// reference an error gives): also for turns that kept no answer, a silent generation or a failure before any
/// words. 404 for anyone else's turn.
#[utoipa::path(get, path = "/api/turns/{id}/trace", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Turn id")),
    responses((status = 200, body = Trace), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn turn_trace(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<Json<Trace>> {
    Ok(Json(state.store.turn_trace(user.id, id).await?))
}
