//! Files attached to a conversation, and their chunks, on PostgreSQL.

use app::api::Attachment;
use async_trait::async_trait;
use tracing::instrument;
use uuid::Uuid;

use super::{Postgres, Shared};
use crate::store::attachments::{chunk_query_words, ChunkHitRow};
use crate::store::columns::convert;
use crate::store::threads::{found, listing};
use crate::store::{now, AttachmentLimits, Attachments, ChunkHit, NewAttachment, Result};

#[async_trait]
impl Attachments for Postgres {
    #[instrument(skip(self, attachment), fields(thread = %attachment.thread_id, chunks = attachment.chunks.len()))]
    async fn create_attachment(
        &self,
        user: Uuid,
        attachment: NewAttachment,
        limits: AttachmentLimits,
    ) -> Result<Attachment> {
        let id = Uuid::now_v7();
        let created = now();
        let mut tx = self.pool.begin().await?;
        Shared::insert_attachment(&mut tx, id, user, &attachment, limits, created).await?;
        if !attachment.chunks.is_empty() {
            let seqs: Vec<i64> = (0..attachment.chunks.len() as i64).collect();
            sqlx::query(
                "insert into attachment_chunks (attachment_id, thread_id, seq, content)
                 select $1, $2, s, c from unnest($3::bigint[], $4::text[]) as t (s, c)",
            )
            .bind(id)
            .bind(attachment.thread_id)
            .bind(&seqs)
            .bind(&attachment.chunks)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(attachment.saved(id, created))
    }

    #[instrument(skip(self))]
    async fn list_attachments(&self, user: Uuid, thread: Uuid) -> Result<Vec<Attachment>> {
        let rows = Shared::attachments(&mut *self.pool.acquire().await?, user, thread).await?;
        convert(listing(rows, self.owns("threads", user, thread)).await?)
    }

    #[instrument(skip(self))]
    async fn delete_attachment(&self, user: Uuid, thread: Uuid, attachment: Uuid) -> Result<()> {
        let sql = "delete from attachments where id = $1 and thread_id = $2 and user_id = $3";
        self.delete(sql, &[attachment, thread, user]).await
    }

    #[instrument(skip(self, query))]
    async fn search_chunks(&self, user: Uuid, thread: Uuid, query: &str, limit: u32) -> Result<Vec<ChunkHit>> {
        found(self.owns("threads", user, thread).await?)?;
        let words = chunk_query_words(query);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let any: Vec<String> = words.iter().map(|w| format!("'{}'", w.replace('\'', "''").replace('\\', ""))).collect();
        let rows: Vec<ChunkHitRow<Uuid>> = sqlx::query_as(
            "with q as (select to_tsquery('simple', $1) as q)
             select c.attachment_id, a.filename, c.seq, c.content, ts_rank(c.search, q.q)::float8 as score
             from attachment_chunks c join attachments a on a.id = c.attachment_id, q
             where c.thread_id = $2 and a.user_id = $3 and c.search @@ q.q
             order by score desc, c.attachment_id, c.seq limit $4",
        )
        .bind(any.join(" | "))
        .bind(thread)
        .bind(user)
        .bind(limit.clamp(1, 20) as i64)
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }
}
