//! `GET /api/search`: the caller's messages, conversation titles and documents, best match first.

use app::api::{SearchKind, SearchResult, SearchResults};
use axum::{extract::State, routing::get, Router};
use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine};
use serde::Deserialize;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Query};
use super::rate_limit::{Quota, Search};
use crate::store::{HitKind, SearchHit};
use crate::AppState;

/// Hits per page unless asked otherwise.
const DEFAULT_LIMIT: u32 = 20;
/// Most hits per page.
const MAX_LIMIT: u32 = 100;
/// Longest query looked at, in characters; the rest is ignored (only the first terms are used anyway).
const MAX_QUERY_CHARS: usize = 1000;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/search", get(search))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchParams {
    #[serde(default)]
    q: String,
    limit: Option<u32>,
    cursor: Option<String>,
}

/// The cursor is the offset of the next page, opaque to clients.
fn encode_cursor(offset: u32) -> String {
    URL_SAFE_NO_PAD.encode(format!("o{offset}"))
}

fn decode_cursor(text: &str) -> Result<u32> {
    URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|s| s.strip_prefix('o').and_then(|n| n.parse().ok()))
        .ok_or_else(|| ApiError::BadRequest {
            code: "invalid_cursor",
            message: "The cursor is not valid.".into(),
            field: Some("cursor".into()),
        })
}

fn result(hit: SearchHit) -> SearchResult {
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

#[utoipa::path(get, path = "/api/search", tag = "history", security(("session" = []), ("bearer" = [])), params(("q" = String, Query, description = "Words, \"phrases\" and prefix*"), ("limit" = Option<u32>, Query, description = "1-100, default 20"), ("cursor" = Option<String>, Query, description = "From next_cursor")), 
    responses((status = 200, body = app::api::SearchResults), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody), (status = 422, body = app::api::ErrorBody), (status = 429, body = app::api::ErrorBody)))]
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
    let offset = params.cursor.as_deref().map(decode_cursor).transpose()?.unwrap_or(0);
    let query: String = params.q.chars().take(MAX_QUERY_CHARS).collect();
    let page = state.store.search(user.id, &query, limit, offset).await?;
    let end = u64::from(offset) + page.hits.len() as u64;
    let next_cursor = (end < page.total && !page.hits.is_empty()).then(|| encode_cursor(end as u32));
    Ok(Json(SearchResults { results: page.hits.into_iter().map(result).collect(), total: page.total, next_cursor }))
}
