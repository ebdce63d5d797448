//! Conversations: create, list, show, change, delete.

use axum::{
    http::StatusCode,
    response::IntoResponse,
    routing::{delete, get},
    Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use uuid::Uuid;
use wire::{validate, CreateThread, TagList, Thread, ThreadDetail, ThreadList, UpdateThread, MAX_TAGS, MAX_TAG_CHARS};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use crate::chat::turn::STALE_AFTER_MS;
use crate::AppState;
use store::{ThreadCursor, ThreadPatch, ThreadQuery, ThreadSort};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads", get(list_threads).post(create_thread))
        .route("/api/threads/{id}", get(get_thread).patch(update_thread).delete(delete_thread))
        .route("/api/threads/{id}/messages/{message_id}", delete(delete_message))
        .route("/api/tags", get(list_tags))
}

/// A title a person gives a conversation, checked and, when so configured, with personal data replaced.
fn person_title(state: &AppState, title: &str) -> Result<String> {
    let title = validate::title(title)?;
    Ok(crate::privacy::redact_if(state.config.redact_pii, title, wire::MAX_TITLE_CHARS))
}

/// `POST /api/threads`.
#[utoipa::path(post, path = "/api/threads", tag = "threads", security(("session" = []), ("bearer" = [])), request_body = CreateThread,
    responses((status = 201, body = Thread), (status = 401, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody)))]
pub async fn create_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Json(body): Json<CreateThread>,
) -> Result<impl IntoResponse> {
    let title = match body.title.as_deref() {
        Some(t) => person_title(&state, t)?,
        None => "New conversation".to_string(),
    };
    let tags = validate::tags(body.tags.as_deref().unwrap_or_default())?;
    let thread = state.store.create_thread(user.id, &title, &tags).await?;
    Ok((StatusCode::CREATED, Json(thread)))
}

/// Most tags of a `tags` filter (a conversation has no more).
pub const MAX_FILTER_TAGS: usize = MAX_TAGS;
/// Longest `cursor` accepted, in characters (a real one is far shorter).
pub const MAX_CURSOR_CHARS: usize = 16_384;

/// Query of `GET /api/threads`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    /// Page size, 1 to 100 (default 50).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 16384, pattern = "^[A-Za-z0-9_-]*$")]
    cursor: Option<String>,
    /// Comma-separated tags, at most 10 of at most 50 characters each; a thread must have all of them.
    #[param(pattern = r"^[^,\u0000]{0,50}(,[^,\u0000]{0,50}){0,9}$")]
    tags: Option<String>,
    /// `updated_at` (default), `created_at` or `title`.
    #[param(value_type = Option<SortName>, inline)]
    sort: Option<String>,
    /// `desc` (default) or `asc`.
    #[param(value_type = Option<OrderName>, inline)]
    order: Option<String>,
    /// List archived conversations instead of active ones.
    archived: Option<bool>,
}

/// The values of `sort` (documentation only: others are answered with a 422).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
#[allow(dead_code)]
enum SortName {
    UpdatedAt,
    CreatedAt,
    Title,
}

/// The values of `order` (documentation only: others are answered with a 422).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum OrderName {
    Desc,
    Asc,
}

fn encode_cursor(cursor: &ThreadCursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).unwrap_or_default())
}

/// The cursor as a client sent it, read but not yet checked against the listing (the store does that).
fn decode_cursor(text: &str) -> Result<ThreadCursor> {
    if text.len() > MAX_CURSOR_CHARS {
        return Err(ApiError::invalid_cursor());
    }
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| ApiError::invalid_cursor())?;
    serde_json::from_slice(&bytes).map_err(|_| ApiError::invalid_cursor())
}

/// The tags of a `tags` filter: at most [`MAX_FILTER_TAGS`] parts between commas, each of at most
/// [`MAX_TAG_CHARS`] characters (both counted as sent), trimmed, the empty ones dropped.
pub fn tag_filter(text: &str) -> Result<Vec<String>> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > MAX_FILTER_TAGS {
        return Err(ApiError::invalid_query("tags", format!("Filter by at most {MAX_FILTER_TAGS} tags.")));
    }
    let mut tags = Vec::with_capacity(parts.len());
    for part in parts {
        if part.chars().count() > MAX_TAG_CHARS {
            return Err(ApiError::invalid_query("tags", format!("A tag is longer than {MAX_TAG_CHARS} characters.")));
        }
        if validate::has_nul(part) {
            return Err(ApiError::invalid_query("tags", "Tags must not contain NUL characters."));
        }
        let tag = part.trim();
        if !tag.is_empty() {
            tags.push(tag.to_string());
        }
    }
    Ok(tags)
}

/// `GET /api/threads`.
#[utoipa::path(get, path = "/api/threads", tag = "threads", security(("session" = []), ("bearer" = [])), params(ListParams),
    responses((status = 200, body = ThreadList), (status = 400, body = wire::ErrorBody, description = "A malformed parameter, a cursor that is not one of ours or has expired, too many tags"),
        (status = 401, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody)))]
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
    let query = ThreadQuery {
        limit,
        cursor: params.cursor.as_deref().map(decode_cursor).transpose()?,
        tags: params.tags.as_deref().map(tag_filter).transpose()?.unwrap_or_default(),
        sort,
        descending,
        archived: params.archived.unwrap_or(false),
    };
    let page = state.store.list_threads(user.id, &query).await?;
    Ok(Json(ThreadList { threads: page.threads, next_cursor: page.next.as_ref().map(encode_cursor) }))
}

/// `GET /api/tags`: every tag of the caller's conversations (or a project's) with how many carry it, archived ones
/// counted too.
#[utoipa::path(get, path = "/api/tags", tag = "threads", security(("session" = []), ("bearer" = [])), params(super::projects::InProject),
    responses((status = 200, body = TagList, description = "Most used first, ties by name"), (status = 400, body = wire::ErrorBody, description = "A malformed parameter"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody, description = "Not a member of the project")))]
pub async fn list_tags(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Query(params): Query<super::projects::InProject>,
) -> Result<Json<TagList>> {
    Ok(Json(TagList { tags: state.store.list_tags(user.id, params.scope()).await? }))
}

/// `GET /api/threads/{id}`.
#[utoipa::path(get, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = ThreadDetail), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn get_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ThreadDetail>> {
    let thread = state.store.get_thread(user.id, id).await?;
    // The turn is read before the messages: a turn's end stores its answer and closes it in one commit, so a
    // turn read as over has its answer in the messages read after.
    let running = state.store.latest_turn(user.id, id).await?.is_some_and(|t| t.alive(STALE_AFTER_MS));
    // The ledger without the tree: the path is the messages read beside it.
    let ((messages, branches), mut artifacts, ledger, reach, approvals) = tokio::try_join!(
        state.store.list_path(user.id, id),
        state.store.list_artifacts(user.id, id),
        state.store.ledger_rows_without_tree(user.id, id),
        state.store.thread_reach(user.id, id),
        // Read only while an answer is being written: no question outlives its turn.
        async {
            match running {
                true => state.store.pending_approvals(user.id, id).await,
                false => Ok(Vec::new()),
            }
        }
    )?;
    let path = messages.iter().map(|m| m.id).collect();
    ledger.on_path(&path).mark(&mut artifacts);
    let access = match reach {
        Some(store::projects::ThreadReach::Author) => wire::ThreadAccess::Author,
        Some(store::projects::ThreadReach::Member(role)) if role.writes() => wire::ThreadAccess::Editor,
        _ => wire::ThreadAccess::Viewer,
    };
    // Named only where someone besides the author may have written: a personal conversation asks nothing more.
    let shared = thread.project_id.is_some() || messages.iter().any(|m| m.author_id.is_some());
    let writers = if shared { state.store.thread_writers(user.id, id).await? } else { Vec::new() };
    Ok(Json(ThreadDetail { thread, messages, branches, artifacts, running, access, writers, approvals }))
}

/// `PATCH /api/threads/{id}`.
#[utoipa::path(patch, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), request_body = UpdateThread,
    responses((status = 200, body = Thread), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody)))]
pub async fn update_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateThread>,
) -> Result<impl IntoResponse> {
    let patch = ThreadPatch {
        title: body.title.as_deref().map(|t| person_title(&state, t)).transpose()?,
        tags: body.tags.as_deref().map(validate::tags).transpose()?,
        pinned: body.pinned,
        archived: body.archived,
        summary: None,
        model: body.model.map(|id| wire::checked_id("model", id)).transpose()?,
        mcp_servers: body.mcp_servers.map(|c| c.map(wire::checked_servers).transpose()).transpose()?,
        project: body.project_id,
    };
    let patch = ThreadPatch {
        model: super::models::checked_choice(&state, "model", patch.model).await?,
        mcp_servers: super::mcp_servers::checked_choice(&state, patch.mcp_servers)?,
        ..patch
    };
    Ok(Json(state.chat.update_thread(user.id, id, &patch).await?))
}

/// `DELETE /api/threads/{id}`.
#[utoipa::path(delete, path = "/api/threads/{id}", tag = "threads", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 204, description = "Deleted with everything in it"), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn delete_thread(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<StatusCode> {
    state.chat.delete_thread(user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `DELETE /api/threads/{id}/messages/{message_id}`: deletes the message with every message after it on its
/// branches; refused while an answer is being written.
#[utoipa::path(delete, path = "/api/threads/{id}/messages/{message_id}", tag = "messages", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("message_id" = Uuid, Path, description = "Message id")),
    responses((status = 204, description = "Deleted, with every message after it on its branches"), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "An answer is being written")))]
pub async fn delete_message(
    state: axum::extract::State<AppState>,
    user: AuthUser,
    Path((id, message_id)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode> {
    state.chat.delete_message(user.id, id, message_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
