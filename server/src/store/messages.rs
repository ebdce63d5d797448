//! The messages of a conversation. The storage interface both backends implement.

#[allow(unused_imports)]
use super::*;
use async_trait::async_trait;
use uuid::Uuid;

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
