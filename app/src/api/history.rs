//! Wire types of the conversation history: search, stats, export and import, and what the model saw.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{ArtifactType, MessageStatus, Role, Thread};

/// The `format` of a one-conversation export.
pub const THREAD_EXPORT_FORMAT: &str = "quire.thread";
/// The `format` of an export of everything a person has.
pub const ACCOUNT_EXPORT_FORMAT: &str = "quire.export";
/// The version of both export formats.
pub const EXPORT_VERSION: u32 = 1;

/// What a search hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    Message,
    Thread,
    Artifact,
}

/// One hit of `GET /api/search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SearchResult {
    pub kind: SearchKind,
    pub thread_id: Uuid,
    pub thread_title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// HTML-escaped text around the hit, the matching words inside `<mark>`.
    pub snippet: String,
    pub created_at: DateTime<Utc>,
}

/// `GET /api/search`: a page of hits, best first, and how many there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
    pub total: u64,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A tag and how many conversations carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TagCount {
    pub tag: String,
    pub count: u64,
}

/// Activity and tokens metered on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DayTokens {
    pub day: NaiveDate,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Messages (the person's and the assistant's) written that day.
    #[serde(default)]
    pub messages: u64,
}

/// How many documents of one type exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TypeCount {
    pub artifact_type: ArtifactType,
    pub count: u64,
}

/// `GET /api/stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct HistoryStats {
    pub total_threads: u64,
    pub total_messages: u64,
    /// Messages per conversation (0 without conversations).
    pub average_messages_per_thread: f64,
    /// When the oldest conversation was started.
    pub first_conversation_at: Option<DateTime<Utc>>,
    /// The latest activity in any conversation.
    pub last_conversation_at: Option<DateTime<Utc>>,
    /// The most used tags, most used first (ties by name).
    pub top_tags: Vec<TagCount>,
    /// Tokens sent to and received from models, as metered (imported history costs none).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The last 30 UTC days, oldest first, today last: tokens and messages; days without use are zero.
    pub tokens_per_day: Vec<DayTokens>,
    /// Documents by type, most first (ties by type name).
    pub artifacts_by_type: Vec<TypeCount>,
}

/// A conversation's own fields in an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExportedThreadInfo {
    pub id: Uuid,
    pub title: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A message in an export, with its metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExportedMessage {
    pub id: Uuid,
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub model: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A document in an export; its message links point at messages of the same export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ExportedArtifact {
    pub id: Uuid,
    pub artifact_type: ArtifactType,
    pub title: String,
    pub content: String,
    #[serde(default = "first_version")]
    pub version: i64,
    #[serde(default)]
    pub request_message_id: Option<Uuid>,
    #[serde(default)]
    pub assistant_message_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
}

fn first_version() -> i64 {
    1
}

/// `GET /api/threads/{id}/export?format=json`, and what `POST /api/threads/import` takes back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ThreadExport {
    /// Always [`THREAD_EXPORT_FORMAT`].
    pub format: String,
    pub version: u32,
    pub exported_at: DateTime<Utc>,
    pub thread: ExportedThreadInfo,
    pub messages: Vec<ExportedMessage>,
    #[serde(default)]
    pub artifacts: Vec<ExportedArtifact>,
}

/// An attachment's metadata (its content is not exported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AttachmentMeta {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub created_at: DateTime<Utc>,
}

/// `GET /api/export`: everything the caller has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AccountExport {
    /// Always [`ACCOUNT_EXPORT_FORMAT`].
    pub format: String,
    pub version: u32,
    pub exported_at: DateTime<Utc>,
    pub threads: Vec<ThreadExport>,
    #[serde(default)]
    pub attachments: Vec<AttachmentMeta>,
}

/// `POST /api/threads/import`: the conversations created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ImportResult {
    pub threads: Vec<Thread>,
}

/// `GET /api/messages/{id}/context`: what the model saw for one answer, kept with the answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ContextRecord {
    /// Messages sent, in order.
    pub included: Vec<Uuid>,
    /// Messages left out because their request was already fulfilled (or, for answers without a request,
    /// because they cannot start a conversation).
    pub filtered: Vec<Uuid>,
    /// Messages left out to fit the budget.
    pub truncated: Vec<Uuid>,
    /// Tokens of the messages sent (system prompt and tools not counted).
    pub tokens: usize,
    pub budget: usize,
    pub provider: String,
    pub model: String,
    /// The note that stood in for dropped turns, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
