//! Conversations: create, list, show, change, delete.

use app::api::{
    CreateThread, Thread, ThreadDetail, ThreadList, UpdateThread, MAX_TAGS, MAX_TAG_CHARS, MAX_TITLE_CHARS,
};
use axum::{
    http::StatusCode,
    response::IntoResponse,
    routing::{delete, get},
    Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use uuid::Uuid;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use crate::chat::turn::STALE_AFTER_MS;
use crate::store::{ThreadCursor, ThreadPatch, ThreadQuery, ThreadSort};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads", get(list_threads).post(create_thread))
        .route("/api/threads/{id}", get(get_thread).patch(update_thread).delete(delete_thread))
        .route("/api/threads/{id}/messages/{message_id}", delete(delete_message))
}

/// Trims a title and checks its length.
pub fn validate_title(title: &str) -> Result<String> {
    let title = title.trim();
    if title.is_empty() {
        return Err(ApiError::invalid("title", "The title must not be empty."));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(ApiError::invalid("title", format!("The title is longer than {MAX_TITLE_CHARS} characters.")));
    }
    Ok(title.to_string())
}

/// Trims tags, drops duplicates, and checks their number and length.
pub fn validate_tags(tags: &[String]) -> Result<Vec<String>> {
    let mut clean: Vec<String> = Vec::new();
    for tag in tags {
        let tag = tag.trim();
        if tag.is_empty() {
            return Err(ApiError::invalid("tags", "Tags must not be empty."));
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(ApiError::invalid("tags", format!("A tag is longer than {MAX_TAG_CHARS} characters.")));
        }
        if !clean.iter().any(|t| t == tag) {
            clean.push(tag.to_string());
        }
    }
    if clean.len() > MAX_TAGS {
        return Err(ApiError::invalid("tags", format!("A conversation has at most {MAX_TAGS} tags.")));
    }
    Ok(clean)
}

/// `POST /api/threads`.
#[utoipa::path(post, path = "/api/threads", tag = "threads", security(("session" = []), ("bearer" = [])), request_body = CreateThread,
    responses((status = 201, body = Thread), (status = 401, body = app::api::ErrorBody), (status = 422, body = app::api::ErrorBody)))]
pub async fn create_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateThread>,
) -> Result<impl IntoResponse> {
    let title = match body.title.as_deref() {
        Some(t) => validate_title(t)?,
        None => "New conversation".to_string(),
    };
    let tags = validate_tags(body.tags.as_deref().unwrap_or_default())?;
    let thread = state.store.create_thread(user.id, &title, &tags).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

/// Query of `GET /api/threads`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Page size, 1 to 100 (default 50).
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    cursor: Option<String>,
    /// Comma-separated tags; a thread must have all of them.
    tags: Option<String>,
    /// `updated_at` (default), `created_at` or `title`.
    sort: Option<String>,
    /// `desc` (default) or `asc`.
    order: Option<String>,
    /// List archived conversations instead of active ones.
    archived: Option<bool>,
}

fn encode_cursor(cursor: &ThreadCursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).unwrap_or_default())
}

fn decode_cursor(text: &str) -> Result<ThreadCursor> {
    URL_SAFE_NO_PAD.decode(text).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).ok_or_else(|| {
        ApiError::BadRequest {
            code: "invalid_cursor",
            message: "The cursor is not valid.".into(),
            field: Some("cursor".into()),
        }
    })
}

/// `GET /api/threads`.
#[utoipa::path(get, path = "/api/threads", tag = "threads", security(("session" = []), ("bearer" = [])), params(ListParams),
    responses((status = 200, body = ThreadList), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody),
        (status = 422, body = app::api::ErrorBody)))]
pub async fn list_threads(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Query(params): Query<ListParams>,
) -> Result<Json<ThreadList>> {
    let limit = params.limit.unwrap_or(50);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::invalid("limit", "The limit must be between 1 and 100."));
    }
    let sort = match params.sort.as_deref() {
        None | Some("updated_at") => ThreadSort::UpdatedAt,
        Some("created_at") => ThreadSort::CreatedAt,
        Some("title") => ThreadSort::Title,
        Some(_) => return Err(ApiError::invalid("sort", "Sort by updated_at, created_at or title.")),
    };
    let descending = match params.order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(_) => return Err(ApiError::invalid("order", "The order is asc or desc.")),
    };
    let tags = params
        .tags
        .as_deref()
        .map(|t| t.split(',').map(str::trim).filter(|t| !t.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let query = ThreadQuery {
        limit,
        cursor: params.cursor.as_deref().map(decode_cursor).transpose()?,
        tags,
        sort,
        descending,
        archived: params.archived.unwrap_or(false),
    };
    let page = state.store.list_threads(user.id, &query).await?;
    Ok(Json(ThreadList { threads: page.threads, next_cursor: page.next.as_ref().map(encode_cursor) }))
}

/// `GET /api/threads/{id}`.
#[utoipa::path(get, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = ThreadDetail), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody),
        (status = 404, body = app::api::ErrorBody)))]
pub async fn get_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ThreadDetail>> {
    let thread = state.store.get_thread(user.id, id).await?;
    // The turn is read before the messages: a turn's end stores its answer and closes it in one commit, so a
    // turn read as over has its answer in the messages read after. (Read side by side, a reader could see the
    // turn closed and the answer still as a draft.)
    let running = state.store.latest_turn(user.id, id).await?.is_some_and(|t| t.alive(STALE_AFTER_MS));
    let (messages, artifacts) =
        tokio::try_join!(state.store.list_messages(user.id, id), state.store.list_artifacts(user.id, id))?;
    Ok(Json(ThreadDetail { thread, messages, artifacts, running }))
}

/// `PATCH /api/threads/{id}`.
#[utoipa::path(patch, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), request_body = UpdateThread,
    responses((status = 200, body = Thread), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody),
        (status = 404, body = app::api::ErrorBody), (status = 422, body = app::api::ErrorBody)))]
pub async fn update_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateThread>,
) -> Result<impl IntoResponse> {
    let patch = ThreadPatch {
        title: body.title.as_deref().map(validate_title).transpose()?,
        tags: body.tags.as_deref().map(validate_tags).transpose()?,
        pinned: body.pinned,
        archived: body.archived,
        summary: None,
    };
    Ok(Json(state.store.update_thread(user.id, id, &patch).await?))
}

/// `DELETE /api/threads/{id}`.
#[utoipa::path(delete, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 204, description = "Deleted with everything in it"), (status = 401, body = app::api::ErrorBody),
        (status = 404, body = app::api::ErrorBody)))]
pub async fn delete_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode> {
    state.store.delete_thread(user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/threads/{id}/messages/{message_id}`.
#[utoipa::path(delete, path = "/api/threads/{id}/messages/{message_id}", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("message_id" = Uuid, Path, description = "Message id")),
    responses((status = 204, description = "Deleted"), (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody)))]
pub async fn delete_message(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path((id, message_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode> {
    state.store.delete_message(user.id, id, message_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
