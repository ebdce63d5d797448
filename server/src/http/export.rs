//! Taking data out and bringing it back: one conversation as JSON or Markdown, everything as JSON, and imports
//! of Quire's own JSON and of ChatGPT's `conversations.json`.

use app::api::{
    AccountExport, ExportedArtifact, ExportedMessage, ExportedThreadInfo, ImportResult, MessageStatus, Role,
    ThreadExport, Usage, ACCOUNT_EXPORT_FORMAT, EXPORT_VERSION, MAX_TITLE_CHARS, THREAD_EXPORT_FORMAT,
};
use axum::{
    extract::{DefaultBodyLimit, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    routing::{get, post},
    Router,
};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use uuid::Uuid;

use super::error::{ApiError, Result};
use super::extract::{AuthUser, Json, Path, Query};
use super::rate_limit::{Export, Quota};
use super::threads::{validate_tags, validate_title};
use crate::store::{
    self,
    history::{ImportArtifact, ImportMessage, ImportThread},
    DynStore, StoreError,
};
use crate::AppState;

/// Title of an imported conversation that has neither a title nor a first message.
const IMPORTED_TITLE: &str = "Imported conversation";

pub fn router() -> Router<AppState> {
    Router::new().route("/api/threads/{id}/export", get(export_thread)).route("/api/export", get(export_account))
}

/// The import route, outside the global body limit: it has its own (`QUIRE_MAX_IMPORT_MB`).
pub fn import_router(max_bytes: usize) -> Router<AppState> {
    Router::new()
        .route("/api/threads/import", post(import))
        // Enforced by the JSON extractor, so a refusal is the API's own 413 body.
        .layer(DefaultBodyLimit::max(max_bytes))
}

/// One conversation of the user as exported: the thread, every message with its metadata, every document.
pub async fn thread_export(store: &DynStore, user: Uuid, thread: Uuid) -> Result<ThreadExport, StoreError> {
    let info = store.get_thread(user, thread).await?;
    let (messages, artifacts) =
        tokio::try_join!(store.list_messages(user, thread), store.list_artifacts(user, thread))?;
    Ok(ThreadExport {
        format: THREAD_EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported_at: store::now(),
        thread: ExportedThreadInfo {
            id: info.id,
            title: info.title,
            tags: info.tags,
            pinned: info.pinned,
            archived: info.archived,
            created_at: info.created_at,
            updated_at: info.updated_at,
        },
        messages: messages
            .into_iter()
            .map(|m| ExportedMessage {
                id: m.id,
                seq: m.seq,
                role: m.role,
                content: m.content,
                status: m.status,
                input_tokens: m.input_tokens,
                output_tokens: m.output_tokens,
                model: m.model,
                created_at: m.created_at,
            })
            .collect(),
        artifacts: artifacts
            .into_iter()
            .map(|a| ExportedArtifact {
                id: a.id,
                artifact_type: a.artifact_type,
                title: a.title,
                content: a.content,
                version: a.version,
                request_message_id: a.request_message_id,
                assistant_message_id: a.assistant_message_id,
                created_at: a.created_at,
            })
            .collect(),
    })
}

/// Everything the user has: every conversation (archived too) and the attachments' metadata.
pub async fn account_export(store: &DynStore, user: Uuid) -> Result<AccountExport, StoreError> {
    let mut threads = Vec::new();
    for id in store.all_thread_ids(user).await? {
        match thread_export(store, user, id).await {
            Ok(export) => threads.push(export),
            // Deleted while the export ran.
            Err(StoreError::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(AccountExport {
        format: ACCOUNT_EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported_at: store::now(),
        threads,
        attachments: store.list_user_attachments(user).await?,
    })
}

fn stamp(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The conversation as a Markdown document people can read.
pub fn to_markdown(export: &ThreadExport) -> String {
    let mut out = format!("# {}\n\n", export.thread.title);
    if !export.thread.tags.is_empty() {
        out.push_str(&format!("- Tags: {}\n", export.thread.tags.join(", ")));
    }
    out.push_str(&format!("- Started: {}\n", stamp(export.thread.created_at)));
    out.push_str(&format!("- Last activity: {}\n", stamp(export.thread.updated_at)));
    out.push_str(&format!("- Messages: {}\n", export.messages.len()));
    for message in &export.messages {
        let who = match message.role {
            Role::User => "You",
            Role::Assistant => "Assistant",
        };
        out.push_str(&format!("\n---\n\n### {who} · {}", stamp(message.created_at)));
        if let Some(model) = &message.model {
            out.push_str(&format!(" · {model}"));
        }
        if message.status != MessageStatus::Complete {
            out.push_str(&format!(" · {}", message.status.as_str()));
        }
        out.push_str(&format!("\n\n{}\n", message.content.trim_end()));
    }
    if !export.artifacts.is_empty() {
        out.push_str("\n---\n\n## Documents\n");
        for artifact in &export.artifacts {
            out.push_str(&format!(
                "\n### {} ({})\n\n{}\n",
                artifact.title,
                artifact.artifact_type.label(),
                artifact.content.trim_end()
            ));
        }
    }
    out
}

/// A file name made from a title: ASCII letters and digits joined by dashes, never empty.
pub fn file_name(title: &str, extension: &str) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
        if slug.len() >= 60 {
            break;
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug = if slug.is_empty() { "conversation" } else { slug };
    format!("{slug}.{extension}")
}

/// A download: the body with its type and `Content-Disposition: attachment`.
fn download(body: String, content_type: &'static str, name: &str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    response
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportParams {
    format: Option<String>,
}

#[utoipa::path(get, path = "/api/threads/{id}/export", tag = "history", security(("session" = []), ("bearer" = [])), params(("id" = Uuid, Path, description = "Conversation id"), ("format" = Option<String>, Query, description = "json (default) or markdown")), 
    responses((status = 200, description = "A download (Content-Disposition)", content_type = "application/json"), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody), (status = 404, body = app::api::ErrorBody), (status = 422, body = app::api::ErrorBody), (status = 429, body = app::api::ErrorBody)))]
pub(crate) async fn export_thread(
    State(state): State<AppState>,
    user: AuthUser,
    _: Quota<Export>,
    Path(id): Path<Uuid>,
    Query(params): Query<ExportParams>,
) -> Result<Response> {
    let markdown = match params.format.as_deref() {
        None | Some("json") => false,
        Some("markdown") | Some("md") => true,
        Some(_) => return Err(ApiError::invalid("format", "The format is json or markdown.")),
    };
    let export = thread_export(&state.store, user.id, id).await?;
    Ok(if markdown {
        download(to_markdown(&export), "text/markdown; charset=utf-8", &file_name(&export.thread.title, "md"))
    } else {
        let body = serde_json::to_string_pretty(&export).map_err(|e| ApiError::Internal(e.into()))?;
        download(body, "application/json", &file_name(&export.thread.title, "json"))
    })
}

#[utoipa::path(get, path = "/api/export", tag = "history", security(("session" = []), ("bearer" = [])), 
    responses((status = 200, description = "All of the caller's data as one JSON download", content_type = "application/json"), (status = 401, body = app::api::ErrorBody), (status = 429, body = app::api::ErrorBody)))]
pub async fn export_account(State(state): State<AppState>, user: AuthUser, _: Quota<Export>) -> Result<Response> {
    let export = account_export(&state.store, user.id).await?;
    let body = serde_json::to_string(&export).map_err(|e| ApiError::Internal(e.into()))?;
    let name = format!("quire-export-{}.json", export.exported_at.format("%Y-%m-%d"));
    Ok(download(body, "application/json", &name))
}

#[utoipa::path(post, path = "/api/threads/import", tag = "history", security(("session" = []), ("bearer" = [])), request_body(content = Object, description = "A Quire export (one conversation or a whole account) or a ChatGPT conversations.json"),
    responses((status = 201, body = app::api::ImportResult), (status = 400, body = app::api::ErrorBody), (status = 401, body = app::api::ErrorBody), (status = 413, body = app::api::ErrorBody), (status = 422, body = app::api::ErrorBody)))]
pub async fn import(
    State(state): State<AppState>,
    user: AuthUser,
    Json(body): Json<Value>,
) -> Result<impl IntoResponse> {
    let plan = import_plan(body)?;
    let threads = state.store.import_threads(user.id, &plan).await?;
    Ok((StatusCode::CREATED, Json(ImportResult { threads })))
}

fn unrecognized(message: impl Into<String>) -> ApiError {
    ApiError::Unprocessable { code: "unsupported_import", message: message.into(), field: None }
}

/// What an import body would create, checked in full before anything is written: a Quire thread export, a
/// Quire account export, or a ChatGPT `conversations.json` (one conversation or a list of them).
pub fn import_plan(body: Value) -> Result<Vec<ImportThread>> {
    let format = body.get("format").and_then(Value::as_str).map(str::to_owned);
    let is_chatgpt_list =
        body.as_array().is_some_and(|items| !items.is_empty() && items.iter().all(|c| c.get("mapping").is_some()));
    let plan = match format.as_deref() {
        Some(THREAD_EXPORT_FORMAT) => vec![from_quire(parse_export(body)?)?],
        Some(ACCOUNT_EXPORT_FORMAT) => {
            let export: AccountExport = serde_json::from_value(body)
                .map_err(|e| unrecognized(format!("This is not a valid Quire export: {e}")))?;
            check_version(export.version)?;
            export.threads.into_iter().map(from_quire).collect::<Result<Vec<_>>>()?
        }
        Some(other) => return Err(unrecognized(format!("Unknown export format `{other}`."))),
        None if body.get("mapping").is_some() => vec![from_chatgpt(&body)?],
        None if is_chatgpt_list => {
            body.as_array().into_iter().flatten().map(from_chatgpt).collect::<Result<Vec<_>>>()?
        }
        None => {
            return Err(unrecognized(
                "Expected a Quire export (`format`: \"quire.thread\") or a ChatGPT conversations.json.",
            ))
        }
    };
    if plan.is_empty() {
        return Err(unrecognized("There is no conversation to import."));
    }
    Ok(plan)
}

fn parse_export(body: Value) -> Result<ThreadExport> {
    serde_json::from_value(body).map_err(|e| unrecognized(format!("This is not a valid Quire conversation: {e}")))
}

fn check_version(version: u32) -> Result<()> {
    if version != EXPORT_VERSION {
        return Err(unrecognized(format!("Export version {version} is not supported (expected {EXPORT_VERSION}).")));
    }
    Ok(())
}

/// A Quire thread export as an import, its document links turned into message positions.
fn from_quire(export: ThreadExport) -> Result<ImportThread> {
    check_version(export.version)?;
    let title = validate_title(&export.thread.title)?;
    let tags = validate_tags(&export.thread.tags)?;
    let mut messages = export.messages;
    messages.sort_by_key(|m| m.seq);
    if messages.first().is_some_and(|m| m.seq < 1) || messages.windows(2).any(|w| w[0].seq == w[1].seq) {
        return Err(ApiError::invalid("messages", "Message numbers (`seq`) must be positive and distinct."));
    }
    let position = |id: Option<Uuid>| -> Result<Option<usize>> {
        id.map(|id| {
            messages.iter().position(|m| m.id == id).ok_or_else(|| {
                ApiError::invalid("artifacts", "A document points at a message that is not in the export.")
            })
        })
        .transpose()
    };
    let artifacts = export
        .artifacts
        .iter()
        .map(|a| {
            if a.title.trim().is_empty() || a.version < 1 {
                return Err(ApiError::invalid("artifacts", "A document needs a title and a version of 1 or more."));
            }
            Ok(ImportArtifact {
                artifact_type: a.artifact_type,
                title: a.title.clone(),
                content: a.content.clone(),
                version: a.version,
                request_message: position(a.request_message_id)?,
                assistant_message: position(a.assistant_message_id)?,
                created_at: a.created_at,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ImportThread {
        title,
        tags,
        pinned: export.thread.pinned,
        archived: export.thread.archived,
        created_at: export.thread.created_at,
        updated_at: export.thread.updated_at,
        messages: messages
            .into_iter()
            .map(|m| ImportMessage {
                seq: m.seq,
                role: m.role,
                content: m.content,
                status: m.status,
                usage: Usage { input_tokens: m.input_tokens, output_tokens: m.output_tokens },
                model: m.model,
                created_at: m.created_at,
            })
            .collect(),
        artifacts,
    })
}

/// Seconds since the epoch (ChatGPT's `create_time`) as a time.
fn epoch_seconds(value: Option<&Value>) -> Option<DateTime<Utc>> {
    let seconds = value?.as_f64().filter(|s| s.is_finite() && *s >= 0.0 && *s < 1.0e11)?;
    DateTime::from_timestamp_micros((seconds * 1_000_000.0).round() as i64)
}

/// The visible text of a ChatGPT message: its string parts (images and other objects are left out).
fn chatgpt_text(message: &Value) -> String {
    let parts = message.pointer("/content/parts").and_then(Value::as_array);
    let texts: Vec<&str> = parts.into_iter().flatten().filter_map(Value::as_str).collect();
    texts.join("\n").trim().to_string()
}

/// One ChatGPT conversation: the path from `current_node` back to the root, in order, keeping the person's
/// and the assistant's visible messages.
fn from_chatgpt(conversation: &Value) -> Result<ImportThread> {
    let invalid = |message: &str| unrecognized(format!("Not a valid ChatGPT conversation: {message}."));
    let mapping = conversation.get("mapping").and_then(Value::as_object).ok_or_else(|| invalid("no `mapping`"))?;
    let current =
        conversation.get("current_node").and_then(Value::as_str).ok_or_else(|| invalid("no `current_node`"))?;
    let mut path = Vec::new();
    let mut next = Some(current);
    while let Some(id) = next {
        if path.len() > mapping.len() {
            return Err(invalid("the message tree has a cycle"));
        }
        let node = mapping.get(id).ok_or_else(|| invalid("a node points at a missing node"))?;
        path.push(node);
        next = node.get("parent").and_then(Value::as_str);
    }
    path.reverse();
    let started = epoch_seconds(conversation.get("create_time"));
    let mut messages: Vec<ImportMessage> = Vec::new();
    for node in path {
        let Some(message) = node.get("message").filter(|m| m.is_object()) else { continue };
        let role = match message.pointer("/author/role").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => continue,
        };
        if message.pointer("/metadata/is_visually_hidden_from_conversation").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let content = chatgpt_text(message);
        if content.is_empty() {
            continue;
        }
        let created_at = epoch_seconds(message.get("create_time"))
            .or(messages.last().map(|m| m.created_at))
            .or(started)
            .unwrap_or_else(store::now);
        let model = (role == Role::Assistant)
            .then(|| message.pointer("/metadata/model_slug").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        messages.push(ImportMessage {
            seq: messages.len() as i64 + 1,
            role,
            content,
            status: MessageStatus::Complete,
            usage: Usage::default(),
            model,
            created_at,
        });
    }
    let title = conversation.get("title").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
    let title = match title {
        Some(t) => t.chars().take(MAX_TITLE_CHARS).collect(),
        None => match messages.iter().find(|m| m.role == Role::User) {
            Some(first) => store::title_from_message(&first.content),
            None => IMPORTED_TITLE.to_string(),
        },
    };
    let created_at = started.or(messages.first().map(|m| m.created_at)).unwrap_or_else(store::now);
    let last = messages.iter().map(|m| m.created_at).max();
    let updated_at = [epoch_seconds(conversation.get("update_time")), last, Some(created_at)]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(created_at);
    Ok(ImportThread {
        title,
        tags: Vec::new(),
        pinned: false,
        archived: conversation.get("is_archived").and_then(Value::as_bool).unwrap_or(false),
        created_at,
        updated_at,
        messages,
        artifacts: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_never_empty() {
        assert_eq!(file_name("Login flow: SSO & \"e-mail\"", "md"), "login-flow-sso-e-mail.md");
        assert_eq!(file_name("Привет", "json"), "conversation.json");
        assert_eq!(file_name("../../etc/passwd", "json"), "etc-passwd.json");
    }

    #[test]
    fn chatgpt_follows_the_current_branch() {
        let conversation = serde_json::json!({
            "title": "",
            "create_time": 1_700_000_000.5,
            "current_node": "b2",
            "mapping": {
                "root": {"id": "root", "message": null, "parent": null, "children": ["u1"]},
                "u1": {"id": "u1", "parent": "root", "children": ["a1", "b2"], "message": {
                    "author": {"role": "user"}, "create_time": 1_700_000_001.0,
                    "content": {"content_type": "text", "parts": ["Plan a launch party please"]}}},
                "a1": {"id": "a1", "parent": "u1", "children": [], "message": {
                    "author": {"role": "assistant"}, "content": {"content_type": "text", "parts": ["old branch"]}}},
                "b2": {"id": "b2", "parent": "u1", "children": [], "message": {
                    "author": {"role": "assistant"}, "create_time": 1_700_000_002.0,
                    "metadata": {"model_slug": "gpt-4o"},
                    "content": {"content_type": "text", "parts": ["New branch"]}}}
            }
        });
        let thread = from_chatgpt(&conversation).unwrap();
        assert_eq!(thread.title, "Plan a launch party please");
        let texts: Vec<&str> = thread.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["Plan a launch party please", "New branch"]);
        assert_eq!(thread.messages[1].model.as_deref(), Some("gpt-4o"));
        assert!(thread.updated_at > thread.created_at);
    }
}
