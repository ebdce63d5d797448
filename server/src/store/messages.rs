//! The messages of a conversation. The storage interface both backends implement, and what both make of the
//! rows they read.

use app::api::{Message, MessageStatus};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::columns::Stored;
use super::{parse_role, MessageHead, MessageUpdate, NewMessage, Result, StoreError};

/// The messages of a conversation.
#[async_trait]
pub trait Messages: Send + Sync {
    /// Appends with the next sequence number and bumps the thread's count, in one transaction.
    async fn append_message(&self, user: Uuid, message: NewMessage) -> Result<Message>;
    /// [`append_message`](Self::append_message) outside any turn: `Conflict` while a turn heard from within
    /// `stale_after_ms` holds the thread, checked in the same transaction; `NotFound` when the thread is
    /// missing or another user's.
    async fn append_message_between_turns(
        &self,
        user: Uuid,
        message: NewMessage,
        stale_after_ms: i64,
    ) -> Result<Message>;
    /// Rewrites an answer's text, status, usage and context, as finished (searchable at once).
    async fn update_message(&self, user: Uuid, message: Uuid, update: &MessageUpdate) -> Result<()>;
    /// The thread's messages by sequence number; `NotFound` when the thread is missing or another user's.
    async fn list_messages(&self, user: Uuid, thread: Uuid) -> Result<Vec<Message>>;
    /// The thread's messages without their text, by sequence number (what the context needs of every message
    /// of a long thread); `NotFound` when the thread is missing or another user's.
    async fn list_message_heads(&self, user: Uuid, thread: Uuid) -> Result<Vec<MessageHead>>;
    /// The thread's messages numbered `from_seq` or later, by sequence number; empty when there are none or
    /// the thread is missing or another user's.
    async fn list_messages_from(&self, user: Uuid, thread: Uuid, from_seq: i64) -> Result<Vec<Message>>;
    async fn get_message(&self, user: Uuid, message: Uuid) -> Result<Message>;
    async fn message_context(&self, user: Uuid, message: Uuid) -> Result<Option<serde_json::Value>>;
    async fn delete_message(&self, user: Uuid, thread: Uuid, message: Uuid) -> Result<()>;
}

/// Whether a turn of a thread (`$1`) of a user (`$2`) heard from since `$3` holds it.
pub(crate) const TURN_RUNNING: &str = "select exists (select 1 from turns
    where thread_id = $1 and user_id = $2 and status = 'running' and heartbeat_at >= $3)";

/// The columns a [`MessageRow`] reads.
pub(crate) const MESSAGE_COLUMNS: &str =
    "id, thread_id, seq, role, content, status, input_tokens, output_tokens, model, created_at";

/// A message's row: ids and times as the backend keeps them (see [`Stored`]).
#[derive(sqlx::FromRow)]
pub(crate) struct MessageRow<I, T> {
    id: I,
    thread_id: I,
    seq: i64,
    role: String,
    content: String,
    status: String,
    input_tokens: i64,
    output_tokens: i64,
    model: Option<String>,
    created_at: T,
}

impl<I: Stored<Uuid>, T: Stored<DateTime<Utc>>> TryFrom<MessageRow<I, T>> for Message {
    type Error = StoreError;

    fn try_from(row: MessageRow<I, T>) -> Result<Self> {
        Ok(Message {
            id: row.id.read("id")?,
            thread_id: row.thread_id.read("thread_id")?,
            seq: row.seq,
            role: parse_role(&row.role)?,
            status: MessageStatus::parse(&row.status)
                .ok_or_else(|| StoreError::Corrupt(format!("status {}", row.status)))?,
            content: row.content,
            input_tokens: row.input_tokens as u64,
            output_tokens: row.output_tokens as u64,
            model: row.model,
            created_at: row.created_at.read("created_at")?,
        })
    }
}

/// A [`MessageHead`]'s row.
#[derive(sqlx::FromRow)]
pub(crate) struct MessageHeadRow<I> {
    id: I,
    seq: i64,
    role: String,
}

impl<I: Stored<Uuid>> TryFrom<MessageHeadRow<I>> for MessageHead {
    type Error = StoreError;

    fn try_from(row: MessageHeadRow<I>) -> Result<Self> {
        Ok(MessageHead { id: row.id.read("id")?, seq: row.seq, role: parse_role(&row.role)? })
    }
}
