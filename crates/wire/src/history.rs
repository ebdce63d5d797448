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

/// Most conversations one import creates.
pub const MAX_IMPORT_THREADS: usize = 10_000;
/// Most messages one imported conversation holds.
pub const MAX_IMPORT_MESSAGES: usize = 10_000;
/// Most documents one imported conversation holds.
pub const MAX_IMPORT_DOCUMENTS: usize = 1_000;
/// Longest imported message or document, in characters. Longer than a typed message
/// ([`MAX_MESSAGE_CHARS`](super::MAX_MESSAGE_CHARS)): other apps' long answers and pasted texts import whole.
pub const MAX_IMPORTED_TEXT_CHARS: usize = 100_000;
/// Highest message number (`seq`) an import may carry: far below the largest number a conversation can count
/// to, so it keeps room for every message written after it.
pub const MAX_IMPORTED_SEQ: i64 = i32::MAX as i64;
/// Highest document version an import may carry, for the same reason.
pub const MAX_IMPORTED_VERSION: i64 = i32::MAX as i64;
/// Most tokens one imported message may have cost (far beyond any model's window), so sums stay in range.
pub const MAX_IMPORTED_TOKENS: u64 = 10_000_000;
/// Longest model name, in characters.
pub const MAX_MODEL_CHARS: usize = 200;
/// Most changes of requirements (revisions) one imported conversation holds, all requirements together.
pub const MAX_IMPORT_REQUIREMENT_REVISIONS: usize = 20_000;

/// What a search hit points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    Message,
    Thread,
    Artifact,
}

/// One hit of `GET /api/search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// `GET /api/search`: a page of hits, best first, and how many there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchResults {
    pub results: Vec<SearchResult>,
    /// How many hits there are (at least as many when `total_is_lower_bound`).
    pub total: u64,
    /// A word found in more of one's messages (or titles, or documents) than are ranked per search: only the
    /// newest were ranked and counted, and there are more.
    #[serde(default)]
    pub total_is_lower_bound: bool,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// A tag and how many conversations carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TagCount {
    pub tag: String,
    pub count: u64,
}

/// `GET /api/tags`: every tag of the account, most used first (ties by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TagList {
    pub tags: Vec<TagCount>,
}

/// Activity and tokens metered on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TypeCount {
    pub artifact_type: ArtifactType,
    pub count: u64,
}

/// `GET /api/stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HistoryStats {
    pub total_threads: u64,
    pub total_messages: u64,
    /// Messages per conversation (0 without conversations).
    pub average_messages_per_thread: f64,
    /// When the oldest conversation was started.
    #[cfg_attr(feature = "browser", serde(default, deserialize_with = "crate::time::rfc3339_or_null"))]
    pub first_conversation_at: Option<DateTime<Utc>>,
    /// The latest activity in any conversation.
    #[cfg_attr(feature = "browser", serde(default, deserialize_with = "crate::time::rfc3339_or_null"))]
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
    /// The person's daily token budget and what is left of it today; `None` when they have none.
    #[serde(default)]
    pub budget: Option<TokenBudget>,
}

/// A person's daily token budget, counted in UTC days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenBudget {
    /// Tokens (input and output) the person may spend in a day.
    pub limit: u64,
    /// Tokens spent today.
    pub used_today: u64,
    /// Tokens left today (0 once spent: a turn started within the budget may pass it).
    pub left: u64,
    /// When the budget starts again: the next midnight, UTC.
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub resets_at: DateTime<Utc>,
}

/// A conversation's own fields in an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedThreadInfo {
    pub id: Uuid,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::Title, inline))]
    pub title: String,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::Tags, inline))]
    pub tags: Vec<String>,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub updated_at: DateTime<Utc>,
    /// The message shown last (the end of the active path); absent: the last message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_message_id: Option<Uuid>,
}

/// A message in an export, with its metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedMessage {
    pub id: Uuid,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::MessageNumber, inline))]
    pub seq: i64,
    pub role: Role,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ImportedText, inline))]
    pub content: String,
    pub status: MessageStatus,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::TokenCount, inline))]
    pub input_tokens: u64,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::TokenCount, inline))]
    pub output_tokens: u64,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<super::schema::ModelName>, inline))]
    pub model: Option<String>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// The message it follows, a message before it in the export; absent for a first message. An export without
    /// any is one path, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<Uuid>,
}

/// A document in an export; its message links point at messages of the same export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedArtifact {
    pub id: Uuid,
    pub artifact_type: ArtifactType,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::Title, inline))]
    pub title: String,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ImportedText, inline))]
    pub content: String,
    #[serde(default = "first_version")]
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ArtifactVersionNumber, inline))]
    pub version: i64,
    #[serde(default)]
    pub request_message_id: Option<Uuid>,
    #[serde(default)]
    pub assistant_message_id: Option<Uuid>,
    /// Who wrote this version; a person's versions are the importing person's once imported.
    #[serde(default)]
    pub author: super::VersionAuthor,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// The requirements this version reflects, each at the revision it stood at.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(max_items = 2000))]
    pub requirements: Vec<ExportedCitation>,
}

/// A requirement as a document version reflects it: its key, at one of its revisions in the export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedCitation {
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::RequirementKey, inline))]
    pub key: String,
    /// The `revision` of one of the requirement's revisions in the export.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::RevisionNumber, inline))]
    pub revision: i64,
}

/// A requirement of an exported conversation, with every change made to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedRequirement {
    /// `R-1`, `R-2`...: distinct within the conversation, kept by an import.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::RequirementKey, inline))]
    pub key: String,
    /// Oldest first: the first states it, the last is where it stands.
    #[serde(deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20000))]
    pub revisions: Vec<ExportedRequirementRevision>,
}

/// One change of a requirement: its whole state after the change, and what made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExportedRequirementRevision {
    /// Distinct within the conversation; documents' `requirements` name it.
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::RevisionNumber, inline))]
    pub revision: i64,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::RequirementText, inline))]
    pub text: String,
    pub kind: super::RequirementKind,
    pub status: super::RequirementStatus,
    /// The person's message that caused it, a message of the export; absent for a change made in the ledger
    /// itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<Uuid>,
    /// Who made it; a person's changes are the importing person's once imported.
    #[serde(default)]
    pub author: super::VersionAuthor,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

fn first_version() -> i64 {
    1
}

/// `GET /api/threads/{id}/export?format=json`, and what `POST /api/threads/import` takes back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ThreadExport {
    /// Always [`THREAD_EXPORT_FORMAT`].
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ThreadFormat, inline))]
    pub format: String,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ExportVersion, inline))]
    pub version: u32,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub exported_at: DateTime<Utc>,
    #[serde(deserialize_with = "super::objects::one")]
    pub thread: ExportedThreadInfo,
    /// An import takes at most 10000 (`MAX_IMPORT_MESSAGES`).
    #[serde(deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(max_items = 10000))]
    pub messages: Vec<ExportedMessage>,
    /// An import takes at most 1000 (`MAX_IMPORT_DOCUMENTS`).
    #[serde(default, deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub artifacts: Vec<ExportedArtifact>,
    /// The steps of the conversation's turns, silent generations included. An import accepts them and keeps
    /// none: they tell how the original answers were written, not the copy's.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "super::objects::many")]
    pub traces: Vec<super::Trace>,
    /// The requirements ledger, every branch's requirements with their whole history. An import takes at most
    /// 2000 requirements (`MAX_REQUIREMENTS`) and 20000 revisions in all (`MAX_IMPORT_REQUIREMENT_REVISIONS`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(max_items = 2000))]
    pub requirements: Vec<ExportedRequirement>,
}

/// An attachment's metadata (its content is not exported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttachmentMeta {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
}

/// `GET /api/export`: everything the caller has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AccountExport {
    /// Always [`ACCOUNT_EXPORT_FORMAT`].
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::AccountFormat, inline))]
    pub format: String,
    #[cfg_attr(feature = "openapi", schema(value_type = super::schema::ExportVersion, inline))]
    pub version: u32,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub exported_at: DateTime<Utc>,
    /// An import takes at most 10000 (`MAX_IMPORT_THREADS`).
    #[serde(deserialize_with = "super::objects::many")]
    #[cfg_attr(feature = "openapi", schema(max_items = 10000))]
    pub threads: Vec<ThreadExport>,
    #[serde(default, deserialize_with = "super::objects::many")]
    pub attachments: Vec<AttachmentMeta>,
}

/// `POST /api/threads/import`: the conversations created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportResult {
    pub threads: Vec<Thread>,
}

/// `GET /api/messages/{id}/context`: what the model saw for one answer, kept with the answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    /// Passages of attached files that `document_search` returned to the model, in the order it received them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passages: Vec<ContextPassage>,
    /// The requirements ledger as the model was given it (in force first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ledger: Vec<ContextRequirement>,
}

/// One requirement of the ledger as the model was given it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContextRequirement {
    pub key: String,
    pub text: String,
    pub kind: crate::RequirementKind,
    pub status: crate::RequirementStatus,
}

/// One passage of an attached file as the model received it from `document_search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContextPassage {
    pub attachment_id: Uuid,
    pub filename: String,
    /// The title of the conversation the file is attached to, when it is another conversation of the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// The passage's number in its file, from 0.
    pub chunk: i64,
    /// The start of the passage (at most [`PASSAGE_EXCERPT_CHARS`] characters).
    pub excerpt: String,
    /// How well it matched the query: higher is better, on the database's own scale (not comparable between
    /// SQLite and PostgreSQL).
    pub score: f64,
}

/// Longest excerpt of a passage kept in the context record, in characters.
pub const PASSAGE_EXCERPT_CHARS: usize = 300;
