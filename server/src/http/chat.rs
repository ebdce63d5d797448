//! The chat stream: `POST .../chat` starts a turn and streams its events; `GET .../stream` re-attaches (also from
//! another instance, through the stored events); `POST .../stop` ends a running turn.

use std::{convert::Infallible, time::Duration};

use app::api::{ChatEvent, ChatRequest};
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
use futures::{stream, Stream, StreamExt};
use uuid::Uuid;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{ChatTurns, Quota};
use crate::chat::{hub::LiveTurn, turn};
use crate::store::{DynStore, IdempotencyClaim};
use crate::AppState;

/// How often a listener on another instance looks for new stored events.
const POLL_EVERY: Duration = Duration::from_millis(150);
/// Interval of keep-alive comments on every stream.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/chat", post(chat))
        .route("/api/threads/{id}/stream", get(resume))
        .route("/api/threads/{id}/stop", post(stop))
        .route("/api/threads/{id}/messages/{message_id}/retry", post(retry))
}

fn sse_event(turn: Uuid, seq: i64, name: &str, data: String) -> Event {
    Event::default().id(format!("{turn}:{seq}")).event(name).data(data)
}

/// Wraps an event stream as an SSE response that no proxy buffers.
fn sse_response(events: impl Stream<Item = Event> + Send + 'static) -> Response {
    let mut response =
        Sse::new(events.map(Ok::<_, Infallible>)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store, no-transform"));
    headers.insert(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"));
    response
}

/// One event of a chat stream as it travels (the OpenAPI description of the `text/event-stream` answers).
#[derive(utoipa::ToSchema)]
#[allow(dead_code)] // documentation only: the events are written by `sse_event`
pub struct ChatStreamEvent {
    /// `<turn id>:<n>`: send the last one received as `Last-Event-ID` to resume after it.
    id: String,
    /// The event's name.
    #[schema(pattern = "^(thread_name|text_delta|tool_executing|artifact_created|message_complete|error)$")]
    event: String,
    /// The event's fields as JSON: the `data` of the `ChatEvent` variant of that name.
    data: String,
}

/// How long an `Idempotency-Key` is remembered.
const IDEMPOTENCY_TTL_SECS: i64 = 24 * 60 * 60;

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
    start_or_replay(&state, user, thread, &headers, body).await.map(|r| until_session_ends(&state, &user, r))
}

/// Starts the turn of `body`, or replays the one its idempotency key started.
async fn start_or_replay(
    state: &AppState,
    user: AuthUser,
    thread: Uuid,
    headers: &HeaderMap,
    body: ChatRequest,
) -> Result<Response> {
    let state = state.clone();
    let Some(key) = idempotency_key(headers)? else {
        let live = turn::start(&state, user.id, thread, body).await?;
        return Ok(live_response(&live, 0));
    };
    // The same key with the same request replays the first result; with another request it is refused.
    let fingerprint = fingerprint(&format!("chat:{thread}:{}", serde_json::to_string(&body).unwrap_or_default()));
    match state.store.claim_idempotency_key(user.id, &key, &fingerprint, IDEMPOTENCY_TTL_SECS).await? {
        IdempotencyClaim::Fresh => match turn::start(&state, user.id, thread, body).await {
            Ok(live) => {
                state.store.complete_idempotency_key(user.id, &key, &live.id.to_string()).await?;
                Ok(live_response(&live, 0))
            }
            Err(e) => {
                state.store.release_idempotency_key(user.id, &key).await?;
                Err(e)
            }
        },
        IdempotencyClaim::Existing { fingerprint: first, .. } if first != fingerprint => Err(ApiError::Unprocessable {
            code: "idempotency_key_reused",
            message: "This Idempotency-Key was already used for a different request.".into(),
            field: None,
        }),
        IdempotencyClaim::Existing { response: None, .. } => {
            Err(ApiError::Conflict("A request with this Idempotency-Key is still being processed.".into()))
        }
        IdempotencyClaim::Existing { response: Some(turn), .. } => {
            let turn = Uuid::parse_str(&turn).map_err(|e| ApiError::Internal(e.into()))?;
            Ok(turn_response(&state, user.id, thread, turn, 0))
        }
    }
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
    let live = turn::retry(&state, user.id, thread, message).await?;
    Ok(live_response(&live, 0))
}

/// The `Idempotency-Key` header, if any: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = value.to_str().ok().filter(|k| (1..=255).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()));
    key.map(|k| Some(k.to_string())).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_idempotency_key",
            "The Idempotency-Key must be 1 to 255 visible ASCII characters.",
        )
    })
}

fn fingerprint(request: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("{:x}", Sha256::digest(request.as_bytes()))
}

fn live_response(live: &std::sync::Arc<LiveTurn>, after: i64) -> Response {
    let id = live.id;
    sse_response(live.subscribe(after).map(move |(seq, e)| sse_event(id, seq, e.name(), e.data_json())))
}

/// The events of one turn after `after`: from this process while it runs here, else from the store.
fn turn_response(state: &AppState, user: Uuid, thread: Uuid, turn: Uuid, after: i64) -> Response {
    match state.hub.get(thread).filter(|l| l.id == turn) {
        Some(live) => live_response(&live, after),
        None => sse_response(stored_events(state.store.clone(), user, thread, turn, after)),
    }
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
        (status = 404, body = app::api::ErrorBody)))]
pub async fn resume(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
    headers: HeaderMap,
) -> Result<Response> {
    state.store.get_thread(user.id, thread).await?;
    let Some(turn) = state.store.latest_turn(user.id, thread).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // Events after the client's last one if it is of this turn; the whole turn otherwise.
    let after = match last_event_id(&headers) {
        Some((id, seq)) if id == turn.id => seq,
        _ => 0,
    };
    Ok(until_session_ends(&state, &user, turn_response(&state, user.id, thread, turn.id, after)))
}

/// Ends an event stream when the session that opened it ends (signed out here or on another instance).
fn until_session_ends(state: &AppState, user: &AuthUser, response: Response) -> Response {
    let ended = state.sessions.ended(user.jti, user.id);
    response.map(|body| axum::body::Body::from_stream(body.into_data_stream().take_until(ended)))
}

/// Replays a turn's stored events after `after`, following it while it runs on another instance.
fn stored_events(
    store: DynStore,
    user: Uuid,
    thread: Uuid,
    turn: Uuid,
    after: i64,
) -> impl Stream<Item = Event> + Send {
    struct State {
        store: DynStore,
        user: Uuid,
        thread: Uuid,
        turn: Uuid,
        after: i64,
        done: bool,
    }
    let initial = State { store, user, thread, turn, after, done: false };
    stream::unfold(initial, |mut s| async move {
        loop {
            if s.done {
                return None;
            }
            let events = match s.store.turn_events_after(s.turn, s.after).await {
                Ok(events) => events,
                Err(e) => {
                    tracing::warn!(error = %e, "reading stored events failed");
                    return None;
                }
            };
            if !events.is_empty() {
                let batch: Vec<Event> = events
                    .iter()
                    .map(|e| {
                        if ChatEvent::from_parts(&e.name, &e.data).is_some_and(|ev| ev.is_terminal()) {
                            s.done = true;
                        }
                        sse_event(s.turn, e.seq, &e.name, e.data.clone())
                    })
                    .collect();
                s.after = events.last().map(|e| e.seq).unwrap_or(s.after);
                return Some((stream::iter(batch), s));
            }
            let running = matches!(s.store.latest_turn(s.user, s.thread).await,
                Ok(Some(t)) if t.id == s.turn && t.alive(turn::STALE_AFTER_MS));
            if !running {
                // One last look: the final events may have landed just before the turn closed.
                let tail = s.store.turn_events_after(s.turn, s.after).await.unwrap_or_default();
                s.done = true;
                if tail.is_empty() {
                    return None;
                }
                let batch: Vec<Event> =
                    tail.iter().map(|e| sse_event(s.turn, e.seq, &e.name, e.data.clone())).collect();
                return Some((stream::iter(batch), s));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    })
    .flatten()
}

/// `POST /api/threads/{id}/stop`: stops the running turn; the partial answer is kept as `stopped`.
#[utoipa::path(post, path = "/api/threads/{id}/stop", tag = "chat", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 202, description = "Stop requested"), (status = 204, description = "Nothing was running"),
        (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody)))]
pub async fn stop(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<StatusCode> {
    state.store.get_thread(user.id, thread).await?;
    // A turn running here stops at once; one running elsewhere stops at its next heartbeat. A turn stopped here
    // may have closed before the request below reaches the store: it was stopped all the same.
    let here = state.hub.get(thread).filter(|l| l.user_id == user.id);
    if let Some(live) = &here {
        live.cancel();
    }
    let requested = state.store.request_stop(user.id, thread).await?;
    Ok(if here.is_some() || requested { StatusCode::ACCEPTED } else { StatusCode::NO_CONTENT })
}
