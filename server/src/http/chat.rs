//! The chat stream over HTTP: `POST .../chat` starts a turn and streams its events; `GET .../stream` re-attaches
//! (also from another instance, through the stored events); `POST .../stop` ends a running turn. Which events a
//! listener gets, and starting a turn at most once per idempotency key, is [`crate::chat::replay`]'s.

use std::{convert::Infallible, time::Duration};

use app::api::ChatRequest;
use axum::{
    extract::State,
    http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Response,
    },
    routing::{get, post},
    Router,
};
use futures::{Stream, StreamExt};
use uuid::Uuid;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{ChatTurns, Quota};
use super::streams::StreamPlace;
use crate::chat::replay::{self, TurnEvent};
use crate::AppState;

/// Interval of keep-alive comments on every stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/chat", post(chat))
        .route("/api/threads/{id}/stream", get(resume))
        .route("/api/threads/{id}/stop", post(stop))
        .route("/api/threads/{id}/messages/{message_id}/retry", post(retry))
}

/// A turn's events as an SSE response that no proxy buffers; each event's id is `<turn>:<n>`.
pub(super) fn sse_response(events: impl Stream<Item = TurnEvent> + Send + 'static) -> Response {
    let events = events
        .map(|e| Ok::<_, Infallible>(Event::default().id(format!("{}:{}", e.turn, e.seq)).event(e.name).data(e.data)));
    let mut response = Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store, no-transform"));
    headers.insert(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"));
    response
}

/// One event of a chat stream as it travels (the OpenAPI description of the `text/event-stream` answers).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // documentation only: the events are written by `sse_response`
pub struct ChatStreamEvent {
    /// `<turn id>:<n>`: send the last one received as `Last-Event-ID` to resume after it.
    id: String,
    /// The event's name.
    #[schema(pattern = "^(thread_name|text_delta|tool_executing|artifact_created|message_complete|error)$")]
    event: String,
    /// The event's fields as JSON: the `data` of the `ChatEvent` variant of that name.
    data: String,
}

/// `POST /api/threads/{id}/chat`: saves the message, starts the turn and streams its events.
#[utoipa::path(post, path = "/api/threads/{id}/chat", tag = "chat", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), request_body = ChatRequest,
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent,
            description = "Named SSE events (`event:` is the `ChatEvent` variant name, `data:` its fields), each with `id: <turn>:<n>`"),
        (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody),
        (status = 409, body = app::api::ErrorBody, description = "An answer is already being written"),
        (status = 422, body = app::api::ErrorBody), (status = 429, body = app::api::ErrorBody)))]
pub async fn chat(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<ChatTurns>,
    Path(thread): Path<Uuid>,
    headers: HeaderMap,
    Json(body): Json<ChatRequest>,
) -> Result<Response> {
    // Taken before the turn starts: a stream refused here starts nothing.
    let place = state.streams.take(user.id)?;
    let started = state.chat.start_once(user.id, thread, idempotency_key(&headers)?, body).await?;
    Ok(until_session_ends(&state, &user, place, sse_response(started.events(&state.chat, user.id, thread))))
}

/// `POST /api/threads/{id}/messages/{message_id}/retry`: runs the turn of the person's latest message again after
/// its answer failed, without storing the message again, and streams its events.
#[utoipa::path(post, path = "/api/threads/{id}/messages/{message_id}/retry", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"),
        ("message_id" = Uuid, Path, description = "The person's latest message, whose answer failed")),
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent,
            description = "The new turn's events, as for `POST .../chat`; a partial answer the failed turn kept is removed"),
        (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody),
        (status = 409, body = app::api::ErrorBody,
            description = "An answer is being written, or the message is not the latest, its answer did not fail or it made its document"),
        (status = 429, body = app::api::ErrorBody)))]
pub async fn retry(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<ChatTurns>,
    Path((thread, message)): Path<(Uuid, Uuid)>,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    let live = state.chat.retry(user.id, thread, message).await?;
    Ok(until_session_ends(&state, &user, place, sse_response(replay::live_events(&live, 0))))
}

/// The `Idempotency-Key` header, if any: 1 to 255 visible ASCII characters.
pub(super) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = value.to_str().ok().filter(|k| (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()));
    key.map(|k| Some(k.to_string())).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_idempotency_key",
            "The Idempotency-Key must be 1 to 255 visible ASCII characters.",
        )
    })
}

/// Parses `Last-Event-ID` (`<turn>:<seq>`).
fn last_event_id(headers: &HeaderMap) -> Option<(Uuid, i64)> {
    let value = headers.get("last-event-id")?.to_str().ok()?;
    let (turn, seq) = value.split_once(':')?;
    Some((Uuid::parse_str(turn).ok()?, seq.parse().ok()?))
}

/// `GET /api/threads/{id}/stream`: re-attaches to the running or last turn.
#[utoipa::path(get, path = "/api/threads/{id}/stream", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event (`<turn>:<n>`)")),
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent, description = "The turn's events"),
        (status = 204, description = "The conversation has no turn"), (status = 401, body = app::api::ErrorBody),
        (status = 404, body = app::api::ErrorBody), (status = 429, body = app::api::ErrorBody)))]
pub async fn resume(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
    headers: HeaderMap,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    state.store.get_thread(user.id, thread).await?;
    let Some(turn) = state.store.latest_turn(user.id, thread).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // Events after the client's last one if it is of this turn; the whole turn otherwise.
    let after = match last_event_id(&headers) {
        Some((id, seq)) if id == turn.id => seq,
        _ => 0,
    };
    let events = state.chat.turn_events(user.id, thread, turn.id, after);
    Ok(until_session_ends(&state, &user, place, sse_response(events)))
}

/// Ends an event stream when the session that opened it ends (signed out here or on another instance). The
/// stream holds its place among the person's open streams until it ends (given back before its last byte goes
/// out, so a client that saw it end may open another) or its client goes away.
pub(super) fn until_session_ends(
    state: &AppState,
    user: &AuthUser,
    place: StreamPlace,
    response: Response,
) -> Response {
    let ended = state.sessions.ended(user.jti, user.id);
    let mut place = Some(place);
    let give_back = futures::stream::poll_fn(move |_| {
        place.take();
        std::task::Poll::Ready(None::<Result<axum::body::Bytes, axum::Error>>)
    });
    response.map(|body| axum::body::Body::from_stream(body.into_data_stream().take_until(ended).chain(give_back)))
}

/// `POST /api/threads/{id}/stop`: stops the running turn; the partial answer is kept as `stopped`.
#[utoipa::path(post, path = "/api/threads/{id}/stop", tag = "chat", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 202, description = "Stop requested"), (status = 204, description = "Nothing was running"),
        (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody)))]
pub async fn stop(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<StatusCode> {
    let running = state.chat.stop(user.id, thread).await?;
    Ok(if running { StatusCode::ACCEPTED } else { StatusCode::NO_CONTENT })
}
