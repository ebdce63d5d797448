//! A conversation's requirements ledger: read it with coverage, change or drop a requirement by hand.

use axum::{extract::State, routing::get, Router};
use uuid::Uuid;
use wire::{requirement_number, Ledger, Requirement, RequirementStatus, UpdateRequirement, VersionAuthor};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use super::rate_limit::{Export, Quota};
use crate::history::requirements::{self as tables, Format, Table};
use crate::AppState;
use store::LedgerWrite;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/requirements", get(ledger))
        .route("/api/threads/{id}/requirements/{key}", axum::routing::patch(update))
        .route("/api/threads/{id}/requirements/export", get(export))
}

/// `GET /api/threads/{id}/requirements`: the ledger of the path shown, each requirement with its history and
/// the documents whose current version covers it; the keys in force that nothing covers.
#[utoipa::path(get, path = "/api/threads/{id}/requirements", tag = "requirements", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id")),
    responses((status = 200, body = wire::Ledger), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn ledger(State(state): State<AppState>, user: AuthUser, Path(thread): Path<Uuid>) -> Result<Json<Ledger>> {
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    Ok(Json(view.ledger()))
}

/// `PATCH /api/threads/{id}/requirements/{key}`: a person's change of a requirement (`text`) or of its status
/// (`dropped`, or `active` to bring a dropped one back), recorded as theirs; the requirement as it stands after (an
/// update that changes nothing, an empty one included, records nothing).
#[utoipa::path(patch, path = "/api/threads/{id}/requirements/{key}", tag = "requirements", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ("key" = String, Path, description = "The requirement's key, R-1...")),
    request_body = UpdateRequirement,
    responses((status = 200, body = wire::Requirement), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "No such conversation, or no such requirement on the path shown"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    user: AuthUser,
    Path((thread, key)): Path<(Uuid, String)>,
    Json(body): Json<UpdateRequirement>,
) -> Result<Json<Requirement>> {
    let text = match &body.text {
        Some(text) => {
            let text = wire::validate::requirement(text)?;
            Some(if state.config.redact_pii { crate::privacy::redact(&text) } else { text })
        }
        None => None,
    };
    let number = requirement_number(&key).ok_or(ApiError::NotFound)?;
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    let standing = view.by_number(number).ok_or(ApiError::NotFound)?;
    let now = &standing.requirement;
    let text = text.unwrap_or_else(|| now.text.clone());
    let first = now.history.first().map_or(now.text.as_str(), |h| h.text.as_str());
    // `active` (or `changed`, which says the same of a requirement in force) brings a dropped one back; its status
    // then follows its text.
    let status = match body.status {
        Some(RequirementStatus::Dropped) => RequirementStatus::Dropped,
        Some(_) => {
            if text == first {
                RequirementStatus::Active
            } else {
                RequirementStatus::Changed
            }
        }
        None if now.status == RequirementStatus::Dropped => RequirementStatus::Dropped,
        None if text == first => now.status,
        None => RequirementStatus::Changed,
    };
    if text == now.text && status == now.status {
        return Ok(Json(now.clone()));
    }
    let write =
        LedgerWrite::Revise { requirement: standing.id, number, text, kind: now.kind, status, message_id: None };
    state.store.record_requirements(user.id, thread, vec![write], VersionAuthor::Person { user_id: user.id }).await?;
    let (_, view) = crate::chat::ledger::marked(&state.store, user.id, thread).await?;
    let standing = view.by_number(number).ok_or(ApiError::NotFound)?;
    Ok(Json(standing.requirement.clone()))
}

/// The values of `table` (documentation only: others are answered with a 422).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum TableName {
    Requirements,
    Traceability,
}

/// The values of `format` (documentation only: others are answered with a 422).
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
#[allow(dead_code)]
enum SheetFormat {
    Csv,
    Md,
    Markdown,
}

/// Query of `GET /api/threads/{id}/requirements/export`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ExportParams {
    /// `requirements` (the default): one row per requirement; `traceability`: one row per requirement a document
    /// version reflects.
    #[param(value_type = Option<TableName>, inline)]
    table: Option<String>,
    /// `csv` (the default) or `md` (also `markdown`).
    #[param(value_type = Option<SheetFormat>, inline)]
    format: Option<String>,
}

/// `GET /api/threads/{id}/requirements/export?table=requirements|traceability&format=csv|md`: the ledger of the
/// path shown, or the traceability matrix (requirement x document version, with source message and dates), as a
/// download.
#[utoipa::path(get, path = "/api/threads/{id}/requirements/export", tag = "requirements", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Conversation id"), ExportParams),
    responses((status = 200, description = "A CSV or Markdown download"), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn export(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    Path(thread): Path<Uuid>,
    Query(params): Query<ExportParams>,
) -> Result<axum::response::Response> {
    let table = match params.table.as_deref() {
        None => Table::Requirements,
        Some(t) => Table::parse(t)
            .ok_or_else(|| ApiError::invalid("table", "The table is `requirements` or `traceability`."))?,
    };
    let format = match params.format.as_deref() {
        None => Format::Csv,
        Some(f) => Format::parse(f).ok_or_else(|| ApiError::invalid("format", "The format is csv or md."))?,
    };
    // The versions' titles and times only for the matrix, which names them.
    let versions = async {
        match table {
            Table::Requirements => Ok(Vec::new()),
            Table::Traceability => state.store.cited_versions(user.id, thread).await,
        }
    };
    let (info, (rows, view), versions) = tokio::try_join!(
        state.store.get_thread(user.id, thread),
        crate::chat::ledger::marked(&state.store, user.id, thread),
        versions
    )?;
    // The person's messages the requirements came from.
    let mut ids: Vec<Uuid> = rows.revisions.iter().filter_map(|r| r.message_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let messages = state.store.messages_by_id(user.id, thread, &ids).await?;
    let ticket = state.heavy.admit(user.id)?;
    let title = info.title;
    let (body, name) = ticket
        .run_blocking(move || {
            let sources =
                tables::Sources { title: &title, rows: &rows, view: &view, messages: &messages, versions: &versions };
            (tables::render(&sources, table, format), tables::file_name(&title, table, format))
        })
        .await
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("writing the requirements failed")))?;
    Ok(crate::download::attachment(body.into_bytes(), format.content_type(), &name))
}
