//! Files attached to a conversation, and their chunks, on SQLite.

use app::api::Attachment;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{Shared, Sqlite};
use crate::store::attachments::{chunk_query_words, ChunkHitRow};
use crate::store::columns::convert;
use crate::store::threads::{found, listing};
use crate::store::{now, AttachmentLimits, Attachments, ChunkHit, NewAttachment, Result, StoreError};

#[async_trait]
impl Attachments for Sqlite {
    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        self.write(move |tx| {
            Box::pin(async move {
                Shared::insert_attachment(tx, id, user, &attachment, limits, created).await?;
                // Every chunk in one statement (one hand-off to the connection's thread instead of one per chunk,
                // which held the writer for a second on a large file).
                let chunks =
                    serde_json::to_string(&attachment.chunks).map_err(|e| StoreError::Corrupt(e.to_string()))?;
                sqlx::query(
                    "insert into attachment_chunks (attachment_id, thread_id, seq, content)
                     select ?, ?, key, value from json_each(?)",
                )
                .bind(id.to_string())
                .bind(attachment.thread_id.to_string())
                .bind(chunks)
                .execute(&mut *tx)
                .await?;
                Ok(attachment.saved(id, created))
            })
        })
        .await
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = Shared::attachments(&mut *self.reader.acquire().await?, user, thread).await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        // The chunks (and their index rows, through the trigger) go with it by the foreign key's cascade.
        let sql = "delete from attachments where id = ? and thread_id = ? and user_id = ?";
        self.delete(sql, &[attachment, thread, user]).await
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        found(self.owns("threads", user, thread).await?)?;
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
        // The thread token is part of the MATCH (see the schema), so only this thread's chunks are read.
        let expression = format!("owner : \"t{}\" AND body : ({})", thread.simple(), any.join(" OR "));
        let rows: Vec<ChunkHitRow<String>> = sqlx::query_as(
            "select c.attachment_id, a.filename, c.seq, c.content, -bm25(chunks_fts, 0.0, 1.0) as score
             from chunks_fts join attachment_chunks c on c.id = chunks_fts.rowid
             join attachments a on a.id = c.attachment_id
             where chunks_fts match ? and a.user_id = ?
             order by score desc, c.attachment_id, c.seq limit ?",
        )
        .bind(&expression)
        .bind(user.to_string())
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.reader)
        .await?;
        convert(rows)
    }
}
