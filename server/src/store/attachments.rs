//! Files attached to a conversation and their indexed chunks. The storage interface both backends implement.

#[allow(unused_imports)]
use super::*;
use async_trait::async_trait;
use uuid::Uuid;

/// Files attached to a conversation and their indexed chunks.
#[async_trait]
pub trait Attachments: Send + Sync {
    /// Saves a file's metadata and its chunks (indexed for full-text search) in one transaction. `NotFound`
    /// when the thread is missing or another user's; `Conflict` when the thread already has `per_thread` files;
    /// `QuotaExceeded` when the account's files would pass `user_bytes`.
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment>;
    /// The thread's attachments, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>>;
    /// Removes an attachment of the thread and its chunks.
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()>;
    /// The thread's chunks that match any word of the query, best first.
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>>;
}
