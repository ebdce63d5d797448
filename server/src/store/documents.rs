//! Storage types of documents: revisions of artifacts, attachments and their searchable chunks.

#[allow(unused_imports)]
use super::*;
use async_trait::async_trait;
use uuid::Uuid;

use super::StoreError;

/// A new version of an existing document.
#[derive(Debug, Clone)]
pub struct ArtifactRevision {
    pub title: String,
    pub content: String,
    /// The user message that asked for the revision; `None` for silent generation.
    pub request_message_id: Option<Uuid>,
    /// Earlier requests of the thread this version answers too (see [`super::NewArtifact::answers`]).
    pub answers: Vec<Uuid>,
}

/// A file to attach, with its text already split into chunks.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub thread_id: Uuid,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub chunks: Vec<String>,
}

/// Bounds one upload must keep, checked in the transaction that saves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttachmentLimits {
    /// Files one conversation holds at most.
    pub per_thread: usize,
    /// Bytes of files one account keeps at most, this one included; `None` for no limit.
    pub user_bytes: Option<i64>,
}

/// Refuses a file of `size` bytes for a thread holding `count` files and an account holding `used` bytes.
pub(crate) fn check_attachment_limits(limits: AttachmentLimits, count: i64, used: i64, size: i64) -> super::Result<()> {
    if usize::try_from(count).unwrap_or(usize::MAX) >= limits.per_thread {
        return Err(StoreError::Conflict(format!("a conversation holds at most {} files", limits.per_thread)));
    }
    if limits.user_bytes.is_some_and(|max| used.saturating_add(size) > max) {
        return Err(StoreError::QuotaExceeded);
    }
    Ok(())
}

/// One chunk found by [`super::Store::search_chunks`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    pub attachment_id: Uuid,
    pub filename: String,
    pub seq: i64,
    pub content: String,
    /// How well it matched: higher is better, on the backend's own scale (SQLite's bm25 negated, PostgreSQL's
    /// `ts_rank`).
    pub score: f64,
}

/// Most words of a chunk query that are searched.
const MAX_QUERY_WORDS: usize = 16;

/// The distinct lower-case words of a chunk query. Chunks match on ANY of them and are ranked by relevance,
/// because a model's query ("refund policy days") rarely has every word in one passage.
pub fn chunk_query_words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in super::search_query::words(query) {
        if !out.contains(&word) {
            out.push(word);
        }
        if out.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    out
}

/// Documents (artifacts) and their versions, and which requests they fulfilled.
#[async_trait]
pub trait Documents: Send + Sync {
    /// `NotFound` when the thread, or a message it points at, is missing or another user's.
    async fn create_artifact(&self, user: Uuid, artifact: NewArtifact) -> Result<Artifact>;
    /// The thread's documents, oldest first; `NotFound` when the thread is missing or another user's.
    async fn list_artifacts(&self, user: Uuid, thread: Uuid) -> Result<Vec<Artifact>>;
    async fn get_artifact(&self, user: Uuid, artifact: Uuid) -> Result<Artifact>;
    async fn delete_artifact(&self, user: Uuid, artifact: Uuid) -> Result<()>;
    /// Links the artifacts of a turn to the answer saved for it. Other users' artifacts are left alone;
    /// `NotFound` when the answer is missing or another user's.
    async fn link_artifacts(&self, user: Uuid, artifacts: &[Uuid], assistant_message: Uuid) -> Result<()>;
    /// Saves the next version of a document and makes it the current one, in one transaction; returns the
    /// document at its new version. `NotFound` when it is missing or another user's.
    async fn revise_artifact(&self, user: Uuid, artifact: Uuid, revision: ArtifactRevision) -> Result<Artifact>;
    /// Every version of a document, oldest first; `NotFound` when it is missing or another user's.
    async fn list_artifact_versions(&self, user: Uuid, artifact: Uuid) -> Result<Vec<ArtifactVersion>>;
    /// The thread's requests that produced a document or a later version of one, or that one answers besides
    /// (what the model no longer sees), in no particular order; empty for a thread that is missing or another
    /// user's.
    async fn fulfilled_requests(&self, user: Uuid, thread: Uuid) -> Result<Vec<Uuid>>;
    async fn get_artifact_version(&self, user: Uuid, artifact: Uuid, version: i64) -> Result<ArtifactVersion>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_distinct_and_plain() {
        assert_eq!(chunk_query_words("Refund \"policy\" OR refund* (days)"), vec!["refund", "policy", "or", "days"]);
        assert!(chunk_query_words("*** :: ()").is_empty());
    }
}
