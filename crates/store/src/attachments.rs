//! Files attached to a conversation and their indexed chunks. The storage interface both backends implement,
//! and what both make of the rows they read.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;
use wire::Attachment;

use super::columns::{shared_sql, stored_row};
use super::threads::found;
use super::{Result, StoreError};

shared_sql! {
    rows(AttachmentRow<D::Id, D::Time>);
    /// Saves a file's row under `id` once the conversation is found to be the person's and the file fits
    /// `limits`; its chunks are the caller's. The rows read are locked where rows can be, so uploads at once
    /// are counted one after the other.
    pub(crate) async fn insert_attachment(
        conn: &mut D::Connection,
        id: Uuid,
        user: Uuid,
        attachment: &NewAttachment,
        limits: AttachmentLimits,
        created: DateTime<Utc>,
    ) -> Result<()> {
        let owned = format!("select 1 from threads where id = $1 and user_id = $2 {}", D::FOR_UPDATE);
        let owned: Option<i32> = sqlx::query_scalar(&owned)
            .bind(D::id(attachment.thread_id))
            .bind(D::id(user))
            .fetch_optional(&mut *conn)
            .await?;
        found(owned.is_some())?;
        // The account's row lock makes the allowance check and the insert one step for uploads to several of
        // its conversations at once.
        let lock = format!("select 1 from users where id = $1 {}", D::FOR_UPDATE);
        sqlx::query(&lock).bind(D::id(user)).execute(&mut *conn).await?;
        let (count, used): (i64, i64) = sqlx::query_as(
            "select (select count(*) from attachments where thread_id = $1),
                    (select cast(coalesce(sum(size), 0) as bigint) from attachments where user_id = $2)",
        )
        .bind(D::id(attachment.thread_id))
        .bind(D::id(user))
        .fetch_one(&mut *conn)
        .await?;
        check_attachment_limits(limits, count, used, attachment.size)?;
        sqlx::query(INSERT_ATTACHMENT)
            .bind(D::id(id))
            .bind(D::id(attachment.thread_id))
            .bind(D::id(user))
            .bind(attachment.filename.clone())
            .bind(attachment.content_type.clone())
            .bind(attachment.size)
            .bind(D::time(created))
            .execute(conn)
            .await?;
        Ok(())
    }

    /// The rows of the person's attachments of `thread`, oldest first.
    pub(crate) async fn attachments(
        conn: &mut D::Connection,
        user: Uuid,
        thread: Uuid,
    ) -> Result<Vec<AttachmentRow<D::Id, D::Time>>> {
        let sql = format!("{ATTACHMENTS} where a.thread_id = $1 and a.user_id = $2 order by a.created_at, a.id");
        Ok(sqlx::query_as(&sql).bind(D::id(thread)).bind(D::id(user)).fetch_all(conn).await?)
    }
}

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
    /// The chunks that match any word of the query, best first, of the thread's files and, in a project its
    /// author belongs to, of the files of every conversation of the project.
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>>;
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

impl NewAttachment {
    /// The file as saved under `id` at `created`.
    pub(crate) fn saved(self, id: Uuid, created: DateTime<Utc>) -> Attachment {
        Attachment {
            id,
            thread_id: self.thread_id,
            filename: self.filename,
            content_type: self.content_type,
            size: self.size,
            chunks: self.chunks.len() as i64,
            created_at: created,
        }
    }
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
pub(crate) fn check_attachment_limits(limits: AttachmentLimits, count: i64, used: i64, size: i64) -> Result<()> {
    if usize::try_from(count).unwrap_or(usize::MAX) >= limits.per_thread {
        return Err(StoreError::Conflict(format!("a conversation holds at most {} files", limits.per_thread)));
    }
    if limits.user_bytes.is_some_and(|max| used.saturating_add(size) > max) {
        return Err(StoreError::QuotaExceeded);
    }
    Ok(())
}

/// Saves a file's metadata: id, thread, owner, name, type, size and time.
pub(crate) const INSERT_ATTACHMENT: &str = "insert into attachments
    (id, thread_id, user_id, filename, content_type, size, created_at) values ($1, $2, $3, $4, $5, $6, $7)";

/// A thread's attachments (`a`) as [`AttachmentRow`]s.
pub(crate) const ATTACHMENTS: &str = "select a.id, a.thread_id, a.filename, a.content_type, a.size, a.created_at,
    (select count(*) from attachment_chunks c where c.attachment_id = a.id) as chunks from attachments a";

stored_row! {
    /// An attachment's row, with its number of chunks: ids and times as the backend keeps them (see [`Stored`]).
    AttachmentRow<I, T> -> Attachment {
        id: I,
        thread_id: I,
        filename: String,
        content_type: String,
        size: i64,
        chunks: i64,
        created_at: T,
    }
}

/// One chunk found by [`Attachments::search_chunks`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    pub attachment_id: Uuid,
    pub filename: String,
    /// The conversation the file is attached to (another one of its project's, for a project's file) and its
    /// title.
    pub thread_id: Uuid,
    pub thread_title: String,
    pub seq: i64,
    pub content: String,
    /// How well it matched: higher is better, on the backend's own scale (SQLite's bm25 negated, PostgreSQL's
    /// `ts_rank`).
    pub score: f64,
}

stored_row! {
    /// A [`ChunkHit`]'s row.
    ChunkHitRow<I> -> ChunkHit {
        attachment_id: I,
        filename: String,
        thread_id: I,
        thread_title: String,
        seq: i64,
        content: String,
        score: f64,
    }
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

/// Implements [`Attachments`] for a backend, written once for both, as
/// [`accounts_for`](super::accounts::accounts_for) does; the module it is used in has the backend's
/// `insert_chunks` (a new file's chunks), and the backend `chunk_hits` (the search of a thread's chunks for
/// words), `owns` and `delete`.
macro_rules! attachments_for {
    ($backend:ty) => {
        const _: () = {
            use tracing::instrument;
            use uuid::Uuid;
            use wire::Attachment;
            use $crate::attachments::chunk_query_words;
            use $crate::columns::convert;
            use $crate::threads::{found, listing};
            use $crate::{now, AttachmentLimits, Attachments, ChunkHit, NewAttachment, Result};

            #[async_trait::async_trait]
            impl Attachments for $backend {
                #[instrument(skip(self, file), fields(thread = %file.thread_id, chunks = file.chunks.len()))]
                async fn create_attachment(
                    &self,
                    user: Uuid,
                    file: NewAttachment,
                    limits: AttachmentLimits,
                ) -> Result<Attachment> {
                    let id = Uuid::now_v7();
                    let created = now();
                    self.write_together(move |tx| {
                        Box::pin(async move {
                            Shared::insert_attachment(&mut *tx, id, user, &file, limits, created).await?;
                            insert_chunks(tx, id, &file).await?;
                            Ok(file.saved(id, created))
                        })
                    })
                    .await
                }

                #[instrument(skip(self))]
                async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
                    let rows = Shared::attachments(&mut *self.read().await?, user, thread).await?;
                    convert(listing(rows, self.owns("threads", user, thread)).await?)
                }

                #[instrument(skip(self))]
                async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
                    // The chunks (and, on SQLite, their index rows, through the trigger) go with it by the foreign
                    // key's cascade.
                    let sql = "delete from attachments where id = $1 and thread_id = $2 and user_id = $3";
                    self.delete(sql, &[attachment, thread, user]).await
                }

                #[instrument(skip(self, query))]
                async fn search_chunks(
                    &self,
                    user: Uuid,
                    thread: Uuid,
                    query: &str,
                    limit: u32,
                ) -> Result<Vec<ChunkHit>> {
                    found(self.owns("threads", user, thread).await?)?;
                    let words = chunk_query_words(query);
                    if words.is_empty() {
                        return Ok(Vec::new());
                    }
                    self.chunk_hits(user, thread, &words, limit.clamp(1, 20) as i64).await
                }
            }
        };
    };
}
pub(crate) use attachments_for;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_words_are_distinct_and_plain() {
        assert_eq!(chunk_query_words("Refund \"policy\" OR refund* (days)"), vec!["refund", "policy", "or", "days"]);
        assert!(chunk_query_words("*** :: ()").is_empty());
    }
}
