//! Wire types shared by the server, the browser client and the tests: requests, responses, the chat event stream
//! and its SSE codec, and the validation both sides apply. No web framework: the server, the views and the store
//! all build on it.

pub mod admin;
pub mod artifacts;
pub mod auth;
pub mod events;
pub mod forms;
pub mod history;
pub mod mcp;
pub mod models;
pub mod objects;
pub mod projects;
pub mod requirements;
#[cfg(feature = "openapi")]
pub mod schema;
pub mod settings;
pub mod sse;
pub mod time;
pub mod tokens;
pub mod trace;
pub mod validate;
pub use artifacts::*;
pub use auth::*;
pub use events::*;
pub use history::*;
pub use mcp::*;
pub use models::*;
pub use projects::*;
pub use requirements::*;
pub use settings::*;
pub use tokens::*;
pub use trace::*;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Largest accepted message, in characters.
pub const MAX_MESSAGE_CHARS: usize = 10_000;
/// Largest accepted thread title, in characters.
pub const MAX_TITLE_CHARS: usize = 500;
/// Most tags on one thread.
pub const MAX_TAGS: usize = 10;
/// Longest tag, in characters.
pub const MAX_TAG_CHARS: usize = 50;

/// The body of every error response: `{"error": {"code", "message", "field"?}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong, for people (`message`) and programs (`code`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// `GET /api/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Health {
    pub status: String,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// How an answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    /// Finished normally.
    Complete,
    /// Cut short by a failure (model, network or server); the text so far is kept.
    Interrupted,
    /// Stopped on purpose by the person.
    Stopped,
    /// Nothing usable came back.
    Error,
}

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Complete => "complete",
            MessageStatus::Interrupted => "interrupted",
            MessageStatus::Stopped => "stopped",
            MessageStatus::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "complete" => MessageStatus::Complete,
            "interrupted" => MessageStatus::Interrupted,
            "stopped" => MessageStatus::Stopped,
            "error" => MessageStatus::Error,
            _ => return None,
        })
    }
}

/// Token counts of one answer (or a sum of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A conversation as listed and shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Thread {
    pub id: Uuid,
    pub title: String,
    /// The model the conversation's answers come from (`provider/model`); `None`: the person's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The MCP servers whose tools the conversation is offered (`GET /api/mcp/servers`); `None`: the person's
    /// choice in their settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<String>>,
    /// The project it belongs to; `None`: its author's alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    pub tags: Vec<String>,
    pub pinned: bool,
    pub archived: bool,
    pub message_count: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_message: Option<String>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub updated_at: DateTime<Utc>,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Message {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub seq: i64,
    pub role: Role,
    pub content: String,
    pub status: MessageStatus,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// The message it follows (its question, for an answer); none for a conversation's first messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<Uuid>,
    /// The passage of a document the person asked about ("Ask about this").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<Quote>,
    /// Who wrote a person's message when it was not the conversation's author (a project's editor); see
    /// [`ThreadDetail::writers`] for their names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author_id: Option<Uuid>,
}

impl Message {
    /// A complete message that cost no tokens, names no model and follows no other, dated the epoch: one held
    /// outside the store, such as a message shown before its stored copy is read.
    pub fn complete(id: Uuid, thread_id: Uuid, seq: i64, role: Role, content: impl Into<String>) -> Self {
        Message {
            id,
            thread_id,
            seq,
            role,
            content: content.into(),
            status: MessageStatus::Complete,
            input_tokens: 0,
            output_tokens: 0,
            model: None,
            created_at: DateTime::UNIX_EPOCH,
            parent_id: None,
            quote: None,
            author_id: None,
        }
    }
}

/// A message of the shown path that has siblings: other versions of it (edits, or other answers to the same
/// question), each starting a branch of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Branching {
    pub message_id: Uuid,
    /// Every version, itself included, oldest first.
    pub siblings: Vec<Uuid>,
}

/// `POST /api/threads/{id}/branch`: shows the branch through `message_id` (down to its newest message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SwitchBranch {
    pub message_id: Uuid,
}

/// The kinds of document (artifact): the five people ask for by name, and any other (`Custom`). The one enum of
/// them: the API, the store, request detection and the built-in assistant all use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ArtifactType {
    UserStories,
    BusinessRequirements,
    RequirementsDoc,
    AcceptanceCriteria,
    MeetingSummary,
    Custom,
}

impl ArtifactType {
    pub const ALL: [ArtifactType; 6] = [
        ArtifactType::UserStories,
        ArtifactType::BusinessRequirements,
        ArtifactType::RequirementsDoc,
        ArtifactType::AcceptanceCriteria,
        ArtifactType::MeetingSummary,
        ArtifactType::Custom,
    ];

    /// The five kinds people ask for by name (all but [`ArtifactType::Custom`]).
    pub const NAMED: [ArtifactType; 5] = [
        ArtifactType::UserStories,
        ArtifactType::BusinessRequirements,
        ArtifactType::RequirementsDoc,
        ArtifactType::AcceptanceCriteria,
        ArtifactType::MeetingSummary,
    ];

    /// The name used on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactType::UserStories => "user_stories",
            ArtifactType::BusinessRequirements => "business_requirements",
            ArtifactType::RequirementsDoc => "requirements_doc",
            ArtifactType::AcceptanceCriteria => "acceptance_criteria",
            ArtifactType::MeetingSummary => "meeting_summary",
            ArtifactType::Custom => "custom",
        }
    }

    /// The name people read.
    pub fn label(self) -> &'static str {
        match self {
            ArtifactType::UserStories => "User Stories",
            ArtifactType::BusinessRequirements => "Business Requirements",
            ArtifactType::RequirementsDoc => "Requirements Document",
            ArtifactType::AcceptanceCriteria => "Acceptance Criteria",
            ArtifactType::MeetingSummary => "Meeting Summary",
            ArtifactType::Custom => "Document",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        ArtifactType::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// A document written by the assistant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Artifact {
    pub id: Uuid,
    pub thread_id: Uuid,
    pub artifact_type: ArtifactType,
    pub title: String,
    pub content: String,
    pub version: i64,
    /// The user message whose turn created it; `None` for silent generation.
    #[serde(default)]
    pub request_message_id: Option<Uuid>,
    /// The assistant answer of that turn; `None` for silent generation.
    #[serde(default)]
    pub assistant_message_id: Option<Uuid>,
    #[cfg_attr(feature = "browser", serde(deserialize_with = "crate::time::rfc3339"))]
    pub created_at: DateTime<Utc>,
    /// The requirement keys (`R-1`...) its current version cites, in key order.
    #[serde(default)]
    pub requirements: Vec<String>,
    /// The requirements its current version reflects that were changed or dropped since, on the path shown;
    /// empty when it is current.
    #[serde(default)]
    pub out_of_date: Vec<OutOfDate>,
    /// The other conversations of the project whose requirements it cites (`R-3@<reference>` in
    /// [`requirements`](Self::requirements)).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cited_conversations: Vec<CitedConversation>,
}

/// `POST /api/threads`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateThread {
    /// "New conversation" when left out.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<schema::Title>, inline))]
    pub title: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<schema::Tags>, inline))]
    pub tags: Option<Vec<String>>,
}

/// `PATCH /api/threads/{id}`: the fields to change; the others stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateThread {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<schema::Title>, inline))]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<schema::Tags>, inline))]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<bool>,
    /// A model of `GET /api/models`; an empty string goes back to the person's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The MCP servers (of `GET /api/mcp/servers`) whose tools the conversation is offered, none for an empty list;
    /// `null` goes back to the person's choice. Only the conversation's author chooses.
    #[serde(default, deserialize_with = "projects::present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<String>>, nullable))]
    pub mcp_servers: Option<Option<Vec<String>>>,
    /// A project the author edits in, to move the conversation into; `null` takes it out of its project. Only
    /// the conversation's author moves it.
    #[serde(default, deserialize_with = "projects::present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Uuid>, nullable))]
    pub project_id: Option<Option<Uuid>>,
}

/// `GET /api/threads`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ThreadList {
    pub threads: Vec<Thread>,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// `GET /api/threads/{id}`: the thread with its messages in order and its documents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ThreadDetail {
    pub thread: Thread,
    /// The shown path, from the first message to the active one (what the model sees).
    pub messages: Vec<Message>,
    /// The messages of the path that have siblings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<Branching>,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    /// Whether an answer is being written right now (re-attach with `GET .../stream`).
    #[serde(default)]
    pub running: bool,
    /// What the caller may do here: all of it as its `author`; as a member of its project, write messages and
    /// edit its documents and requirements (`editor`) or read it (`viewer`).
    #[serde(default)]
    pub access: ThreadAccess,
    /// Who wrote in it, in a conversation of a project (or one that was): its author first, then every member who
    /// sent a message ([`Message::author_id`]) by name; empty for a conversation only its author wrote in. A message whose
    /// author is not listed is a former member's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writers: Vec<Writer>,
    /// Calls of MCP tools waiting for a decision of someone who writes in it, oldest first (shown with Approve and
    /// Deny until they are decided).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<ToolApproval>,
}

/// What the caller may do in a conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ThreadAccess {
    /// They wrote it: everything.
    #[default]
    Author,
    /// An editor or owner of its project: its documents and requirements too.
    Editor,
    /// A viewer of its project: read and export.
    Viewer,
}

impl ThreadAccess {
    /// Whether they may write in it: send messages, and change its documents and requirements.
    pub fn writes(self) -> bool {
        self != Self::Viewer
    }
}

/// `POST /api/threads/{id}/chat`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ChatRequest {
    #[cfg_attr(feature = "openapi", schema(value_type = schema::MessageText, inline))]
    pub content: String,
    /// Silent generation: make the document without saving any chat message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_generation: Option<bool>,
    /// Edit and resend: the message is a new version of this message of the person's (a sibling of it, the
    /// old branch kept) and is answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_of: Option<Uuid>,
    /// "Ask about this": a passage of one of the conversation's documents that the message is about; it is kept
    /// with the message and shown to the model with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<Quote>,
}

/// A passage of a document that a message is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Quote {
    /// A document of the same conversation.
    pub artifact_id: Uuid,
    /// The passage, as the person selected it (at most [`MAX_QUOTE_CHARS`] characters, not blank).
    pub text: String,
}

/// Longest quoted passage, in characters.
pub const MAX_QUOTE_CHARS: usize = 4_000;

/// `POST /api/threads/{id}/messages`: a person's message added to the conversation without asking the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddMessage {
    pub content: String,
}
