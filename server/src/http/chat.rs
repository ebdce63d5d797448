//! The chat stream over HTTP: `POST .../chat` starts a turn and streams its events, `GET .../stream` re-attaches
//! (also from another instance), `POST .../stop` ends a turn. What a listener gets is [`crate::chat::replay`]'s.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    body::Body,
    extract::State,
    http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use bytes::Bytes;
use futures::Stream;
use uuid::Uuid;
use wire::ChatRequest;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{ChatTurns, Quota};
use super::streams::StreamPlace;
use crate::chat::replay::Started;
use crate::AppState;

/// Interval of keep-alive comments on every stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/chat", post(chat))
        .route("/api/threads/{id}/stream", get(resume))
        .route("/api/threads/{id}/stop", post(stop))
        .route("/api/threads/{id}/messages/{message_id}/retry", post(retry))
        .route("/api/artifacts/{id}/update", post(update_document))
}

/// The events of a turn the caller started in `thread`, as [`event_stream_on`]: as an editor of the
/// conversation's project (not its author), the stream also ends once they no longer reach it.
pub(super) async fn started_stream(
    state: &AppState,
    user: &AuthUser,
    place: StreamPlace,
    started: Started,
    thread: Uuid,
) -> Result<Response> {
    let member_of = match &started {
        Started::Live(live) => (live.user_id != user.id).then_some(live.thread_id),
        Started::Earlier(_) => member_of(state, user.id, thread).await?,
    };
    Ok(event_stream_on(state, user, place, started.events(&state.chat, user.id, thread), member_of))
}

/// A turn's SSE frames as an event stream no proxy buffers, kept alive every [`KEEP_ALIVE`]; it ends with its
/// session (or the API token it was opened with), and gives its `place` back as it ends (before its last byte, so
/// a client may open another at once). In a conversation the caller reads as a member of its project
/// (`member_of`), it also ends once they no longer reach it (see [`crate::auth::reach`]).
pub(super) fn event_stream_on(
    state: &AppState,
    user: &AuthUser,
    place: StreamPlace,
    frames: impl Stream<Item = Bytes> + Unpin + Send + 'static,
    member_of: Option<Uuid>,
) -> Response {
    let half = KEEP_ALIVE / 2;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + half, half);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let session = state.sessions.ended(user.credential(), user.id);
    let ended: Pin<Box<dyn Future<Output = ()> + Send>> = match member_of {
        Some(thread) => {
            let lost = state.reach.lost(user.id, thread);
            Box::pin(async move {
                tokio::select! {
                    () = session => {}
                    () = lost => {}
                }
            })
        }
        None => Box::pin(session),
    };
    let body = EventBody { frames, ended, tick, sent: false, place: Some(place) };
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store, no-transform"));
    headers.insert(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"));
    response
}

/// The body of [`event_stream_on`]. A keep-alive comment goes out at a tick of half the interval when nothing went
/// out since the tick before: no timer is touched as events go out.
struct EventBody<S> {
    frames: S,
    ended: Pin<Box<dyn Future<Output = ()> + Send>>,
    tick: tokio::time::Interval,
    sent: bool,
    /// Given back (dropped) when the stream ends.
    place: Option<StreamPlace>,
}

impl<S: Stream<Item = Bytes> + Unpin> Stream for EventBody<S> {
    type Item = std::result::Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.place.is_none() {
            return Poll::Ready(None);
        }
        if this.ended.as_mut().poll(cx).is_ready() {
            this.place = None;
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.frames).poll_next(cx) {
            Poll::Ready(Some(frame)) => {
                this.sent = true;
                return Poll::Ready(Some(Ok(frame)));
            }
            Poll::Ready(None) => {
                this.place = None;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        while this.tick.poll_tick(cx).is_ready() {
            if !std::mem::replace(&mut this.sent, false) {
                return Poll::Ready(Some(Ok(Bytes::from_static(b":\n\n"))));
            }
        }
        Poll::Pending
    }
}

/// One event of a chat stream as it travels (the OpenAPI description of the `text/event-stream` answers).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // documentation only: the events are written by `event_stream_on`
pub struct ChatStreamEvent {
    /// `<turn id>:<n>`: send the last one received as `Last-Event-ID` to resume after it.
    id: String,
    /// The event's name.
    #[schema(
        pattern = "^(thread_name|text_delta|reasoning_delta|tool_executing|artifact_created|approval_requested|approval_decided|message_complete|error)$"
    )]
    event: String,
    /// The event's fields as JSON: the `data` of the `ChatEvent` variant of that name.
    data: String,
}

/// `POST /api/threads/{id}/chat`: saves the message, starts the turn and streams its events.
#[utoipa::path(post, path = "/api/threads/{id}/chat", tag = "chat", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), request_body = ChatRequest,
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent,
            description = "Named SSE events (`event:` is the `ChatEvent` variant name, `data:` its fields), each with `id: <turn>:<n>`"),
        (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "An answer is already being written"),
        (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
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
    started_stream(&state, &user, place, started, thread).await
}

/// `POST /api/threads/{id}/messages/{message_id}/retry`: runs the turn of the person's latest message again after
/// its answer failed, without storing the message again, and streams its events.
#[utoipa::path(post, path = "/api/threads/{id}/messages/{message_id}/retry", tag = "chat", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"),
        ("message_id" = Uuid, Path, description = "The person's latest message, whose answer failed")),
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent,
            description = "The new turn's events, as for `POST .../chat`; a partial answer the failed turn kept is removed"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody,
            description = "An answer is being written, or the message is not the latest, its answer did not fail or it made its document"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn retry(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<ChatTurns>,
    Path((thread, message)): Path<(Uuid, Uuid)>,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    let live = state.chat.retry(user.id, thread, message).await?;
    started_stream(&state, &user, place, Started::Live(live), thread).await
}

/// `POST /api/artifacts/{id}/update`: "Update document": a silent turn that revises the document to the
/// requirements its current version reflects as they stand now (targeted edits of the affected parts), making
/// one new version that reflects them; streams its events as silent generation does.
#[utoipa::path(post, path = "/api/artifacts/{id}/update", tag = "artifacts", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Document id")),
    responses((status = 200, content_type = "text/event-stream", body = ChatStreamEvent,
            description = "The silent turn's events, as for `POST .../chat` with `artifact_generation`"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "The document is up to date, or an answer is being written"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn update_document(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<ChatTurns>,
    Path(artifact): Path<Uuid>,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    let live = state.chat.update_document(user.id, artifact).await?;
    let thread = live.thread_id;
    started_stream(&state, &user, place, Started::Live(live), thread).await
}

/// The `Idempotency-Key` header, if any: 1 to 255 visible ASCII characters.
pub(super) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = value.to_str().ok().filter(|k| (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()));
    let message = "The Idempotency-Key must be 1 to 255 visible ASCII characters.";
    key.map(|k| Some(k.to_string())).ok_or_else(|| ApiError::bad_request("invalid_idempotency_key", message))
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
        (status = 204, description = "The conversation has no turn"), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn resume(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
    headers: HeaderMap,
) -> Result<Response> {
    let place = state.streams.take(user.id)?;
    let member_of = member_of(&state, user.id, thread).await?;
    let Some(turn) = state.store.latest_turn(user.id, thread).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // Events after the client's last one if it is of this turn; the whole turn otherwise.
    let after = match last_event_id(&headers) {
        Some((id, seq)) if id == turn.id => seq,
        _ => 0,
    };
    let events = state.chat.turn_events(user.id, thread, turn.id, after);
    Ok(event_stream_on(&state, &user, place, events, member_of))
}

/// `Some(thread)` when the caller reads `thread` as a member of its project, `None` as its author; `NotFound` when
/// they do not reach it.
pub(super) async fn member_of(state: &AppState, user: Uuid, thread: Uuid) -> Result<Option<Uuid>> {
    match state.store.thread_reach(user, thread).await? {
        Some(store::projects::ThreadReach::Author) => Ok(None),
        Some(store::projects::ThreadReach::Member(_)) => Ok(Some(thread)),
        None => Err(ApiError::NotFound),
    }
}

/// `POST /api/threads/{id}/stop`: stops the running turn; the partial answer is kept as `stopped`.
#[utoipa::path(post, path = "/api/threads/{id}/stop", tag = "chat", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 202, description = "Stop requested"), (status = 204, description = "Nothing was running"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn stop(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<StatusCode> {
    let running = state.chat.stop(user.id, thread).await?;
    Ok(if running { StatusCode::ACCEPTED } else { StatusCode::NO_CONTENT })
}
