//! Share links: a read-only snapshot of a conversation, readable by anyone with its random link (`/s/<token>`)
//! until revoked. It names no one (no e-mail, name or ids) and is `noindex`; an unknown or revoked token is a 404,
//! and so is a link of a disabled account (until it is enabled again) or a deleted one.

use axum::{
    extract::{Request, State},
    http::{header, HeaderName, HeaderValue, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::{delete, get},
    Router,
};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use uuid::Uuid;
use wire::{MessageStatus, ShareLink, ShareList, SharedConversation, SharedMessage, MAX_SHARES_PER_PERSON};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{Export, Quota};
use crate::AppState;
use store::NewShare;

/// Random bytes in a link's token: 256 bits, so links cannot be guessed or enumerated.
const TOKEN_BYTES: usize = 32;
/// Characters of a token (URL-safe base64 of [`TOKEN_BYTES`], unpadded).
const TOKEN_CHARS: usize = 43;
/// Largest snapshot kept for one link (its JSON), 8 MiB.
pub const MAX_SNAPSHOT_BYTES: usize = 8 * 1024 * 1024;

const X_ROBOTS_TAG: HeaderName = HeaderName::from_static("x-robots-tag");

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/shares", get(list_for_thread).post(create))
        .route("/api/shares", get(list))
        .route("/api/shares/{id}", delete(revoke))
        .route("/api/shared/{token}", get(shared))
}

/// A new link's token.
fn new_token() -> String {
    URL_SAFE_NO_PAD.encode(rand::random::<[u8; TOKEN_BYTES]>())
}

/// Whether `token` could be one Quire made; anything else is not looked up.
fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_CHARS && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The shared page's JSON: the messages with text on the path its owner sees, and each document at the newest
/// version written on that path (none written on it: left out), so nothing of a branch the owner left shows.
/// Written on a blocking thread of the heavy-work queue.
async fn snapshot(state: &AppState, user: Uuid, thread: Uuid) -> Result<(String, String)> {
    let ticket = state.heavy.admit(user)?;
    let info = state.store.get_thread(user, thread).await?;
    let (messages, _) = state.store.list_path(user, thread).await?;
    let path: Vec<Uuid> = messages.iter().map(|m| m.id).collect();
    let documents = state.store.documents_on_path(user, thread, &path).await?;
    let title = info.title;
    let page_title = title.clone();
    let json = ticket
        .run_blocking(move || {
            let shared = SharedConversation {
                title: page_title,
                shared_at: store::now(),
                messages: messages
                    .into_iter()
                    .filter(|m| m.status != MessageStatus::Error && !m.content.trim().is_empty())
                    .map(|m| SharedMessage { role: m.role, content: m.content, created_at: m.created_at })
                    .collect(),
                documents,
            };
            serde_json::to_string(&shared)
        })
        .await
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the snapshot's work panicked")))?
        .map_err(|e| ApiError::Internal(e.into()))?;
    if json.len() > MAX_SNAPSHOT_BYTES {
        let message = "This conversation is too large to share; export it instead.";
        return Err(ApiError::unprocessable("too_large_to_share", message, None));
    }
    Ok((title, json))
}

/// `POST /api/threads/{id}/shares`: a new link to a snapshot of the conversation as it is now.
#[utoipa::path(post, path = "/api/threads/{id}/shares", tag = "threads", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 201, body = ShareLink, description = "The link; its `path` is the page anyone with it can read"),
        (status = 401, body = wire::ErrorBody), (status = 403, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "The person has as many links as they may (100)"),
        (status = 422, body = wire::ErrorBody, description = "The conversation is too large to share"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    Path(thread): Path<Uuid>,
) -> Result<(StatusCode, Json<ShareLink>)> {
    let (title, snapshot) = snapshot(&state, user.id, thread).await?;
    let share = NewShare { thread, token: new_token(), title, snapshot };
    let link = state.store.create_share(user.id, share, MAX_SHARES_PER_PERSON).await?;
    tracing::info!(user = %user.id, share = %link.id, "conversation shared");
    Ok((StatusCode::CREATED, Json(link)))
}

/// `GET /api/threads/{id}/shares`: the conversation's links, newest first.
#[utoipa::path(get, path = "/api/threads/{id}/shares", tag = "threads", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = ShareList), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody)))]
pub async fn list_for_thread(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
) -> Result<Json<ShareList>> {
    Ok(Json(ShareList { shares: state.store.list_shares(user.id, Some(thread)).await? }))
}

/// `GET /api/shares`: every link of the caller, newest first.
#[utoipa::path(get, path = "/api/shares", tag = "threads", security(("session" = []), ("bearer" = [])),
    responses((status = 200, body = ShareList), (status = 401, body = wire::ErrorBody)))]
pub async fn list(State(state): State<AppState>, user: AuthUser) -> Result<Json<ShareList>> {
    Ok(Json(ShareList { shares: state.store.list_shares(user.id, None).await? }))
}

/// `DELETE /api/shares/{id}`: revokes a link; its page is a 404 from now on.
#[utoipa::path(delete, path = "/api/shares/{id}", tag = "threads", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "A link's `id`")),
    responses((status = 204, description = "Revoked"), (status = 401, body = wire::ErrorBody),
        (status = 403, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "The caller has no link with this id")))]
pub async fn revoke(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    state.store.delete_share(user.id, id).await?;
    tracing::info!(user = %user.id, share = %id, "share link revoked");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /api/shared/{token}`: the snapshot a link shows, to anyone holding it (no session needed).
#[utoipa::path(get, path = "/api/shared/{token}", tag = "threads",
    params(("token" = String, Path, description = "The last part of a link's `path`")),
    responses((status = 200, body = SharedConversation, description = "Sent with `X-Robots-Tag: noindex`"),
        (status = 404, body = wire::ErrorBody,
            description = "No such link, it was revoked, or its owner's account is disabled or deleted")))]
pub async fn shared(State(state): State<AppState>, Path(token): Path<String>) -> Result<Response> {
    if !well_formed(&token) {
        return Err(ApiError::NotFound);
    }
    let snapshot = state.store.shared_snapshot(&token).await?;
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (X_ROBOTS_TAG, HeaderValue::from_static("noindex, nofollow")),
    ];
    Ok((headers, snapshot).into_response())
}

/// Marks the shared pages (`/s/<token>`) `noindex`, with a 404 for an unknown or revoked token; other paths
/// pass untouched.
pub async fn shared_pages(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(token) = request.uri().path().strip_prefix("/s/").map(str::to_owned) else {
        return next.run(request).await;
    };
    let exists = well_formed(&token) && state.store.shared_snapshot(&token).await.is_ok();
    let mut response = next.run(request).await;
    if !exists && response.status().is_success() {
        *response.status_mut() = StatusCode::NOT_FOUND;
    }
    response.headers_mut().insert(X_ROBOTS_TAG, HeaderValue::from_static("noindex, nofollow"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_recognised() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert!(well_formed(&a) && well_formed(&b));
        assert!(!well_formed(&a[1..]));
        assert!(!well_formed(&format!("{}.", &a[1..])));
        assert!(!well_formed("../../etc/passwd"));
    }
}
