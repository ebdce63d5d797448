//! Exports and imports over HTTP: one conversation as JSON or Markdown, everything as JSON, and imports (the
//! work itself is in [`crate::history`]).

use axum::{
    extract::{DefaultBodyLimit, FromRequest, Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use serde::Deserialize;
use uuid::Uuid;
use wire::ImportResult;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, JsonBytes, Path, Query};
use super::rate_limit::{Export, Quota};
use crate::history::{self, export::ThreadFormat};
use crate::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/threads/{id}/export", get(export_thread)).route("/api/export", get(export_account))
}

/// The import route, outside the global body limit: it has its own (`QUIRE_MAX_IMPORT_MB`).
pub fn import_router(max_bytes: usize) -> Router<AppState> {
    Router::new()
        .route("/api/threads/import", post(import))
        // Enforced when the body is read, so a refusal is the API's own 413 body.
        .layer(DefaultBodyLimit::max(max_bytes))
}

/// The names `format` takes (documentation only: other values are answered with a 422).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum FormatName {
    Json,
    Markdown,
    Md,
}

/// Query of `GET /api/threads/{id}/export`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportParams {
    /// `json` (the default), or `markdown` (also `md`).
    #[param(value_type = Option<FormatName>, inline)]
    format: Option<String>,
}

#[utoipa::path(get, path = "/api/threads/{id}/export", tag = "history", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id"), ExportParams),
    responses((status = 200, description = "A download (Content-Disposition): Quire's JSON, or Markdown", content(("application/json"), ("text/markdown"))), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub(crate) async fn export_thread(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    Path(id): Path<Uuid>,
    Query(params): Query<ExportParams>,
) -> Result<Response> {
    let format = match params.format.as_deref() {
        None | Some("json") => ThreadFormat::Json,
        Some("markdown") | Some("md") => ThreadFormat::Markdown,
        Some(_) => return Err(ApiError::invalid("format", "The format is json or markdown.")),
    };
    let ticket = state.heavy.admit(user.id)?;
    let file = history::export::thread_download(&state.store, user.id, id, format, &ticket).await?;
    Ok(crate::download::attachment(file.body, file.content_type, &file.file_name))
}

#[utoipa::path(get, path = "/api/export", tag = "history", security(("session" = []), ("bearer" = [])),
    responses((status = 200, description = "All of the caller's data as one JSON download", content_type = "application/json"), (status = 401, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn export_account(State(state): State<AppState>, user: AuthUser, _: Quota<Export>) -> Result<Response> {
    let ticket = state.heavy.admit(user.id)?;
    let file = history::export::account_download(state.store.clone(), user.id, ticket).await?;
    Ok(crate::download::attachment(file.body, "application/json", &file.file_name))
}

#[utoipa::path(post, path = "/api/threads/import", tag = "history", security(("session" = []), ("bearer" = [])),
    request_body(content = history::import::ImportBody, description = "A Quire export (one conversation or a whole account) or a ChatGPT conversations.json"),
    responses((status = 201, body = wire::ImportResult), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 413, body = wire::ErrorBody),
        (status = 422, body = wire::ErrorBody, description = "Not a format Quire imports, or a value breaks a rule the schema cannot state (two messages with one number, a document pointing at a message not in the export)"),
        (status = 429, body = wire::ErrorBody)))]
pub async fn import(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    request: Request,
) -> Result<impl IntoResponse> {
    // A place in the heavy-work queue before the body is read: at most that many imports are held in memory.
    let ticket = state.heavy.admit(user.id)?;
    let JsonBytes(body) = JsonBytes::from_request(request, &state).await?;
    let threads = history::import::import(&state.store, user.id, body, state.config.redact_pii, &ticket).await?;
    Ok((StatusCode::CREATED, Json(ImportResult { threads })))
}
