//! Files attached to a conversation: upload (text, Markdown, PDF), list, delete.

use axum::{
    extract::{multipart::MultipartRejection, DefaultBodyLimit, Multipart, State},
    http::StatusCode,
    response::IntoResponse,
    routing::{delete, get},
    Router,
};
use tower_http::limit::RequestBodyLimitLayer;
use utoipa::openapi::{
    schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type},
    RefOr, Schema,
};
use uuid::Uuid;
use wire::{Attachment, AttachmentList, MAX_ATTACHMENTS_PER_THREAD, MAX_ATTACHMENT_BYTES};

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path};
use super::rate_limit::{Quota, Upload};
use crate::attachments::{chunk_text, ExtractError, FileKind};
use crate::AppState;
use store::{AttachmentLimits, NewAttachment, StoreError};

/// Room for the multipart framing around a file of the largest accepted size.
const MULTIPART_OVERHEAD: usize = 64 * 1024;

/// Upload and listing. Kept out of the global 1 MiB body limit: it has its own, sized for one file.
pub fn upload_router() -> Router<AppState> {
    Router::new()
        .route("/api/threads/{id}/attachments", get(list).post(upload))
        .layer(DefaultBodyLimit::disable())
        .layer(RequestBodyLimitLayer::new(MAX_ATTACHMENT_BYTES + MULTIPART_OVERHEAD))
}

/// Deletion (no body, so under the global limit like every other route).
pub fn router() -> Router<AppState> {
    Router::new().route("/api/threads/{id}/attachments/{attachment_id}", delete(remove))
}

fn unsupported() -> ApiError {
    ApiError::UnsupportedMediaType(
        "This kind of file can't be attached: attach plain text (.txt), Markdown (.md) or PDF (.pdf) files.".into(),
    )
}

/// The last path component of a client's file name, without control characters, at most 255 characters.
fn clean_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base.chars().filter(|c| !c.is_control()).take(255).collect();
    let cleaned = cleaned.trim();
    (if cleaned.is_empty() { "file" } else { cleaned }).to_string()
}

/// The form of an upload (documentation only: the handler reads the multipart stream itself).
struct UploadForm;

impl utoipa::PartialSchema for UploadForm {
    fn schema() -> RefOr<Schema> {
        let file = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("A .txt, .md or .pdf file of at most 10 MiB"));
        // Other fields are skipped; their names travel in part headers, which hold no control characters.
        let names = ObjectBuilder::new().schema_type(Type::String).pattern(Some(r"^[^\u0000-\u001f\u007f]*$"));
        ObjectBuilder::new().property("file", file).required("file").property_names(Some(names)).into()
    }
}

impl utoipa::ToSchema for UploadForm {}

#[utoipa::path(post, path = "/api/threads/{id}/attachments", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), request_body(content = UploadForm, content_type = "multipart/form-data", description = "Field `file`: a .txt, .md or .pdf file of at most 10 MiB"),
    responses((status = 201, body = wire::Attachment), (status = 400, body = wire::ErrorBody), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody), (status = 409, body = wire::ErrorBody),
        (status = 413, body = wire::ErrorBody, description = "The file is larger than 10 MiB, or the account's files would pass its storage allowance (`storage_quota_exceeded`)"), (status = 415, body = wire::ErrorBody),
        (status = 422, body = wire::ErrorBody, description = "No `file` field, text that is not UTF-8, or a file that could not be read (`unreadable_file`)"),
        (status = 429, body = wire::ErrorBody, description = "Too many uploads, or too much file work under way; `Retry-After` says when to try again")))]
pub async fn upload(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Upload>,
    Path(thread): Path<Uuid>,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> Result<impl IntoResponse> {
    let mut multipart = multipart.map_err(|_| {
        ApiError::UnsupportedMediaType("Send the file as multipart/form-data with a `file` field.".into())
    })?;
    // The thread first: another user's thread is a 404 whatever the body holds.
    state.store.get_thread(user.id, thread).await?;
    // A place in the heavy-work queue before the body is read: at most that many files are held in memory.
    let ticket = state.heavy.admit(user.id)?;
    let too_large = |status: StatusCode| {
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else {
            ApiError::bad_request("invalid_multipart", "The upload could not be read.")
        }
    };
    let mut file = None;
    while let Some(field) = multipart.next_field().await.map_err(|e| too_large(e.status()))? {
        let Some(name) = field.file_name().map(clean_filename) else { continue };
        let content_type = field.content_type().map(str::to_string);
        let bytes = field.bytes().await.map_err(|e| too_large(e.status()))?;
        file = Some((name, content_type, bytes));
        break;
    }
    let (filename, content_type, bytes) =
        file.ok_or_else(|| ApiError::invalid("file", "Attach a file in the `file` field."))?;
    if bytes.len() > MAX_ATTACHMENT_BYTES {
        return Err(ApiError::PayloadTooLarge);
    }
    let kind = FileKind::detect(content_type.as_deref(), &filename, &bytes).ok_or_else(unsupported)?;
    let size = bytes.len() as i64;
    let text = {
        let _running = ticket.start().await;
        state.extractor.extract(kind, bytes.into()).await.map_err(|e| match e {
            ExtractError::NotUtf8 => ApiError::invalid("file", "The file is not valid UTF-8 text."),
            ExtractError::Unreadable => {
                let message = "This file could not be read: it may be damaged, encrypted or too complex.";
                ApiError::unprocessable("unreadable_file", message, Some("file"))
            }
            ExtractError::Spawn(e) => ApiError::Internal(e.into()),
        })?
    };
    // Personal data is replaced before the text is split and indexed, so no chunk, index entry or search
    // result holds it; the file's name too, which the model reads with every passage.
    let redact = state.config.redact_pii;
    let filename = crate::privacy::redact_if(redact, filename, 255);
    let chunks = ticket
        .run_blocking(move || {
            let text = if redact { crate::privacy::redact(&text) } else { text };
            chunk_text(&text)
        })
        .await
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("chunking a file failed")))?;
    drop(ticket);
    if chunks.is_empty() {
        return Err(ApiError::invalid("file", "No text could be read from this file."));
    }
    let new = NewAttachment { thread_id: thread, filename, content_type: kind.content_type().into(), size, chunks };
    let limits =
        AttachmentLimits { per_thread: MAX_ATTACHMENTS_PER_THREAD, user_bytes: state.config.user_storage_bytes() };
    let attachment = state.store.create_attachment(user.id, new, limits).await.map_err(|e| match e {
        StoreError::Conflict(_) => ApiError::Conflict(format!(
            "This conversation already has {MAX_ATTACHMENTS_PER_THREAD} files; delete one to attach another."
        )),
        StoreError::QuotaExceeded => ApiError::QuotaExceeded(format!(
            "Your files would use more than your {} MiB of storage; delete some to attach this one.",
            state.config.user_storage_mb
        )),
        other => other.into(),
    })?;
    Ok((StatusCode::CREATED, Json::<Attachment>(attachment)))
}

#[utoipa::path(get, path = "/api/threads/{id}/attachments", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id")), 
    responses((status = 200, body = wire::AttachmentList), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    user: AuthUser,
    Path(thread): Path<Uuid>,
) -> Result<Json<AttachmentList>> {
    Ok(Json(AttachmentList { attachments: state.store.list_attachments(user.id, thread).await? }))
}

#[utoipa::path(delete, path = "/api/threads/{id}/attachments/{attachment_id}", tag = "artifacts", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id"), ("attachment_id" = Uuid, Path, description = "File id")), 
    responses((status = 204, description = "Removed with its indexed text"), (status = 401, body = wire::ErrorBody), (status = 404, body = wire::ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    user: AuthUser,
    Path((thread, attachment)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode> {
    state.store.delete_attachment(user.id, thread, attachment).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_lose_paths_and_control_characters() {
        assert_eq!(clean_filename("C:\\Users\\me\\notes.pdf"), "notes.pdf");
        assert_eq!(clean_filename("../../etc/pass\nwd"), "passwd");
        assert_eq!(clean_filename("  "), "file");
    }
}
