//! Exports: one conversation with everything in it, as JSON (which imports back) or as Markdown people can
//! read, and everything a person has as one JSON file.

use app::api::{
    AccountExport, ExportedArtifact, ExportedMessage, ExportedThreadInfo, MessageStatus, Role, ThreadExport,
    ACCOUNT_EXPORT_FORMAT, EXPORT_VERSION, THREAD_EXPORT_FORMAT,
};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Error, Result};
use crate::heavy::Ticket;
use crate::store::{self, DynStore, StoreError};

/// How a conversation is downloaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadFormat {
    /// Quire's own format, which imports back.
    Json,
    /// A document people can read.
    Markdown,
}

/// A file to download: its text, its type and the name to save it under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Download {
    pub body: String,
    pub content_type: &'static str,
    pub file_name: String,
}

/// One conversation of the user as exported: the thread, every message with its metadata, every document, the
/// traces of its turns.
pub async fn thread(store: &DynStore, user: Uuid, thread: Uuid) -> Result<ThreadExport, StoreError> {
    let info = store.get_thread(user, thread).await?;
    let (messages, tree, artifacts, traces) = tokio::try_join!(
        store.list_messages(user, thread),
        store.message_tree(user, thread),
        store.list_artifacts(user, thread),
        store.thread_traces(user, thread)
    )?;
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
            active_message_id: tree.path().last().map(|h| h.id),
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
                parent_id: m.parent_id,
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
        traces,
    })
}

/// Everything the user has: every conversation (archived too) and the attachments' metadata.
pub async fn account(store: &DynStore, user: Uuid) -> Result<AccountExport, StoreError> {
    let mut threads = Vec::new();
    for id in store.all_thread_ids(user).await? {
        match thread(store, user, id).await {
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

/// One conversation as a download in `format`, its text written on a blocking thread of the heavy-work queue
/// (the job `ticket` admitted).
pub async fn thread_download(
    store: &DynStore,
    user: Uuid,
    id: Uuid,
    format: ThreadFormat,
    ticket: &Ticket,
) -> Result<Download> {
    let export = thread(store, user, id).await?;
    ticket.run_blocking(move || render_thread(&export, format)).await.ok_or(Error::Task)?
}

/// Everything the user has as one JSON download, its text written on a blocking thread of the heavy-work queue
/// (the job `ticket` admitted).
pub async fn account_download(store: &DynStore, user: Uuid, ticket: &Ticket) -> Result<Download> {
    let export = account(store, user).await?;
    ticket
        .run_blocking(move || {
            Ok(Download {
                body: serde_json::to_string(&export).map_err(Error::Render)?,
                content_type: "application/json",
                file_name: format!("quire-export-{}.json", export.exported_at.format("%Y-%m-%d")),
            })
        })
        .await
        .ok_or(Error::Task)?
}

fn render_thread(export: &ThreadExport, format: ThreadFormat) -> Result<Download> {
    Ok(match format {
        ThreadFormat::Json => Download {
            body: serde_json::to_string_pretty(export).map_err(Error::Render)?,
            content_type: "application/json",
            file_name: crate::download::file_name(&export.thread.title, "json", "conversation"),
        },
        ThreadFormat::Markdown => Download {
            body: to_markdown(export),
            content_type: "text/markdown; charset=utf-8",
            file_name: crate::download::file_name(&export.thread.title, "md", "conversation"),
        },
    })
}

fn stamp(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// The messages of the path an export shows: from a first message to its active message (the last message when
/// it names none). An export without parents is one path, in order.
fn shown_path(export: &ThreadExport) -> Vec<&ExportedMessage> {
    if export.messages.iter().all(|m| m.parent_id.is_none()) {
        return export.messages.iter().collect();
    }
    let by_id: std::collections::HashMap<Uuid, &ExportedMessage> = export.messages.iter().map(|m| (m.id, m)).collect();
    let mut next = export.thread.active_message_id.filter(|id| by_id.contains_key(id));
    next = next.or_else(|| export.messages.last().map(|m| m.id));
    let mut path = Vec::new();
    while let Some(message) = next.and_then(|id| by_id.get(&id)).filter(|_| path.len() < export.messages.len()) {
        path.push(*message);
        next = message.parent_id;
    }
    path.reverse();
    path
}

/// The conversation as a Markdown document people can read: the path it shows.
pub fn to_markdown(export: &ThreadExport) -> String {
    use std::fmt::Write;
    let mut out = format!("# {}\n\n", export.thread.title);
    // Writing to a String cannot fail.
    if !export.thread.tags.is_empty() {
        let _ = writeln!(out, "- Tags: {}", export.thread.tags.join(", "));
    }
    let _ = writeln!(out, "- Started: {}", stamp(export.thread.created_at));
    let _ = writeln!(out, "- Last activity: {}", stamp(export.thread.updated_at));
    let shown = shown_path(export);
    let _ = writeln!(out, "- Messages: {}", shown.len());
    if shown.len() < export.messages.len() {
        let _ = writeln!(out, "- Other branches: {} messages, not shown", export.messages.len() - shown.len());
    }
    for message in shown {
        let who = match message.role {
            Role::User => "You",
            Role::Assistant => "Assistant",
        };
        let _ = write!(out, "\n---\n\n### {who} · {}", stamp(message.created_at));
        if let Some(model) = &message.model {
            let _ = write!(out, " · {model}");
        }
        if message.status != MessageStatus::Complete {
            let _ = write!(out, " · {}", message.status.as_str());
        }
        let _ = writeln!(out, "\n\n{}", message.content.trim_end());
    }
    if !export.artifacts.is_empty() {
        out.push_str("\n---\n\n## Documents\n");
        for artifact in &export.artifacts {
            let _ = writeln!(
                out,
                "\n### {} ({})\n\n{}",
                artifact.title,
                artifact.artifact_type.label(),
                artifact.content.trim_end()
            );
        }
    }
    out
}
