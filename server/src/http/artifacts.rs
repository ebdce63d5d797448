//! Documents: list, open, delete, their versions, and downloads as Markdown, PDF or Word.

use axum::{
    extract::State,
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use serde::Deserialize;
use uuid::Uuid;
use wire::{
    Artifact, ArtifactList, ArtifactVersion, ArtifactVersionList, CompareDraft, DraftDiff, EditArtifact, ExportFormat,
    VersionAuthor, VersionDiff,
};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use super::rate_limit::{Export, Quota};
use crate::artifacts::{diff::diff_lines, docx, md, pdf};
use crate::download::{attachment, file_name};
use crate::AppState;
use store::ArtifactRevision;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/artifacts", get(list))
        .route("/api/artifacts/{id}", get(show).put(edit).delete(remove))
        .route("/api/artifacts/{id}/versions", get(versions))
        .route("/api/artifacts/{id}/versions/{version}", get(version))
        .route("/api/artifacts/{id}/versions/{version}/restore", post(restore))
        .route("/api/artifacts/{id}/diff", get(diff))
        .route("/api/artifacts/{id}/compare", post(compare))
        .route("/api/artifacts/{id}/export", get(export))
}

#[utoipa::path(get, path = "/api/threads/{id}/artifacts", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), 
    responses((status = 200, body = wire::ArtifactList), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
) -> Result<Json<ArtifactList>> {
    let mut artifacts = state.store.list_artifacts(user.id, thread).await?;
    mark(&state, user.id, thread, &mut artifacts).await?;
    Ok(Json(ArtifactList { artifacts }))
}

#[utoipa::path(get, path = "/api/artifacts/{id}", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id")), 
    responses((status = 200, body = wire::Artifact), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn show(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<Json<Artifact>> {
    let mut artifact = state.store.get_artifact(user.id, id).await?;
    mark(&state, user.id, artifact.thread_id, std::slice::from_mut(&mut artifact)).await?;
    Ok(Json(artifact))
}

/// Fills in what the documents' current versions cite and which of those changed since, on the path shown.
pub(super) async fn mark(state: &AppState, user: Uuid, thread: Uuid, artifacts: &mut [Artifact]) -> Result<()> {
    if artifacts.is_empty() {
        return Ok(());
    }
    let (_, view) = crate::chat::ledger::marked(&state.store, user, thread).await?;
    view.mark(artifacts);
    Ok(())
}

/// `PUT /api/artifacts/{id}`: a person's new version of a document, made from `base_version`; refused (409
/// `version_conflict`, with the document as it is now) when another version was saved since.
#[utoipa::path(put, path = "/api/artifacts/{id}", tag = "artifacts", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Document id")), request_body = EditArtifact,
    responses((status = 200, body = wire::Artifact, description = "The document at its new version"),
        (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::VersionConflict, description = "Another version was saved since `base_version`"),
        (status = 422, body = wire::ErrorBody)))]
pub async fn edit(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<EditArtifact>,
) -> Result<Json<Artifact>> {
    let mut artifact = state.chat.edit_artifact(user.id, id, body).await?;
    mark(&state, user.id, artifact.thread_id, std::slice::from_mut(&mut artifact)).await?;
    Ok(Json(artifact))
}

#[utoipa::path(delete, path = "/api/artifacts/{id}", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id")), 
    responses((status = 204, description = "Deleted with all its versions"), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(State(state): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> Result<StatusCode> {
    state.chat.delete_artifact(user.id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/artifacts/{id}/versions", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id")), 
    responses((status = 200, body = wire::ArtifactVersionList), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn versions(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> Result<Json<ArtifactVersionList>> {
    Ok(Json(ArtifactVersionList { versions: state.store.list_artifact_versions(user.id, id).await? }))
}

#[utoipa::path(get, path = "/api/artifacts/{id}/versions/{version}", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id"), ("version" = i64, Path, description = "Version number")), 
    responses((status = 200, body = wire::ArtifactVersion), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn version(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, version)): Path<(Uuid, i64)>,
) -> Result<Json<ArtifactVersion>> {
    Ok(Json(state.store.get_artifact_version(user.id, id, version).await?))
}

/// `POST /api/artifacts/{id}/versions/{version}/restore`: saves an earlier version again as the newest one; the
/// versions in between stay.
#[utoipa::path(post, path = "/api/artifacts/{id}/versions/{version}/restore", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id"), ("version" = i64, Path, description = "The version to bring back")),
    responses((status = 201, body = wire::Artifact, description = "The document at its new version, a copy of the restored one"), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 409, body = wire::ErrorBody, description = "The version is already the current one")))]
pub async fn restore(
    State(state): State<AppState>,
    user: AuthUser,
    Path((id, version)): Path<(Uuid, i64)>,
) -> Result<impl IntoResponse> {
    let old = state.store.get_artifact_version(user.id, id, version).await?;
    let current = state.store.get_artifact(user.id, id).await?;
    if current.version == version {
        return Err(ApiError::Conflict(format!("Version {version} is already the current version.")));
    }
    let cites = state
        .chat
        .cites_kept(
            user.id,
            current.thread_id,
            &old.content,
            crate::chat::ledger::Citing::Restore { artifact: id, version },
        )
        .await?;
    let revision = ArtifactRevision {
        title: old.title,
        content: old.content,
        request_message_id: None,
        answers: Vec::new(),
        author: VersionAuthor::Person { user_id: user.id },
        base_version: None,
        cites,
    };
    let mut artifact = state.chat.revise_artifact(user.id, id, revision).await?;
    mark(&state, user.id, artifact.thread_id, std::slice::from_mut(&mut artifact)).await?;
    Ok((StatusCode::CREATED, Json(artifact)))
}

/// Query of `GET /api/artifacts/{id}/diff`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DiffParams {
    /// The earlier version.
    from: i64,
    /// The later version.
    to: i64,
}

/// `GET /api/artifacts/{id}/diff?from=&to=`: a line diff between two versions, the changed words of rewritten
/// lines marked, computed here so the browser carries no diff code.
#[utoipa::path(get, path = "/api/artifacts/{id}/diff", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id"), DiffParams),
    responses((status = 200, body = wire::VersionDiff), (status = 400, body = wire::ErrorBody, description = "`from` or `to` missing or not a number"), (status = 401, body = wire::ErrorBody),
        (status = 404, body = wire::ErrorBody, description = "The document or one of the versions does not exist"), (status = 429, body = wire::ErrorBody)))]
pub async fn diff(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Query(params): Query<DiffParams>,
) -> Result<Json<VersionDiff>> {
    let (from, to) = tokio::try_join!(
        state.store.get_artifact_version(user.id, id, params.from),
        state.store.get_artifact_version(user.id, id, params.to),
    )?;
    // Documents can be long: the diff runs off the async workers, within the heavy-work limits.
    let ticket = state.heavy.admit(user.id)?;
    let lines = ticket
        .run_blocking(move || diff_lines(&from.content, &to.content))
        .await
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("diffing two versions failed")))?;
    Ok(Json(VersionDiff { from: params.from, to: params.to, lines }))
}

/// `POST /api/artifacts/{id}/compare`: the current version turned into a text not saved yet (a person's draft,
/// checked as a save is), to show "their version and yours" when a save was refused.
#[utoipa::path(post, path = "/api/artifacts/{id}/compare", tag = "artifacts", security(("session" = []), ("bearer" = [])),
    params(("id" = Uuid, Path, description = "Document id")), request_body = CompareDraft,
    responses((status = 200, body = wire::DraftDiff, description = "The lines of the current version turned into the draft's"),
        (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody),
        (status = 413, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub async fn compare(
    State(state): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<CompareDraft>,
) -> Result<Json<DraftDiff>> {
    let draft = wire::validate::artifact_content(&body.content)?;
    let current = state.store.get_artifact(user.id, id).await?;
    let ticket = state.heavy.admit(user.id)?;
    let lines = ticket
        .run_blocking(move || diff_lines(&current.content, &draft))
        .await
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("comparing a draft failed")))?;
    Ok(Json(DraftDiff { version: current.version, lines }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportParams {
    format: Option<String>,
    version: Option<i64>,
}

/// `GET /api/artifacts/{id}/export?format=md|pdf|docx[&version=n]`: a download named after the title.
#[utoipa::path(get, path = "/api/artifacts/{id}/export", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Document id"), ("format" = Option<wire::ExportFormat>, Query, description = "md (the default), pdf or docx"), ("version" = Option<i64>, Query, description = "A version (default: the latest)")), 
    responses((status = 200, description = "A download in the asked format"), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody), (status = 422, body = wire::ErrorBody), (status = 429, body = wire::ErrorBody)))]
pub(crate) async fn export(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    Path(id): Path<Uuid>,
    Query(params): Query<ExportParams>,
    request_headers: axum::http::HeaderMap,
) -> Result<Response> {
    let format = match params.format.as_deref() {
        None => ExportFormat::Md,
        Some(f) => {
            ExportFormat::parse(f).ok_or_else(|| ApiError::invalid("format", "The format is md, pdf or docx."))?
        }
    };
    let (title, content, version) = match params.version {
        Some(v) => {
            let version = state.store.get_artifact_version(user.id, id, v).await?;
            (version.title, version.content, v)
        }
        None => {
            let artifact = state.store.get_artifact(user.id, id).await?;
            (artifact.title, artifact.content, artifact.version)
        }
    };
    // A version of a document never changes, so its id, number and format name the file's bytes: a client that
    // holds them gets a 304 without the file being rendered again.
    let etag = format!("\"{id}-v{version}-{}\"", format.as_str());
    let mut response = if if_none_match(&request_headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let filename = file_name(&title, format.as_str(), "document");
        let ticket = state.heavy.admit(user.id)?;
        let bytes = ticket
            .run_blocking(move || render(format, &title, &content))
            .await
            .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("rendering a document failed")))??;
        attachment(bytes, format.content_type(), &filename)
    };
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    Ok(response)
}

/// Whether `If-None-Match` names `etag` (or is `*`).
fn if_none_match(headers: &axum::http::HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.split(',').map(str::trim).any(|tag| tag == "*" || tag.trim_start_matches("W/") == etag))
}

/// The file of a document in a format.
fn render(format: ExportFormat, title: &str, content: &str) -> Result<Vec<u8>> {
    match format {
        ExportFormat::Md => Ok(md::render(content)),
        ExportFormat::Pdf => pdf::render(title, content).map_err(|e| ApiError::Internal(e.into())),
        ExportFormat::Docx => docx::render(title, content).map_err(|e| ApiError::Internal(e.into())),
    }
}
