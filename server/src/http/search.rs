//! `GET /api/search`: the caller's messages, conversation titles and documents, best match first.

use axum::{extract::State, routing::get, Router};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;
use uuid::Uuid;
use wire::{SearchKind, SearchResult, SearchResults};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Query};
use super::rate_limit::{Quota, Search};
use crate::AppState;
use store::{HitKind, SearchHit};

/// Hits per page unless asked otherwise.
const DEFAULT_LIMIT: u32 = 20;
/// Most hits per page.
const MAX_LIMIT: u32 = 100;
/// Longest query, in characters (only its first terms are used anyway).
pub const MAX_QUERY_CHARS: usize = 1000;
/// How deep the pages of one search go: hits past this many are not offered (each page ranks every hit
/// before it).
pub const MAX_SEARCH_DEPTH: u32 = 10_000;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/search", get(search))
}

/// Query of `GET /api/search`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchParams {
    /// Words, "phrases" and prefix*; at most 1000 characters.
    #[serde(default)]
    #[param(max_length = 1000)]
    q: String,
    /// 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// `next_cursor` of the previous page.
    #[param(max_length = 64, pattern = "^[A-Za-z0-9_-]*$")]
    cursor: Option<String>,
    /// Search a project's conversations (whoever wrote them) instead of one's own: a project one is a member of
    /// (404 for any other).
    project: Option<Uuid>,
}

/// The cursor is the offset of the next page, opaque to clients.
fn encode_cursor(offset: u32) -> String {
    URL_SAFE_NO_PAD.encode(format!("o{offset}"))
}

/// The offset a cursor holds: one this API could have given out, within [`MAX_SEARCH_DEPTH`].
fn decode_cursor(text: &str) -> Result<u32> {
    URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|s| s.strip_prefix('o').and_then(|n| n.parse().ok()))
        .filter(|offset| *offset < MAX_SEARCH_DEPTH)
        .ok_or_else(ApiError::invalid_cursor)
}

/// A store's hit as the API shows it.
pub(super) fn result(hit: SearchHit) -> SearchResult {
    SearchResult {
        kind: match hit.kind {
            HitKind::Message => SearchKind::Message,
            HitKind::Thread => SearchKind::Thread,
            HitKind::Artifact => SearchKind::Artifact,
        },
        thread_id: hit.thread_id,
        thread_title: hit.thread_title,
        message_id: hit.message_id,
        artifact_id: hit.artifact_id,
        role: hit.role,
        snippet: hit.snippet,
        created_at: hit.created_at,
    }
}

#[utoipa::path(get, path = "/api/search", tag = "history", security(("session" = []), ("bearer" = [])), params(SearchParams),
    responses((status = 200, body = wire::SearchResults), (status = 400, body = wire::ErrorBody, description = "A malformed parameter, a query too long, or a cursor that is not one of ours"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody, description = "Not a member of the project"),
        (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub(crate) async fn search(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Search>,
    Query(params): Query<SearchParams>,
) -> Result<Json<SearchResults>> {
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid("limit", format!("The limit must be between 1 and {MAX_LIMIT}.")));
    }
    if params.q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid_query("q", format!("The query is longer than {MAX_QUERY_CHARS} characters.")));
    }
    let offset = params.cursor.as_deref().map(decode_cursor).transpose()?.unwrap_or(0);
    let page = match params.project {
        Some(project) => state.store.search_project(user.id, project, &params.q, limit, offset).await?,
        None => state.store.search(user.id, &params.q, limit, offset).await?,
    };
    let end = u64::from(offset) + page.hits.len() as u64;
    // Past a lower bound there are more hits than were counted.
    let more = end < page.total || page.total_is_lower_bound;
    let next_cursor =
        (more && end < u64::from(MAX_SEARCH_DEPTH) && !page.hits.is_empty()).then(|| encode_cursor(end as u32));
    Ok(Json(SearchResults {
        results: page.hits.into_iter().map(result).collect(),
        total: page.total,
        total_is_lower_bound: page.total_is_lower_bound,
        next_cursor,
    }))
}
